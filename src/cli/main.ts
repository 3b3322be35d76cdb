#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=4
// The `seedline` entry point. Its shebang line carries what node and glibc read only at process
// start (src/cli/process-start.ts). It sets what must be set before libduckdb loads, so it imports the
// commands only after that (their actions import DuckDB).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { returnFreedDuckDbMemory } from './duckdb-allocator.js';
import { limitHeapGrowth } from './heap-growth.js';

function isEntryPoint(): boolean {
  const invoked = process.argv[1];
  if (!invoked) return false;
  try {
    return realpathSync(invoked) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  returnFreedDuckDbMemory();
  limitHeapGrowth();
  const { buildProgram } = await import('./program.js');
  await buildProgram().parseAsync(process.argv);
}
