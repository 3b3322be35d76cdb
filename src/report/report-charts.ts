import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { ReportData } from './report-data.js';

/** A chart of the report: its SVG, and how many data marks it draws (one per point of its data). */
export interface Chart {
  id: string;
  title: string;
  svg: string;
  /** The vega mark type of the data marks in the SVG (`rect`: bars and ticks, `symbol`: points). */
  mark: string;
  points: number;
}

const WIDTH = 560;
const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** The report's charts, each only when it has data (an empty section says what to run instead). */
export async function renderCharts(data: ReportData): Promise<Chart[]> {
  const charts: Chart[] = [];
  if (data.credits.length > 0) charts.push(await creditsChart(data));
  if (data.monthToDateByDay.length > 0) charts.push(await monthChart(data));
  if (data.balance.length > 0) charts.push(await balanceChart(data));
  if (data.freshness.length > 0) charts.push(await freshnessChart(data));
  if (data.ages.length > 0) charts.push(await agesChart(data));
  if (data.failures.length > 0) charts.push(await failuresChart(data));
  if (data.triggers.length > 0) charts.push(await triggersChart(data));
  if (data.jobs.length > 0) charts.push(await jobsChart(data));
  if (data.runs.length > 0) charts.push(await runsChart(data));
  return charts;
}

function creditsChart(data: ReportData): Promise<Chart> {
  const perRun = data.budget.perRun;
  return chart('credits', 'Credits per day and stream', 'rect', data.credits.length, {
    layer: [
      {
        data: { values: data.credits },
        mark: { type: 'bar', tooltip: true },
        encoding: {
          x: { field: 'day', type: 'ordinal', title: 'day (UTC)' },
          y: { field: 'credits', type: 'quantitative', aggregate: 'sum', title: 'credits' },
          color: { field: 'stream', type: 'nominal' },
          detail: { field: 'stream' },
        },
      },
      ...(perRun === undefined ? [] : [budgetRule(perRun, 'max_credits_per_run', 'y')]),
    ],
  });
}

function monthChart(data: ReportData): Promise<Chart> {
  const perMonth = data.budget.perMonth;
  return chart('month', 'This month, credits to date', 'symbol', data.monthToDateByDay.length, {
    layer: [
      {
        data: { values: data.monthToDateByDay },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'day', type: 'ordinal', title: 'day (UTC)' },
          y: { field: 'credits', type: 'quantitative', title: 'credits to date' },
        },
      },
      ...(perMonth === undefined ? [] : [budgetRule(perMonth, 'max_credits_per_month', 'y')]),
    ],
  });
}

function jobsChart(data: ReportData): Promise<Chart> {
  return chart('jobs', 'Job postings per company: posted in the window, no longer listed', 'rect', data.jobs.length, {
    data: { values: data.jobs },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      y: { field: 'company', type: 'nominal', sort: '-x' },
      x: { field: 'postings', type: 'quantitative' },
      color: { field: 'change', type: 'nominal' },
      yOffset: { field: 'change' },
    },
  });
}

function balanceChart(data: ReportData): Promise<Chart> {
  const keep = data.budget.keepBalance;
  return chart('balance', 'Account balance (credits_remaining)', 'symbol', data.balance.length, {
    layer: [
      {
        data: { values: data.balance },
        mark: { type: 'line', point: true },
        encoding: {
          x: {
            field: 'at',
            type: 'temporal',
            title: 'snapshot (UTC)',
            axis: { format: '%b %d %H:%M' },
            scale: { type: 'utc' },
          },
          y: { field: 'credits', type: 'quantitative', title: 'credits' },
        },
      },
      ...(keep === undefined ? [] : [budgetRule(keep, 'keep_balance', 'y')]),
    ],
  });
}

function freshnessChart(data: ReportData): Promise<Chart> {
  return chart('freshness', 'Seeds by freshness', 'rect', data.freshness.length, {
    data: { values: data.freshness },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      y: { field: 'stream', type: 'nominal' },
      x: { field: 'seeds', type: 'quantitative', stack: 'zero' },
      color: {
        field: 'state',
        type: 'nominal',
        scale: { domain: ['fresh', 'due', 'pending', 'failed'], range: ['#4c9a2a', '#e0a100', '#7f8c8d', '#c0392b'] },
      },
    },
  });
}

