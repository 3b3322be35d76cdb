import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { DUCKDB_ALLOCATOR_ENV, returnFreedDuckDbMemory } from '../src/cli/duckdb-allocator.js';

/**
 * For a bench that measures in its own process: runs it again, the same arguments, in a child
 * process with the allocator options the `seedline` entry point gives libduckdb
 * (src/cli/duckdb-allocator.ts), unless they are set already. libduckdb reads them when it
 * loads, which is before any of the bench's code runs. Resolves true when the child ran (its exit
 * code is this process's), so the caller stops; false when this process is that child.
 */
export async function rerunWithEntryPointEnv(): Promise<boolean> {
  if (process.env[DUCKDB_ALLOCATOR_ENV] !== undefined) return false;
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: returnFreedDuckDbMemory({ ...process.env }),
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  process.exitCode = code ?? 1;
  return true;
}
