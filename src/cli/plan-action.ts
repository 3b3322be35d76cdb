import { bindingLimit, type BudgetLimits, type LimitName } from '../engine/books/budget.js';
import { CostModel } from '../engine/books/cost-model.js';
import { billedInFlight, budgetLimits, planSync, prepareSync } from '../engine/pipeline.js';
import { reachUnder, type StreamReach } from '../engine/books/plan-reach.js';
import type { StreamPlan } from '../engine/stream-context.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { formatTable } from './format-table.js';
import { writeJson } from './json-output.js';
import { loadCostModel } from './load-cost-model.js';
import { openSession, type Session } from './open-session.js';
import { comparePlans, PLAN_OVER_LIMIT_EXIT, readBaseline, renderComparison } from './plan-baseline.js';
import { splitList } from './split-list.js';

/** What `seedline plan` reports; `--json` prints it with snake_case keys. */
export interface PlanReport {
  /** One entry per stream, in run order. */
  streams: StreamPlan[];
  /** Sums over the streams. */
  totals: { units: number; calls: number; worstCaseCredits: number; estimatedCredits: number };
  /** `credits_remaining` of GET /v1/account; null when the account could not be read. */
  balance: number | null;
  /** Why the balance is unknown, when it is. */
  balanceError?: string;
  /**
   * The run's limits (as a sync would compute them now) and the one that binds: a configured one,
   * or `credits_remaining` (the balance, past which the service refuses calls) when it is lower.
   */
  limits: BudgetLimits & { binding: { limit: number; name: LimitName | 'credits_remaining' } | null };
  /** `fits` (the worst case fits), `may_stop` (the expected case fits, the worst may not) or `will_stop`. */
  verdict: 'fits' | 'may_stop' | 'will_stop';
  /** How far a run gets into each stream under the binding limit, in run order; null when no limit binds. */
  reach: StreamReach[] | null;
  /** Requests per minute of the account (GET /v1/account `rate_limit`); null when unknown. */
  requestsPerMinute: number | null;
  /** Lower bound of the run's duration from the rate limit alone (calls ÷ requests per minute), in seconds. */
  expectedDurationSeconds: number | null;
  /** Where the costs came from: the service's OpenAPI `x-credits`, or the built-in spec table. */
  costSource: 'openapi' | 'built-in';
  /**
   * What a crash can make a later run buy again: answers of billed single calls still on the wire
   * (each arrived answer is journaled). `inFlight` is `api.max_billed_in_flight`; `credits` that
   * many calls at the largest single call's worst case (0 when the run makes no billed single call).
   */
  crashExposure: { inFlight: number; credits: number };
}

/** Options of `seedline plan`. */
export interface PlanOptions {
  /** Config file path. */
  config: string;
  /** Comma-separated stream names; default every configured stream. */
  streams?: string;
  /** Plan a full refresh. */
  fullRefresh: boolean;
  /** Print the report as JSON (snake_case keys). */
  json: boolean;
  /** Wait while a sync holds the destination instead of failing. */
  wait: boolean;
  /** A plan saved with `--json` to compare against. */
  baseline?: string;
  /** Exit {@link PLAN_OVER_LIMIT_EXIT} when the worst case is over this many credits. */
  failOver?: number;
}

/**
 * `seedline plan`: prepares a sync without running it, reads the account, and prints the plan
 * (with `--baseline`, what changed against a saved one); spends nothing.
 * @returns the exit code: 0, or {@link PLAN_OVER_LIMIT_EXIT} when the worst case is over `--fail-over`
 */
export async function planAction(opts: PlanOptions): Promise<number> {
  // A bad baseline file is refused before the destination is opened.
  const baseline = opts.baseline === undefined ? undefined : await readBaseline(opts.baseline);
  const session = await openSession(opts.config, { waitForLock: opts.wait, offersWait: true });
  try {
    const { loaded, destination } = session;
    const manifests = await loadManifests(loaded.config);
    const prepared = await prepareSync({
      config: loaded.config,
      baseDir: loaded.baseDir,
      manifests,
      destination,
      only: splitList(opts.streams),
      fullRefresh: opts.fullRefresh,
    });
    const account = await readAccount(session);
    const plans = await planSync(prepared, account.costs);
    const limits = await budgetLimits(prepared.options, account.balance ?? undefined);
    const report = planReport(plans, limits, account, billedInFlight(loaded.config));
    const comparison = baseline === undefined ? undefined : comparePlans(report, baseline);
    if (opts.json) writeJson(comparison === undefined ? report : { ...report, baseline: comparison });
    else
      process.stdout.write(
        renderPlan(report) + (comparison === undefined ? '' : renderComparison(comparison, opts.baseline!)),
      );
    return overLimit(report, opts.failOver);
  } finally {
    await session.close();
  }
}

