/**
 * Where a results page's time goes before the destination: the text of a page of 500 profile
 * entries parsed (JSON.parse), its envelope validated as the client does, each record validated
 * against the profiles table's schema alone, the records shaped by the stream's `TableShaper`
 * (validation included: `shape − validation` is the shaper's own work), and the rows shaped for a
 * DuckDB write (`shapeForWrite`). No database write: this is the engine's CPU share of a page.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/page-decode.js [--rounds=8] [--pages=20]
 *
 * The pages are generated before the clock and cycled through; each round times every phase over
 * all of them. Prints min and median over the rounds, in ms a page.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchResultsPage } from '../schemas/batch.js';
import { envelope } from '../schemas/common.js';
import { shapeForWrite } from '../src/normalize/record-shaper.js';
import { DuckDbDestination } from '../src/destinations/duckdb/duckdb-destination.js';
import { shapeEntries, valuesLookup } from '../src/engine/batch/results-page-shaping.js';
import { TableShaper } from '../src/normalize/table-shaper.js';
import { formatTable } from '../src/cli/format-table.js';
import { manifestsSync } from '../src/manifest/load-manifests.js';
import { profileRecord } from './profile-records.js';
import { median } from './stats.js';

const PAGE = 500;
const arg = (name: string, fallback: number): number =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const ROUNDS = arg('rounds', 8);
const PAGES = arg('pages', 20);

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

const dir = mkdtempSync(join(tmpdir(), 'seedline-page-decode-'));
const dest = new DuckDbDestination({ path: join(dir, 'shapes.duckdb') });
try {
  await dest.ensureSystemTables();
  const shaper = TableShaper.of(manifestsSync().get('profiles')!.table, {
    options: { write_mode: 'merge' },
    run: { id: 'bench', started_at: new Date().toISOString() },
  });
  const table = shaper.definitionFor({});
  await dest.ensureTable(table);
  const shaping = dest.writeShaping('profiles')!;
  const pages = Array.from({ length: PAGES }, (_, p) => resultsPage(p));
  const pageSchema = envelope(BatchResultsPage);
  const phases = ['parse', 'envelope', 'validation', 'shape', 'write shaping'] as const;
  const rounds: Record<(typeof phases)[number], number[]> = {
    parse: [],
    envelope: [],
    validation: [],
    shape: [],
    'write shaping': [],
  };
  for (let round = 0; round < ROUNDS; round++) {
    const spent = { parse: 0, envelope: 0, validation: 0, shape: 0, 'write shaping': 0 };
    for (const page of pages) {
      let at = performance.now();
      const lap = (phase: (typeof phases)[number]) => {
        const now = performance.now();
        spent[phase] += now - at;
        at = now;
      };
      const json: unknown = JSON.parse(page.text);
      lap('parse');
      const entries = pageSchema.parse(json).data;
      lap('envelope');
      for (const entry of entries) table.schema.safeParse(entry.data);
      lap('validation');
      const { tables } = shapeEntries(entries, valuesLookup(page.items), shaper);
      lap('shape');
      shapeForWrite(shaping, tables.get('profiles')!.group.rows, 'bench');
      lap('write shaping');
    }
    for (const phase of phases) rounds[phase].push(spent[phase] / pages.length);
  }
  const row = (phase: string, figures: number[]) => ({
    phase,
    min: Math.min(...figures).toFixed(1),
    median: median(figures).toFixed(1),
  });
  const rows = phases.map((phase) => row(phase, rounds[phase]));
  rows.push(
    row(
      'shape − validation',
      rounds.shape.map((s, i) => s - rounds.validation[i]!),
    ),
  );
  console.log(`bench/page-decode.ts: ${ROUNDS} rounds of ${PAGES} pages of ${PAGE} profiles, ms a page`);
  console.log(formatTable(rows));
} finally {
  await dest.close();
  rmSync(dir, { recursive: true, force: true });
}
