import type { ReportData } from './report-data.js';
import {
  bandPadding,
  countScale,
  DAY_MS,
  dayScale,
  dayStart,
  instantScale,
  NARROW,
  type Layout,
} from './report-scales.js';
import { renderChart, type Chart, type ChartDefinition } from './report-chart-render.js';

export type { Chart } from './report-chart-render.js';

/** Room in px around a plot of points, so a point at zero or at the first day is drawn whole inside it. */
const POINT_PADDING = 6;
/** Fewest days a per-day axis shows: one day of data is one bar among a week's, not one bar across the plot. */
const MIN_DAYS = 7;

/** The report's charts, each only when it has data (an empty section says what to run instead). */
export async function renderCharts(data: ReportData): Promise<Chart[]> {
  const definitions = [
    data.credits.length > 0 && creditsChart(data),
    data.monthToDateByDay.length > 0 && monthChart(data),
    data.balance.length > 0 && balanceChart(data),
    data.freshness.length > 0 && freshnessChart(data),
    data.ages.length > 0 && agesChart(data),
    data.failures.length > 0 && failuresChart(data),
    data.triggers.length > 0 && triggersChart(data),
    data.jobs.length > 0 && jobsChart(data),
    data.runs.length > 0 && runsChart(data),
  ].filter((d): d is ChartDefinition => d !== false);
  const charts: Chart[] = [];
  for (const definition of definitions) charts.push(await renderChart(definition));
  return charts;
}

function creditsChart(data: ReportData): ChartDefinition {
  const perRun = data.budget.perRun;
  const perDay = sumBy(
    data.credits,
    (c) => c.day,
    (c) => c.credits,
  );
  const y = countScale(Math.max(...perDay.values(), perRun ?? 0));
  return {
    id: 'credits',
    title: 'Credits per day and stream',
    mark: 'rect',
    points: data.credits.length,
    countAxis: 'y',
    timeAxis: 'x',
    spec: (layout) => {
      const daily = dailyBars(windowDays(data, [...perDay.keys()], layout));
      return {
        layer: [
          {
            data: { values: data.credits },
            mark: daily.mark,
            encoding: {
              x: daily.x,
              y: {
                field: 'credits',
                type: 'quantitative',
                aggregate: 'sum',
                ...y,
                axis: { ...y.axis, title: 'credits' },
              },
              color: { field: 'stream', type: 'nominal' },
              detail: { field: 'stream' },
            },
          },
          ...(perRun === undefined ? [] : [budgetRule(perRun, 'max_credits_per_run')]),
        ],
      };
    },
  };
}

function monthChart(data: ReportData): ChartDefinition {
  const perMonth = data.budget.perMonth;
  const values = data.monthToDateByDay;
  const y = countScale(Math.max(...values.map((v) => v.credits), perMonth ?? 0), POINT_PADDING);
  const now = new Date(data.generatedAt);
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return {
    id: 'month',
    title: 'This month, credits to date',
    mark: 'symbol',
    points: values.length,
    countAxis: 'y',
    timeAxis: 'x',
    spec: (layout) => {
      const x = dayScale(start, end, layout);
      return {
        layer: [
          {
            data: { values },
            mark: { type: 'line', point: true },
            encoding: {
              x: {
                field: 'day',
                type: 'temporal',
                timeUnit: 'utcyearmonthdate',
                bandPosition: 0.5,
                scale: { ...x.scale, padding: POINT_PADDING },
                axis: { ...x.axis, title: 'day (UTC)' },
              },
              y: { field: 'credits', type: 'quantitative', ...y, axis: { ...y.axis, title: 'credits to date' } },
            },
          },
          ...(perMonth === undefined ? [] : [budgetRule(perMonth, 'max_credits_per_month')]),
        ],
      };
    },
  };
}

function balanceChart(data: ReportData): ChartDefinition {
  const keep = data.budget.keepBalance;
  const y = countScale(Math.max(...data.balance.map((b) => b.credits), keep ?? 0), POINT_PADDING);
  const times = data.balance.map((b) => Date.parse(b.at));
  return {
    id: 'balance',
    title: 'Account balance (credits_remaining)',
    mark: 'symbol',
    points: data.balance.length,
    countAxis: 'y',
    timeAxis: 'x',
    spec: (layout) => {
      const x = instantScale(times, layout);
      return {
        layer: [
          {
            data: { values: data.balance },
            mark: { type: 'line', point: true },
            encoding: {
              x: {
                field: 'at',
                type: 'temporal',
                scale: x.scale,
                axis: { ...x.axis, title: `snapshot (UTC, by ${x.unit})` },
              },
              y: { field: 'credits', type: 'quantitative', ...y, axis: { ...y.axis, title: 'credits' } },
            },
          },
          ...(keep === undefined ? [] : [budgetRule(keep, 'keep_balance')]),
        ],
      };
    },
  };
}