/** The exit code of `--fail-over`, said on stderr when the worst case is over it. */
function overLimit(report: PlanReport, failOver: number | undefined): number {
  if (failOver === undefined || report.totals.worstCaseCredits <= failOver) return 0;
  process.stderr.write(
    `plan: the worst case, ${report.totals.worstCaseCredits} credits, is over --fail-over ${failOver} (exit ${PLAN_OVER_LIMIT_EXIT})\n`,
  );
  return PLAN_OVER_LIMIT_EXIT;
}

/** Balance, rate limit and cost table: GET /v1/account and /openapi.json are free, so a plan may read them. */
async function readAccount(
  session: Session,
): Promise<{ balance: number | null; balanceError?: string; requestsPerMinute: number | null; costs: CostModel }> {
  try {
    const client = await session.connect();
    const account = client.account;
    return {
      balance: account?.credits_remaining ?? null,
      requestsPerMinute: account?.rate_limit.requests_per_minute ?? null,
      costs: await loadCostModel(client.baseUrl),
    };
  } catch (error) {
    return {
      balance: null,
      balanceError: (error as Error).message,
      requestsPerMinute: null,
      costs: CostModel.builtIn(),
    };
  }
}

/** The plan's totals, verdict and duration from the stream plans, the limits and the account. */
export function planReport(
  streams: StreamPlan[],
  limits: BudgetLimits,
  account: { balance: number | null; balanceError?: string; requestsPerMinute: number | null; costs: CostModel },
  inFlight = 16,
): PlanReport {
  const sum = (pick: (p: StreamPlan) => number) => streams.reduce((n, p) => n + pick(p), 0);
  const totals = {
    units: sum((p) => p.units),
    calls: sum((p) => p.calls),
    worstCaseCredits: sum((p) => p.worstCaseCredits),
    estimatedCredits: sum((p) => p.estimatedCredits),
  };
  const configured = bindingLimit(limits);
  // Without keep_balance the balance still caps the run: the service answers 402 past it.
  const balance =
    account.balance === null || limits.balanceLeft !== undefined ? undefined : Math.max(0, account.balance);
  const binding =
    balance !== undefined && (!configured || balance < configured.limit)
      ? { limit: balance, name: 'credits_remaining' as const }
      : (configured ?? null);
  const verdict =
    !binding || totals.worstCaseCredits <= binding.limit
      ? 'fits'
      : totals.estimatedCredits <= binding.limit
        ? 'may_stop'
        : 'will_stop';
  const rpm = account.requestsPerMinute;
  return {
    streams,
    totals,
    balance: account.balance,
    ...(account.balanceError ? { balanceError: account.balanceError } : {}),
    limits: { ...limits, binding },
    verdict,
    reach: binding ? reachUnder(streams, binding.limit) : null,
    requestsPerMinute: rpm,
    expectedDurationSeconds: rpm ? Math.ceil((totals.calls / rpm) * 60) : null,
    costSource: account.costs.source,
    crashExposure: { inFlight, credits: inFlight * Math.max(0, ...streams.map((p) => p.maxCallCredits ?? 0)) },
  };
}

