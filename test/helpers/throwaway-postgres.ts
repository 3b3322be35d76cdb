import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chownSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/**
 * A Postgres server of a test's own (initdb into a temp folder, a free port on 127.0.0.1, trust
 * auth), which the test may stop the hard way and start again: never the shared server on 5432.
 * Needs Debian's server binaries and, as root, the `postgres` user to run them.
 */
export class ThrowawayPostgres {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
  ) {}

  /** Why one cannot be made here (no server binaries, not root or postgres), or undefined when it can. */
  static unavailable(): string | undefined {
    if (!ThrowawayPostgres.binDir()) return 'no Postgres server binaries under /usr/lib/postgresql';
    const user = userInfo().username;
    if (user !== 'root' && user !== 'postgres') return `runs as ${user}: initdb needs to run as postgres`;
    return undefined;
  }

  /** Initialises and starts a server on a free port. */
  static async start(): Promise<ThrowawayPostgres> {
    const bin = ThrowawayPostgres.binDir()!;
    // Under /tmp itself: the test run's own temp root is private to this user, and the server runs as postgres.
    const dir = mkdtempSync(join('/tmp', 'seedline-pg-'));
    if (userInfo().username === 'root') chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString()), -1);
    const server = new ThrowawayPostgres(bin, dir, await freePort());
    server.asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync']);
    server.startServer();
    return server;
  }

  /** A URL of its `postgres` database. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Stops it as a crash would (`pg_ctl stop -m immediate`: no checkpoint, recovery on the next start). */
  crash(): void {
    this.asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  }

  /** Starts it again (after a crash it recovers first) and waits until it takes connections. */
  startServer(): void {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    this.asPostgres('pg_ctl', [
      '-D',
      join(this.dir, 'data'),
      '-o',
      options,
      '-l',
      join(this.dir, 'log'),
      '-w',
      'start',
    ]);
  }

  /** Stops it and removes its folder. */
  remove(): void {
    if (existsSync(join(this.dir, 'data', 'postmaster.pid'))) this.crash();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private asPostgres(tool: string, args: string[]): void {
    const command = join(this.bin, tool);
    const run =
      userInfo().username === 'root'
        ? spawnSync('runuser', ['-u', 'postgres', '--', command, ...args], { encoding: 'utf8' })
        : spawnSync(command, args, { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed: ${run.stderr || run.stdout}`);
  }

  private static binDir(): string | undefined {
    const root = '/usr/lib/postgresql';
    if (!existsSync(root)) return undefined;
    const version = readdirSync(root).sort().at(-1);
    const bin = version === undefined ? undefined : join(root, version, 'bin');
    return bin && existsSync(join(bin, 'initdb')) ? bin : undefined;
  }
}
