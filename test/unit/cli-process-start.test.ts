import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SEEDLINE_NODE_FLAGS, SEEDLINE_START_ENV, seedlineShebang } from '../../src/cli/process-start.js';

const run = promisify(execFile);

describe('the seedline command starts node with its start settings', () => {
  it('main.ts begins with the shebang the settings make', async () => {
    const main = await readFile(new URL('../../src/cli/main.ts', import.meta.url), 'utf8');
    expect(main.split('\n')[0]).toBe(seedlineShebang());
    expect(seedlineShebang()).toBe(
      '#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=4',
    );
  });

  it('env -S hands node the variables and flags in one process (the pid env was started as is node)', async () => {
    // What the kernel does with the shebang: the interpreter gets the line's rest as one argument.
    const line = seedlineShebang().slice('#!/usr/bin/env '.length);
    const script = join(await mkdtemp(join(tmpdir(), 'seedline-start-')), 'show.mjs');
    await writeFile(
      script,
      'console.log(JSON.stringify({ pid: process.pid, arenas: process.env.MALLOC_ARENA_MAX, mmap: process.env.MALLOC_MMAP_THRESHOLD_, flags: process.execArgv }))',
    );
    const child = execFile('/usr/bin/env', [line, script]);
    const out = await new Promise<string>((resolve, reject) => {
      let text = '';
      child.stdout!.on('data', (chunk: Buffer) => void (text += chunk.toString()));
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`exited ${code}`))));
    });
    const seen = JSON.parse(out) as { pid: number; arenas: string; mmap: string; flags: string[] };
    expect(seen.pid).toBe(child.pid);
    expect(seen.arenas).toBe(SEEDLINE_START_ENV.MALLOC_ARENA_MAX);
    expect(seen.mmap).toBe(SEEDLINE_START_ENV.MALLOC_MMAP_THRESHOLD_);
    expect(seen.flags).toEqual([...SEEDLINE_NODE_FLAGS]);
  });

  it('node accepts the flags', async () => {
    const { stdout } = await run(process.execPath, [...SEEDLINE_NODE_FLAGS, '-e', 'console.log("ok")']);
    expect(stdout.trim()).toBe('ok');
  });
});
