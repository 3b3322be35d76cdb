/**
 * Runs every benchmark in turn with its default size. Each prints its own table. `npm run bench`
 * runs them compiled (dist/bench/, as the installed `seedline` bin runs): under tsx, its loader
 * thread adds ~35 MB to every peak RSS. `npx tsx bench/run-all.ts` runs them from the sources.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.endsWith('.js');
for (const name of ['sandbox', 'load', 'sync', 'rounds', 'report', 'plan-accuracy']) {
  process.stdout.write(`\n=== bench/${name}.ts ===\n`);
  const file = fileURLToPath(new URL(`${name}.${compiled ? 'js' : 'ts'}`, import.meta.url));
  const result = spawnSync(process.execPath, compiled ? [file] : ['--import', 'tsx', file], { stdio: 'inherit' });
  if (result.status !== 0) process.exitCode = 1;
}
