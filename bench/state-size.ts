/**
 * Size of an Airbyte STATE against the number of seeds, and what a seed list changed between reads costs.
 *
 *   npm run build && node dist/bench/state-size.js [--seeds 10000,100000,1000000] [--days 1|30] [--refresh-after-days 30] [--change 0.005,0.02,0.1]
 *
 * For each N: N ledger rows of a batch stream in a fresh DuckDB file (every 10th failed for good,
 * the others fetched), their fetch times spread over `--days` days at random seconds (1: one run;
 * 30: a month of daily runs each refreshing a 30th of the list, the worst case for the sweep,
 * since each day's seeds lie scattered over the hash order). Then the stream's state is exported
 * as `airbyte read` emits it (`exportStreamState`), and restored into a fresh store against the
 * same list and against lists with a share of seeds replaced (`--change`: half removed, half
 * added). Prints the STATE's bytes, the rounding of times, export and restore seconds, rows
 * restored, seeds left due because their hash range changed past its sketch, and new seeds marked
 * fetched (always 0).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportStreamState, restoreStreamStates } from '../src/airbyte/airbyte-state.js';
import { formatTable } from '../src/cli/format-table.js';
import { createDestination } from '../src/destinations/create-destination.js';
import type { Destination, SeedRow } from '../src/destinations/destination.js';

const STREAM = 'profiles';
const DAY = 86_400_000;

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? String(process.argv[at + 1]) : fallback;
}

const seedCounts = flag('seeds', '10000,100000,1000000').split(',').map(Number);
const days = Number(flag('days', '1'));
const refreshAfterMs = Number(flag('refresh-after-days', '30')) * DAY;
const changes = flag('change', '0,0.005,0.02,0.1').split(',').map(Number);
const key = (i: number) => `https://www.network.example/in/person-${i}`;

async function fillLedger(destination: Destination, seeds: number): Promise<void> {
  await destination.ensureSystemTables();
  const now = Date.parse('2026-11-28T00:00:00Z');
  for (let from = 0; from < seeds; from += 20_000) {
    const rows: SeedRow[] = [];
    for (let i = from; i < Math.min(seeds, from + 20_000); i++) {
      const fetchedAt = new Date(
        now - Math.floor(Math.random() * days) * DAY - Math.floor(Math.random() * 3600) * 1000,
      );
      rows.push({
        stream: STREAM,
        seedKey: key(i),
        seed: key(i),
        status: i % 10 === 3 ? 'failed' : 'fetched',
        error: i % 10 === 3 ? 'not_found: no such profile' : null,
        fetchedAt,
        credits: 1,
      });
    }
    const unit = await destination.beginUnit('bench_state_size');
    await unit.saveSeeds(rows);
    await unit.commit();
  }
}

async function* listOf(keys: readonly string[]) {
  for (let i = 0; i < keys.length; i += 1000) yield keys.slice(i, i + 1000).map((k) => ({ key: k, seed: k }));
}

const dir = await mkdtemp(join(tmpdir(), 'seedline-state-size-'));
const table: Record<string, unknown>[] = [];
try {
  for (const seeds of seedCounts) {
    const source = await createDestination({ type: 'duckdb', path: join(dir, `source-${seeds}.duckdb`) });
    await fillLedger(source, seeds);
    let started = performance.now();
    const blob = await exportStreamState(source, STREAM, refreshAfterMs / 40);
    const exportSeconds = (performance.now() - started) / 1000;
    await source.close();
    const bytes = JSON.stringify(blob).length;
    for (const change of changes) {
      const replaced = Math.floor((seeds * change) / 2);
      const list = [
        ...Array.from({ length: seeds - replaced }, (_, i) => key(i + replaced)),
        ...Array.from({ length: replaced }, (_, i) => key(seeds + i)),
      ];
      const target = await createDestination({ type: 'duckdb', path: join(dir, `target-${seeds}-${change}.duckdb`) });
      await target.ensureSystemTables();
      started = performance.now();
      const restored = await restoreStreamStates(target, [blob], 'bench_restore', () => () => listOf(list));
      const restoreSeconds = (performance.now() - started) / 1000;
      let newMarked = 0;
      for await (const rows of target.readSeedChunks(STREAM, 10_000))
        newMarked += rows.filter((row) => Number(row.seedKey.split('-').at(-1)) >= seeds).length;
      await target.close();
      table.push({
        seeds,
        days,
        state_bytes: bytes,
        rounding: blob.seed_ledger ? `${blob.seed_ledger.granularity_ms / 60_000} min` : 'exact',
        export_s: exportSeconds.toFixed(1),
        list_change: `${(change * 100).toFixed(1)}%`,
        restore_s: restoreSeconds.toFixed(1),
        restored: restored.seeds,
        due_again: restored.unresolved,
        new_marked: newMarked,
      });
      console.error(`done: ${seeds} seeds, change ${change}`);
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
console.log(formatTable(table));
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