function agesChart(data: ReportData): Promise<Chart> {
  const limits = [
    ...new Map(data.ages.map((a) => [a.stream, { stream: a.stream, refreshDays: a.refreshDays }])).values(),
  ];
  return chart('ages', 'Fetched seeds by age (half days) against refresh_after (dashed)', 'rect', data.ages.length, {
    layer: [
      {
        data: { values: data.ages },
        mark: { type: 'tick', thickness: 3, tooltip: true },
        encoding: {
          x: { field: 'ageDays', type: 'quantitative', title: 'age (days)' },
          y: { field: 'stream', type: 'nominal' },
          opacity: { field: 'seeds', type: 'quantitative', scale: { range: [0.35, 1] }, title: 'seeds' },
        },
      },
      {
        data: { values: limits },
        mark: { type: 'rule', color: '#c0392b', strokeDash: [4, 3] },
        encoding: { x: { field: 'refreshDays', type: 'quantitative' }, y: { field: 'stream', type: 'nominal' } },
      },
    ],
  });
}

function failuresChart(data: ReportData): Promise<Chart> {
  const values = data.failures.map((f, i) => ({ ...f, label: `${i + 1}. ${f.stream}: ${f.reason.slice(0, 48)}` }));
  return chart('failures', 'Failed seeds and rejected records by reason', 'rect', values.length, {
    data: { values },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      y: { field: 'label', type: 'nominal', sort: null, title: null },
      x: { field: 'count', type: 'quantitative' },
      color: { field: 'kind', type: 'nominal' },
    },
  });
}

function triggersChart(data: ReportData): Promise<Chart> {
  return chart('triggers', 'Triggers per day by watched field', 'rect', data.triggers.length, {
    data: { values: data.triggers },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      x: { field: 'day', type: 'ordinal' },
      y: { field: 'count', type: 'quantitative', aggregate: 'sum' },
      color: { field: 'field', type: 'nominal' },
      detail: { field: 'signal' },
    },
  });
}

function runsChart(data: ReportData): Promise<Chart> {
  const values = [...data.runs].reverse().flatMap((run) => [
    { run: run.startedAt.slice(5, 16).replace('T', ' '), kind: 'expected', credits: run.estimatedCredits },
    { run: run.startedAt.slice(5, 16).replace('T', ' '), kind: 'billed', credits: run.credits },
  ]);
  return chart('runs', 'Last runs: expected against billed credits', 'rect', values.length, {
    data: { values },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      x: { field: 'run', type: 'ordinal', sort: null, title: 'run started (UTC)' },
      xOffset: { field: 'kind' },
      y: { field: 'credits', type: 'quantitative' },
      color: { field: 'kind', type: 'nominal' },
    },
  });
}

/** A labelled horizontal or vertical rule at a budget limit. */
function budgetRule(value: number, name: string, axis: 'x' | 'y'): Record<string, unknown> {
  return {
    data: { values: [{ value, name }] },
    layer: [
      {
        mark: { type: 'rule', color: '#c0392b', strokeDash: [6, 4] },
        encoding: { [axis]: { field: 'value', type: 'quantitative' } },
      },
      {
        mark: { type: 'text', align: 'left', dx: 4, dy: -6, color: '#c0392b' },
        encoding: { [axis]: { field: 'value', type: 'quantitative' }, text: { field: 'name' } },
      },
    ],
  };
}

/** Compiles a Vega-Lite spec and renders it to SVG in Node (no browser, no canvas). */
async function chart(
  id: string,
  title: string,
  mark: string,
  points: number,
  spec: Record<string, unknown>,
): Promise<Chart> {
  const full = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: WIDTH,
    height: 220,
    config: { font: FONT, view: { stroke: null } },
    ...spec,
  } as TopLevelSpec;
  const view = new vega.View(vega.parse(compile(full).spec), { renderer: 'none' });
  const svg = (await view.toSVG()).replace('<svg ', `<svg role="img" aria-label="${title}" `);
  view.finalize();
  return { id, title, svg, mark, points };
}
