/**
 * Where a results page's CPU goes before the destination, in µs a record: the text of a page of
 * 500 profile entries parsed (JSON.parse), its envelope validated as the client does, the records
 * validated and shaped by the stream's `TableShaper`, and the rows shaped for a DuckDB write
 * (`shapeForWrite`): what `decodeResultsPage` does with a page, phase by phase. No database write.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/page-decode.js [--rounds=8] [--pages=20] [--repeat=4] [--vs=DIR]
 *
 * CPU time (`process.cpuUsage`: user + system of the whole process, its GC threads included), not
 * wall time. The pages are generated before the clock and cycled through; a round times every phase
 * over all of them, after one round of warm-up. Each run is a child process of its own; with
 * `--vs=DIR` (another checkout, built with `npx tsc -p tsconfig.bench.json`) runs of this build and
 * of that one alternate, `--repeat` of each, the code under test imported from each build's
 * `dist/`. Prints min and median over all rounds of each build.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { formatTable } from '../src/cli/format-table.js';
import { profileRecord } from './profile-records.js';
import { median } from './stats.js';

const PAGE = 500;
const PHASES = ['parse', 'envelope', 'shape', 'write shaping'] as const;
type Phase = (typeof PHASES)[number];
type Rounds = Record<Phase | 'total', number[]>;

const arg = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROUNDS = Number(arg('rounds') ?? 8);
const PAGES = Number(arg('pages') ?? 20);
const REPEAT = Number(arg('repeat') ?? 4);
/** The checkout this script was built in (dist/bench/page-decode.js → the root). */
const OWN_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The `page`-th results page of a profiles job as the service sends it, and its items' partition values. */
function resultsPage(page: number): { text: string; items: [string, Record<string, unknown>][] } {
  const entries = [];
  const items: [string, Record<string, unknown>][] = [];
  for (let i = page * PAGE; i < (page + 1) * PAGE; i++) {
    const data = profileRecord(i) as { url: string };
    items.push([`p${i}`, { url: data.url, seed: data.url, key: `p${i}` }]);
    entries.push({
      ref: `p${i}`,
      index: i - page * PAGE,
      operation: 'profiles.enrich',
      status: 'succeeded',
      credits_used: 1,
      data,
    });
  }
  return { text: JSON.stringify({ data: entries, meta: { nextCursor: null } }), items };
}

/** The code under test, imported from the `dist/` of the checkout at `root`. */
async function codeOf(root: string) {
  const load = <T>(path: string) => import(pathToFileURL(join(root, 'dist', path)).href) as Promise<T>;
  return {
    ...(await load<typeof import('../schemas/batch.js')>('schemas/batch.js')),
    ...(await load<typeof import('../schemas/common.js')>('schemas/common.js')),
    ...(await load<typeof import('../src/normalize/record-shaper.js')>('src/normalize/record-shaper.js')),
    ...(await load<typeof import('../src/destinations/duckdb/duckdb-destination.js')>(
      'src/destinations/duckdb/duckdb-destination.js',
    )),
    ...(await load<typeof import('../src/engine/batch/results-page-shaping.js')>(
      'src/engine/batch/results-page-shaping.js',
    )),
    ...(await load<typeof import('../src/normalize/table-shaper.js')>('src/normalize/table-shaper.js')),
    ...(await load<typeof import('../src/manifest/load-manifests.js')>('src/manifest/load-manifests.js')),
  };
}

/** One run (a child process): every phase's CPU µs a record in each round, the code imported from `root`. */
async function measure(root: string): Promise<Rounds> {
  const code = await codeOf(root);
  const dir = mkdtempSync(join(tmpdir(), 'seedline-page-decode-'));
  const dest = new code.DuckDbDestination({ path: join(dir, 'shapes.duckdb') });
  try {
    await dest.ensureSystemTables();
    const shaper = code.TableShaper.of(code.manifestsSync().get('profiles')!.table, {
      options: { write_mode: 'merge' },
      run: { id: 'bench', started_at: new Date().toISOString() },
    });
    await dest.ensureTable(shaper.definitionFor({}));
    const shaping = dest.writeShaping('profiles')!;
    const pages = Array.from({ length: PAGES }, (_, p) => resultsPage(p));
    const pageSchema = code.envelope(code.BatchResultsPage);
    const rounds: Rounds = { parse: [], envelope: [], shape: [], 'write shaping': [], total: [] };
    for (let round = 0; round <= ROUNDS; round++) {
      const spent = { parse: 0, envelope: 0, shape: 0, 'write shaping': 0 };
      for (const page of pages) {
        let at = process.cpuUsage();
        const lap = (phase: Phase) => {
          const now = process.cpuUsage();
          spent[phase] += now.user - at.user + now.system - at.system;
          at = now;
        };
        const json: unknown = JSON.parse(page.text);
        lap('parse');
        const entries = pageSchema.parse(json).data;
        lap('envelope');
        const { tables } = code.shapeEntries(entries, code.valuesLookup(page.items), shaper);
        lap('shape');
        code.shapeForWrite(shaping, tables.get('profiles')!.group.rows, 'bench');
        lap('write shaping');
      }
      // Round 0 warms the code up.
      if (round === 0) continue;
      const records = PAGES * PAGE;
      for (const phase of PHASES) rounds[phase].push(spent[phase] / records);
      rounds.total.push(PHASES.reduce((sum, phase) => sum + spent[phase], 0) / records);
    }
    return rounds;
  } finally {
    await dest.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const child = arg('child');
if (child !== undefined) {
  process.stdout.write(JSON.stringify(await measure(child)));
} else {
  const vs = arg('vs');
  const builds = vs === undefined ? [OWN_ROOT] : [OWN_ROOT, resolve(vs)];
  const all = builds.map((): Rounds => ({ parse: [], envelope: [], shape: [], 'write shaping': [], total: [] }));
  const load = loadavg()[0]!.toFixed(2);
  for (let r = 0; r < REPEAT; r++)
    builds.forEach((root, b) => {
      const args = [fileURLToPath(import.meta.url), `--child=${root}`, `--rounds=${ROUNDS}`, `--pages=${PAGES}`];
      const rounds = JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8' })) as Rounds;
      for (const key of Object.keys(rounds) as (keyof Rounds)[]) all[b]![key].push(...rounds[key]);
    });
  const rows = (['total', ...PHASES] as const).map((phase) => {
    const row: Record<string, string> = { phase };
    builds.forEach((_, b) => {
      const label = b === 0 ? '' : ' (vs)';
      row[`min${label}`] = Math.min(...all[b]![phase]).toFixed(1);
      row[`median${label}`] = median(all[b]![phase]).toFixed(1);
    });
    if (builds.length === 2) row['ratio of medians'] = (median(all[0]![phase]) / median(all[1]![phase])).toFixed(2);
    return row;
  });
  console.log(
    `bench/page-decode.ts: ${REPEAT} runs${vs === undefined ? '' : ' a build, alternated'} of ${ROUNDS} rounds of ` +
      `${PAGES} pages of ${PAGE} profiles; CPU µs a record; load average ${load} → ${loadavg()[0]!.toFixed(2)}`,
  );
  if (vs !== undefined) console.log(`this build: ${OWN_ROOT}; vs: ${resolve(vs)}`);
  console.log(formatTable(rows));
}