function freshnessChart(data: ReportData): ChartDefinition {
  const x = countScale(
    Math.max(
      ...sumBy(
        data.freshness,
        (f) => f.stream,
        (f) => f.seeds,
      ).values(),
    ),
  );
  return {
    id: 'freshness',
    title: 'Seeds by freshness',
    mark: 'rect',
    points: data.freshness.length,
    countAxis: 'x',
    spec: () => ({
      height: bandHeight(new Set(data.freshness.map((f) => f.stream)).size, 28),
      data: { values: data.freshness },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: { field: 'stream', type: 'nominal' },
        x: { field: 'seeds', type: 'quantitative', stack: 'zero', ...x, axis: { ...x.axis, title: 'seeds' } },
        color: {
          field: 'state',
          type: 'nominal',
          scale: { domain: ['fresh', 'due', 'pending', 'failed'], range: ['#4c9a2a', '#e0a100', '#7f8c8d', '#c0392b'] },
        },
      },
    }),
  };
}

function agesChart(data: ReportData): ChartDefinition {
  const limits = [
    ...new Map(data.ages.map((a) => [a.stream, { stream: a.stream, refreshDays: a.refreshDays }])).values(),
  ];
  const top = Math.max(...data.ages.map((a) => a.ageDays + 0.5), ...limits.map((l) => l.refreshDays)) * 1.05;
  // A little room left of zero: a tick at age 0 is drawn 3 px thick around its value.
  const x = { scale: { domain: [-top / 100, top], nice: false, zero: false }, axis: { title: 'age (days)' } };
  return {
    id: 'ages',
    title: 'Fetched seeds by age (half days) against refresh_after (dashed)',
    mark: 'rect',
    points: data.ages.length,
    spec: () => ({
      height: bandHeight(limits.length, 36),
      layer: [
        {
          data: { values: data.ages },
          mark: { type: 'tick', thickness: 3, tooltip: true },
          encoding: {
            x: { field: 'ageDays', type: 'quantitative', ...x },
            y: { field: 'stream', type: 'nominal' },
            opacity: {
              field: 'seeds',
              type: 'quantitative',
              scale: { range: [0.35, 1] },
              legend: { title: 'seeds', format: ',d', tickMinStep: 1 },
            },
          },
        },
        {
          data: { values: limits },
          mark: { type: 'rule', color: '#c0392b', strokeDash: [4, 3] },
          encoding: {
            x: { field: 'refreshDays', type: 'quantitative', ...x },
            y: { field: 'stream', type: 'nominal' },
          },
        },
      ],
    }),
  };
}

function failuresChart(data: ReportData): ChartDefinition {
  // At phone width a label is the row's number and stream: the reason is in the table below.
  const labelled = (layout: Layout) =>
    data.failures.map((f, i) => ({
      ...f,
      label: layout === NARROW ? `${i + 1}. ${f.stream}` : `${i + 1}. ${f.stream}: ${f.reason.slice(0, 48)}`,
    }));
  const x = countScale(Math.max(...data.failures.map((f) => f.count)));
  return {
    id: 'failures',
    title: 'Failed seeds and rejected records by reason',
    mark: 'rect',
    points: data.failures.length,
    countAxis: 'x',
    spec: (layout) => ({
      height: bandHeight(data.failures.length, 28),
      data: { values: labelled(layout) },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: {
          field: 'label',
          type: 'nominal',
          sort: null,
          title: null,
          axis: { labelLimit: layout === NARROW ? 150 : 220 },
        },
        x: { field: 'count', type: 'quantitative', ...x, axis: { ...x.axis, title: 'count' } },
        color: { field: 'kind', type: 'nominal' },
      },
    }),
  };
}

function triggersChart(data: ReportData): ChartDefinition {
  const perDay = sumBy(
    data.triggers,
    (t) => t.day,
    (t) => t.count,
  );
  const y = countScale(Math.max(...perDay.values()));
  return {
    id: 'triggers',
    title: 'Triggers per day by watched field',
    mark: 'rect',
    points: data.triggers.length,
    countAxis: 'y',
    timeAxis: 'x',
    spec: (layout) => {
      const daily = dailyBars(windowDays(data, [...perDay.keys()], layout));
      return {
        data: { values: data.triggers },
        mark: daily.mark,
        encoding: {
          x: daily.x,
          y: { field: 'count', type: 'quantitative', aggregate: 'sum', ...y, axis: { ...y.axis, title: 'triggers' } },
          color: { field: 'field', type: 'nominal' },
          detail: { field: 'signal' },
        },
      };
    },
  };
}

