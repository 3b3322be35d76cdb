import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { DUCKDB_ALLOCATOR_ENV, returnFreedDuckDbMemory } from '../src/cli/duckdb-allocator.js';
import { SEEDLINE_NODE_FLAGS, SEEDLINE_START_ENV } from '../src/cli/process-start.js';

/** What a `seedline` command's process starts with: its shebang's variables and node flags. */
export interface CliStart {
  env: Record<string, string>;
  nodeArgs: string[];
}

/**
 * The start settings the shebang of a built entry point (`…/dist/src/cli/main.js`) gives its
 * process (`#!/usr/bin/env -S NAME=value … node --flag …`; none for `#!/usr/bin/env node`), so a
 * bench that starts `node <main.js>` measures what the `seedline` command of that build gets,
 * another commit's build included.
 */
export function cliStartOf(mainJs: string): CliStart {
  const line = readFileSync(mainJs, 'utf8').split('\n', 1)[0] ?? '';
  const words = line
    .replace(/^#!\S+\s*(-S\s+)?/, '')
    .split(/\s+/)
    .filter(Boolean);
  const node = words.indexOf('node');
  const env = Object.fromEntries(
    words.slice(0, Math.max(node, 0)).map((word) => word.split('=', 2) as [string, string]),
  );
  return { env, nodeArgs: node >= 0 ? words.slice(node + 1) : [] };
}

/**
 * For a bench that measures in its own process: runs it again, the same arguments, in a child
 * process with the allocator options the `seedline` entry point gives libduckdb
 * (src/cli/duckdb-allocator.ts), unless they are set already, and the start settings of its
 * shebang (src/cli/process-start.ts). libduckdb reads them when it
 * loads, which is before any of the bench's code runs. Resolves true when the child ran (its exit
 * code is this process's), so the caller stops; false when this process is that child.
 */
export async function rerunWithEntryPointEnv(): Promise<boolean> {
  if (process.env[DUCKDB_ALLOCATOR_ENV] !== undefined) return false;
  const child = spawn(process.execPath, [...SEEDLINE_NODE_FLAGS, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: returnFreedDuckDbMemory({ ...process.env, ...SEEDLINE_START_ENV }),
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  process.exitCode = code ?? 1;
  return true;
}
