import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DuckDbDestination } from '../../src/destinations/duckdb/duckdb-destination.js';
import { duckDbFileLock } from '../../src/destinations/duckdb/duckdb-file-lock.js';
import { seedRow } from '../helpers/destinations.js';

const DESTINATION_MODULE = resolve(import.meta.dirname, '../../src/destinations/duckdb/duckdb-destination.ts');

/** Runs `script` (ESM, through tsx) in another process; resolves once it printed `ready`, i.e. holds the file. */
function startHolder(script: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: process.cwd(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  return new Promise((done, fail) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready\n')) done(child);
    });
    child.on('exit', (code, signal) =>
      fail(new Error(`the holder process exited (${code ?? signal}) before holding the file`)),
    );
  });
}

/** The pid of a process that has exited: what a SIGKILLed writer leaves in its sidecar. */
async function pidOfAnExitedProcess(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((done) => child.once('exit', done));
  return child.pid!;
}

/** When process `pid` started (`/proc/<pid>/stat`, field 22), as a writer's sidecar says it. */
function startOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

/** What `lock` threw (null when it locked). */
async function lockError(dest: DuckDbDestination, holder: string): Promise<(Error & { code?: string }) | null> {
  return dest.lock({ holder }).then(
    () => null,
    (error: unknown) => error as Error & { code?: string },
  );
}

describe('DuckDB file lock: who holds it, and a file reopened between units', () => {
  let dir: string;
  let path: string;
  let holder: ChildProcess | null = null;
  let dest: DuckDbDestination | null = null;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'seedline-lock-'));
    path = join(dir, 'warehouse.duckdb');
  });

  afterEach(async () => {
    await dest?.close();
    dest = null;
    if (holder && holder.exitCode === null && holder.signalCode === null) {
      const exited = new Promise((done) => holder!.once('exit', done));
      holder.kill('SIGKILL');
      await exited;
    }
    holder = null;
    rmSync(dir, { recursive: true, force: true });
  });

  it('given a sidecar left by a writer that died and another process holding the file, when a writer locks, then the error names the process that holds the file', async () => {
    // A sync that was SIGKILLed left its sidecar behind (close() never ran).
    const deadPid = await pidOfAnExitedProcess();
    writeFileSync(
      `${path}.lock`,
      `${JSON.stringify({ holder: 'seedline sync (run r_dead)', pid: deadPid, host: hostname(), since: '2020-01-01T00:00:00.000Z' })}\n`,
    );
    // Another process (a notebook, a `seedline query`, …) has the file open without claiming the writer slot.
    holder = await startHolder(`import { DuckDBInstance } from '@duckdb/node-api';
const instance = await DuckDBInstance.create(${JSON.stringify(path)});
await (await instance.connect()).run('create table if not exists t (x integer)');
process.stdout.write('ready\\n');
setInterval(() => {}, 1000);`);

    dest = new DuckDbDestination({ path });
    const error = await lockError(dest, 'seedline sync (run r_new)');

    expect(error?.code).toBe('SEEDLINE_DESTINATION_LOCKED');
    expect(error?.message).not.toContain('r_dead');
    expect(error?.message).toContain(`process ${holder.pid}`);
  });

  it('given a writer of another process holding the file, when a writer locks, then the error names that writer as it described itself', async () => {
    holder = await startHolder(`import { DuckDbDestination } from ${JSON.stringify(DESTINATION_MODULE)};
await new DuckDbDestination({ path: ${JSON.stringify(path)} }).lock({ holder: 'seedline sync (run r_live)' });
process.stdout.write('ready\\n');
setInterval(() => {}, 1000);`);

    dest = new DuckDbDestination({ path });
    const error = await lockError(dest, 'seedline sync (run r_new)');

    expect(error?.code).toBe('SEEDLINE_DESTINATION_LOCKED');
    expect(error?.message).toContain(`seedline sync (run r_live) (pid ${holder.pid} on ${hostname()}`);
  });

  it('given a writer that reopens its file every 500 rows, when 20 units of 300 ledger rows commit, then every row is there, the file was reopened, and another process is still refused', async () => {
    dest = new DuckDbDestination({ path, rowsBetweenReopens: 500 });
    await dest.lock({ holder: 'seedline sync (run r_reopen)' });
    await dest.ensureSystemTables();
    for (let u = 0; u < 20; u++) {
      const unit = await dest.beginUnit(`run_${u}`);
      await unit.saveSeeds(Array.from({ length: 300 }, (_, n) => seedRow(u * 300 + n)));
      await unit.commit();
    }

    const shared = await duckDbFileLock.open(path);
    const reopened = shared.connections.reopened;
    duckDbFileLock.release(shared);
    expect(reopened).toBeGreaterThanOrEqual(5);
    const [counted] = await dest.query<{ rows: unknown; keys: unknown }>(
      'select count(*) as rows, count(distinct seed_key) as keys from seedline._seedline_seeds',
    );
    expect([Number(counted!.rows), Number(counted!.keys)]).toEqual([6000, 6000]);
    holder = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { DuckDbDestination } from ${JSON.stringify(DESTINATION_MODULE)};
const dest = new DuckDbDestination({ path: ${JSON.stringify(path)} });
await dest.lock({ holder: 'seedline sync (run r_other)' }).then(() => console.log('locked'), (e) => console.log(e.code, e.message));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let answer = '';
    holder.stdout!.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    await new Promise((done) => holder!.once('exit', done));
    expect(answer).toContain('SEEDLINE_DESTINATION_LOCKED');
    expect(answer).toContain('seedline sync (run r_reopen)');
  });

  it('given the sidecar of a live writer of this host, whose DuckDB lock is free while it reopens the file, when another writer locks, then it is refused and names that writer; with the start of another process, it locks', async () => {
    holder = await startHolder(`process.stdout.write('ready\\n');
setInterval(() => {}, 1000);`);
    const sidecar = {
      holder: 'seedline sync (run r_reopening)',
      pid: holder.pid,
      host: hostname(),
      since: '2026-11-28T20:00:00.000Z',
    };
    writeFileSync(`${path}.lock`, `${JSON.stringify({ ...sidecar, started: startOf(holder.pid!) })}\n`);

    dest = new DuckDbDestination({ path });
    const error = await lockError(dest, 'seedline sync (run r_new)');
    expect(error?.code).toBe('SEEDLINE_DESTINATION_LOCKED');
    expect(error?.message).toContain(`seedline sync (run r_reopening) (pid ${holder.pid} on ${hostname()}`);

    // The pid now belongs to a process that started at another time: the sidecar is stale.
    writeFileSync(`${path}.lock`, `${JSON.stringify({ ...sidecar, started: '1' })}\n`);
    expect(await lockError(dest, 'seedline sync (run r_new)')).toBeNull();
  });
});
