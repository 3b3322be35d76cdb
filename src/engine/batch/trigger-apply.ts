import type { SeedRowChange } from '../../destinations/destination.js';
import type { CompiledBatchStream } from '../../manifest/compile-stream.js';
import type { ChangeWatch } from '../books/change-watch.js';
import { LEDGER_PAGE, readSeedRows } from '../books/ledger-pages.js';
import type { StreamContext, StreamOutcome } from '../stream-context.js';

/**
 * Refresh on change, what a Trigger already says: before a batch stream plans its fetches, the
 * values its watched seeds' Triggers reported after their last fetch go into their rows, at no
 * cost (the fields the manifest's `refresh_on_change.apply` maps to columns). The fetch those
 * Triggers make due still runs, within the budget, and replaces the row; a seed the budget leaves
 * for later keeps what its Triggers said meanwhile. See docs/streams.md#what-a-trigger-already-says.
 */
export async function applyTriggerDiffs(
  stream: CompiledBatchStream,
  ctx: StreamContext,
  watch: ChangeWatch,
  outcome: StreamOutcome,
): Promise<void> {
  const table = stream.table.fixedName;
  if (table === null || Object.keys(stream.changeRefresh?.apply ?? {}).length === 0) return;
  const changes: SeedRowChange[] = [];
  const keys = watch.keysToApply;
  for (let i = 0; i < keys.length; i += LEDGER_PAGE) {
    const rows = await readSeedRows(ctx.destination, stream.name, keys.slice(i, i + LEDGER_PAGE));
    // A seed never fetched has no row to change; one fetched after its Triggers has them in its row already.
    for (const [key, row] of rows)
      if (row.fetchedAt)
        for (const change of watch.changesAfter(key, row.fetchedAt)) changes.push({ ...change, seed: row.seed });
  }
  if (changes.length === 0) return;
  const changed = await ctx.writeLock.run(() => ctx.destination.applyTriggerChanges(table, ctx.runId, changes));
  if (changed === 0) return;
  outcome.fromTriggers = changed;
  const unit = stream.table.writeModeOf({}) === 'history' ? 'versions' : 'rows';
  ctx.reporter.notice(stream.name, `${changed} ${unit} took what their Triggers said, at no cost (refresh on change)`);
}