/** The human-readable plan `seedline plan` prints. */
export function renderPlan(report: PlanReport): string {
  // Shown only when a stream refreshes on change: of to_fetch, the seeds a Trigger made due (the rest by age or new).
  const byChange = report.streams.some((p) => p.dueByChange !== undefined);
  const rows = report.streams.map((p) => ({
    stream: p.stream,
    to_fetch: p.units,
    ...(byChange ? { by_change: p.dueByChange ?? '' } : {}),
    resumed: p.resumed,
    fresh_skipped: p.skipped,
    calls: p.calls,
    worst_credits: p.worstCaseCredits,
    expected_credits: p.estimatedCredits,
  }));
  const { totals, limits } = report;
  const balance =
    report.balance === null
      ? `unknown (${report.balanceError ?? 'GET /v1/account gave none'})`
      : `${report.balance} credits`;
  const set = [
    limits.perRun === undefined
      ? ''
      : `per run ${limits.perRun}${limits.perRunFrom === 'default' ? ', the default: the config sets no budget.max_credits_per_run' : ''}`,
    limits.monthLeft === undefined ? '' : `left this month ${Math.max(0, limits.monthLeft)}`,
    limits.balanceLeft === undefined
      ? ''
      : `above keep_balance ${Math.max(0, limits.balanceLeft)}${report.balance === null ? ' (balance unknown: nothing can be proven above keep_balance)' : ''}`,
  ].filter(Boolean);
  const binding = !limits.binding
    ? 'none set'
    : limits.binding.name === 'credits_remaining'
      ? `${limits.binding.limit} credits (the account balance: the service refuses calls past it${set.length ? `; ${set.join(', ')}` : ''})`
      : `${limits.binding.limit} credits (${limits.binding.name}; ${set.join(', ')})`;
  const unknown =
    report.balance === null && limits.balanceLeft === undefined && report.verdict !== 'will_stop'
      ? '; balance unknown, so the service may still refuse calls it cannot cover (402)'
      : '';
  const verdicts = {
    fits: 'fits the budget',
    may_stop:
      'the expected cost fits, the worst case does not: the run may stop at the budget, leaving the rest pending',
    will_stop: 'does not fit: the run will stop at the budget, leaving the rest pending for later runs',
  };
  const duration =
    report.expectedDurationSeconds === null
      ? 'unknown'
      : `at least ${formatSeconds(report.expectedDurationSeconds)} (${totals.calls} calls at ${report.requestsPerMinute} requests/minute)`;
  return [
    formatTable(rows),
    '',
    `credits: worst case ${totals.worstCaseCredits}, expected ${totals.estimatedCredits} (costs from ${report.costSource === 'openapi' ? "the service's OpenAPI x-credits" : 'the built-in spec table'})`,
    `balance: ${balance}`,
    `budget: ${binding}: ${verdicts[report.verdict]}${unknown}`,
    ...reachLines(report.reach ?? []),
    ...savingLines(report.streams),
    `duration: ${duration}`,
    `crash exposure: ${report.crashExposure.credits} credits at most (answers of up to ${report.crashExposure.inFlight} billed calls on the wire, api.max_billed_in_flight; every answer that arrived is journaled)`,
    '',
  ].join('\n');
}

/** What refresh on change did over the last runs of each stream that uses it, against refresh by age alone. */
function savingLines(streams: readonly StreamPlan[]): string[] {
  return streams.flatMap(({ stream, refreshSaving: s }) =>
    s?.watched === 0
      ? [
          `refresh on change: ${stream}: no seed is watched yet: sync the signals and triggers streams (free), and check that active Signals target these seeds`,
        ]
      : s
        ? [
            `refresh on change: ${stream}: ${s.watched} seeds watched; the last ${s.windowDays} days bought ${s.byChange} refreshes by change and ${s.byAge} by age (${round(s.credits)} credits expected); by age alone the watched seeds would have cost ${round(s.byAgeAloneCredits)} (${s.byAgeAlone} refreshes)`,
          ]
        : [],
  );
}

function round(credits: number): number {
  return Math.round(credits * 10) / 10;
}

/** What a run under the budget may not reach, stream by stream (nothing when every stream is covered). */
function reachLines(reach: readonly StreamReach[]): string[] {
  const says: Record<Exclude<StreamReach['reach'], 'covered'>, (r: StreamReach) => string> = {
    may_stop: (r) => `${r.stream}: may stop part way (its worst case is past what is left, its expected cost is not)`,
    stops: (r) =>
      `${r.stream}: expected to stop part way (${r.creditsLeft} of its expected ${r.expectedCredits} credits are left for it); the rest stays pending`,
    not_reached: (r) =>
      `${r.stream}: not expected to be reached (the streams before it are expected to spend it all); it stays pending`,
  };
  return reach.flatMap((r) => (r.reach === 'covered' ? [] : [`  ${says[r.reach](r)}`]));
}

function formatSeconds(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  return seconds < 7200 ? `${Math.round(seconds / 60)}m` : `${(seconds / 3600).toFixed(1)}h`;
}
