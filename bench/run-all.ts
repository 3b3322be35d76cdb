/** Runs every benchmark in turn with its default size (`npm run bench`). Each prints its own table. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

for (const bench of ['sandbox.ts', 'load.ts', 'sync.ts']) {
  process.stdout.write(`\n=== bench/${bench} ===\n`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(bench, import.meta.url))], { stdio: 'inherit' });
  if (result.status !== 0) process.exitCode = 1;
}