function jobsChart(data: ReportData): ChartDefinition {
  const x = countScale(Math.max(...data.jobs.map((j) => j.postings)));
  return {
    id: 'jobs',
    title: 'Job postings per company: posted in the window, no longer listed',
    mark: 'rect',
    points: data.jobs.length,
    countAxis: 'x',
    spec: (layout) => ({
      height: bandHeight(new Set(data.jobs.map((j) => j.company)).size, 30),
      data: { values: data.jobs },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: {
          field: 'company',
          type: 'nominal',
          sort: '-x',
          axis: { title: null, labelLimit: layout === NARROW ? 140 : 180 },
        },
        x: { field: 'postings', type: 'quantitative', ...x, axis: { ...x.axis, title: 'postings' } },
        color: { field: 'change', type: 'nominal' },
        yOffset: { field: 'change' },
      },
    }),
  };
}

function runsChart(data: ReportData): ChartDefinition {
  const runs = [...data.runs].reverse();
  const labels = runLabels(runs.map((r) => ({ id: r.runId, startedAt: r.startedAt })));
  const values = runs.flatMap((run) => [
    { run: run.runId, kind: 'expected', credits: run.estimatedCredits },
    { run: run.runId, kind: 'billed', credits: run.credits },
  ]);
  const y = countScale(Math.max(...values.map((v) => v.credits)));
  return {
    id: 'runs',
    title: 'Last runs: expected against billed credits',
    mark: 'rect',
    points: values.length,
    countAxis: 'y',
    timeAxis: 'x',
    spec: () => ({
      data: { values },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        // Keyed by run id: two runs started in the same minute are two pairs of bars.
        x: {
          field: 'run',
          type: 'ordinal',
          sort: null,
          scale: bandPadding(runs.length),
          axis: { title: 'run started (UTC)', labelExpr: `${JSON.stringify(labels)}[datum.value]` },
        },
        xOffset: { field: 'kind', sort: ['expected', 'billed'] },
        y: { field: 'credits', type: 'quantitative', ...y, axis: { ...y.axis, title: 'credits' } },
        color: { field: 'kind', type: 'nominal', sort: ['expected', 'billed'] },
      },
    }),
  };
}

/** A dashed rule at a budget limit, labelled with the limit's name. */
function budgetRule(value: number, name: string): Record<string, unknown> {
  return {
    data: { values: [{ value, name }] },
    layer: [
      {
        mark: { type: 'rule', color: '#c0392b', strokeDash: [6, 4] },
        encoding: { y: { field: 'value', type: 'quantitative' } },
      },
      {
        mark: { type: 'text', align: 'left', dx: 4, dy: -7, color: '#c0392b' },
        encoding: { x: { value: 0 }, y: { field: 'value', type: 'quantitative' }, text: { field: 'name' } },
      },
    ],
  };
}

/**
 * The per-day axis of the report's window: from the window's first day (or the data's, if earlier)
 * to the day it was made, at least {@link MIN_DAYS} days.
 */
/** The bar mark and day axis of a per-day chart: one narrow bar a day over the report window. */
function dailyBars(x: ReturnType<typeof windowDays>) {
  return {
    mark: { type: 'bar', tooltip: true, timeUnitBandSize: 0.8, timeUnitBandPosition: 0.1 } as const,
    x: {
      field: 'day',
      type: 'temporal',
      timeUnit: 'utcyearmonthdate',
      ...x,
      axis: { ...x.axis, title: 'day (UTC)' },
    } as const,
  };
}

function windowDays(data: ReportData, days: readonly string[], layout: Layout) {
  const end = dayStart(Date.parse(data.generatedAt)) + DAY_MS;
  const first = Math.min(...days.map((d) => Date.parse(d)), end - Math.max(MIN_DAYS, data.days) * DAY_MS);
  return dayScale(first, end, layout);
}

/** Each run's tick label: its start to the minute, to the second where two share a minute, its id where two share a second. */
function runLabels(runs: readonly { id: string; startedAt: string }[]): Record<string, string> {
  const unique = (labels: string[]) => new Set(labels).size === labels.length;
  let labels = runs.map((r) => r.startedAt.slice(5, 16).replace('T', ' '));
  if (!unique(labels)) labels = runs.map((r) => r.startedAt.slice(5, 19).replace('T', ' '));
  if (!unique(labels)) labels = labels.map((label, i) => `${label} ${runs[i]!.id.slice(-8)}`);
  return Object.fromEntries(runs.map((r, i) => [r.id, labels[i]!]));
}

/** Height of a plot of `n` horizontal bands `step` px each (a number: Vega-Lite's `{step}` would drop `fit-x`). */
function bandHeight(n: number, step: number): number {
  return Math.max(2, n) * step;
}

function sumBy<T>(rows: readonly T[], key: (row: T) => string, value: (row: T) => number): Map<string, number> {
  const sums = new Map<string, number>();
  for (const row of rows) sums.set(key(row), (sums.get(key(row)) ?? 0) + value(row));
  return sums;
}
