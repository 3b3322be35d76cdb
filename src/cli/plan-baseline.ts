import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { formatTable } from './format-table.js';
import { UsageError } from './run-command.js';

/** Exit code of `plan --fail-over N` when the worst case is over N: the plan itself worked. */
export const PLAN_OVER_LIMIT_EXIT = 4;

/** What a saved `seedline plan --json` must hold for a comparison: its streams and totals. */
const SavedPlan = z.object({
  streams: z.array(
    z.object({
      stream: z.string(),
      units: z.number(),
      worst_case_credits: z.number(),
      estimated_credits: z.number(),
    }),
  ),
  totals: z.object({ units: z.number(), worst_case_credits: z.number(), estimated_credits: z.number() }),
});
type SavedPlan = z.infer<typeof SavedPlan>;

/** The figures of a plan a comparison reads (what `plan --json` prints under streams and totals). */
interface PlanFigures {
  streams: readonly { stream: string; units: number; worstCaseCredits: number; estimatedCredits: number }[];
  totals: { units: number; worstCaseCredits: number; estimatedCredits: number };
}

/** One stream's figures in the baseline and now; a side is null where the stream is not planned. */
export interface StreamChange {
  stream: string;
  before: { units: number; worstCaseCredits: number; estimatedCredits: number } | null;
  after: { units: number; worstCaseCredits: number; estimatedCredits: number } | null;
}

/** The plan against a saved one: every stream of either, and the totals. */
export interface PlanComparison {
  /** Streams in the current plan's order, then those only the baseline has. */
  streams: StreamChange[];
  totals: {
    before: { units: number; worstCaseCredits: number; estimatedCredits: number };
    after: { units: number; worstCaseCredits: number; estimatedCredits: number };
  };
}

/** Reads a plan saved with `seedline plan --json`; a file that is not one is a usage error (exit 2) that does not echo it. */
export async function readBaseline(path: string): Promise<SavedPlan> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new UsageError(`--baseline ${path}: cannot read the file; save one with seedline plan --json > ${path}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`--baseline ${path}: not JSON; save one with seedline plan --json > ${path}`);
  }
  const plan = SavedPlan.safeParse(parsed);
  if (!plan.success)
    throw new UsageError(
      `--baseline ${path}: not the output of seedline plan --json (it needs streams[] with stream, units, worst_case_credits and estimated_credits, and totals)`,
    );
  return plan.data;
}

/** Compares the current plan with a saved one, stream by stream. */
export function comparePlans(report: PlanFigures, baseline: SavedPlan): PlanComparison {
  const saved = new Map(baseline.streams.map((s) => [s.stream, figures(s)]));
  const current = report.streams.map((p) => ({
    stream: p.stream,
    before: saved.get(p.stream) ?? null,
    after: { units: p.units, worstCaseCredits: p.worstCaseCredits, estimatedCredits: p.estimatedCredits },
  }));
  const gone = baseline.streams
    .filter((s) => !report.streams.some((p) => p.stream === s.stream))
    .map((s) => ({ stream: s.stream, before: figures(s), after: null }));
  const { units, worstCaseCredits, estimatedCredits } = report.totals;
  return {
    streams: [...current, ...gone],
    totals: { before: figures(baseline.totals), after: { units, worstCaseCredits, estimatedCredits } },
  };
}

/** The comparison as text: one row per stream that changed, then the totals. */
export function renderComparison(comparison: PlanComparison, baselinePath: string): string {
  const changed = comparison.streams.filter((s) => !sameFigures(s.before, s.after));
  const rows = changed.map((s) => ({
    stream: s.stream,
    change: s.before === null ? 'added' : s.after === null ? 'removed' : 'changed',
    to_fetch: delta(s.before?.units, s.after?.units),
    worst_credits: delta(s.before?.worstCaseCredits, s.after?.worstCaseCredits),
    expected_credits: delta(s.before?.estimatedCredits, s.after?.estimatedCredits),
  }));
  const { before, after } = comparison.totals;
  return [
    '',
    `against ${baselinePath}:`,
    rows.length === 0 ? '  no stream changed' : formatTable(rows),
    `total: worst case ${delta(before.worstCaseCredits, after.worstCaseCredits)} credits, expected ${delta(before.estimatedCredits, after.estimatedCredits)}, to fetch ${delta(before.units, after.units)}`,
    '',
  ].join('\n');
}

function figures(s: { units: number; worst_case_credits: number; estimated_credits: number }) {
  return { units: s.units, worstCaseCredits: s.worst_case_credits, estimatedCredits: s.estimated_credits };
}

function sameFigures(a: StreamChange['before'], b: StreamChange['after']): boolean {
  return (
    a !== null &&
    b !== null &&
    a.units === b.units &&
    a.worstCaseCredits === b.worstCaseCredits &&
    a.estimatedCredits === b.estimatedCredits
  );
}

/** `120 → 150 (+30)`; one side alone when the other is missing. */
function delta(before: number | undefined, after: number | undefined): string {
  if (before === undefined) return `${after} (new)`;
  if (after === undefined) return `${before} (gone)`;
  const change = after - before;
  return change === 0 ? String(after) : `${before} → ${after} (${change > 0 ? '+' : ''}${change})`;
}
