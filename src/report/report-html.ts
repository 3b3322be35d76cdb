import type { Chart } from './report-charts.js';
import type { ReportData } from './report-data.js';

/** What the page needs besides the data: where it came from, and the commands to suggest. */
export interface PageContext {
  /** The config file the report was made from, as given. */
  configPath: string;
  /** Destination label (`duckdb w.duckdb`, `postgres schema seedline`); never a URL with a password. */
  destination: string;
}

/**
 * The report as one self-contained HTML page: styles and SVG charts inline, no script, no
 * network. Each chart sits beside its numbers; an empty warehouse gets the commands to run first.
 */
export function renderReportHtml(data: ReportData, charts: readonly Chart[], context: PageContext): string {
  const byId = new Map(charts.map((c) => [c.id, c]));
  const sections =
    data.runs.length === 0
      ? [firstSteps(context)]
      : [
          section('Credits', byId.get('credits'), creditsNumbers(data), 'No credits were billed in this window.'),
          ...(data.keys.length > 0 ? [keysSection(data)] : []),
          section('This month', byId.get('month'), '', 'No run this month yet.'),
          section(
            'Balance',
            byId.get('balance'),
            balanceNumbers(data),
            'No account snapshots yet: add `account: {}` under streams to record the balance at every run.',
          ),
          section('Freshness', byId.get('freshness'), freshnessNumbers(data), 'No seed ledger yet.'),
          section('Seed ages', byId.get('ages'), '', 'No fetched seed has a refresh_after.'),
          section(
            'Failures and rejected records',
            byId.get('failures'),
            failuresNumbers(data),
            'No failed seed and no rejected record.',
            'below',
          ),
          section(
            'Triggers',
            byId.get('triggers'),
            refreshesTable(data),
            'No Trigger in this window (seedline serve loads them as they come).',
          ),
          section('Job postings', byId.get('jobs'), '', 'No job postings loaded (streams.jobs).'),
          section('Last runs', byId.get('runs'), runsTable(data), '', 'below'),
        ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>seedline report</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>seedline report</h1><p>${escape(context.destination)} · last ${data.days} days · generated ${escape(data.generatedAt.slice(0, 16).replace('T', ' '))} UTC from ${escape(context.configPath)}</p></header>
<main>
${sections.join('\n')}
</main>
</body>
</html>
`;
}

/** Where a section's numbers go: beside its chart, or below it across the section (tables of many columns). */
type Placement = 'beside' | 'below';

function section(
  title: string,
  chart: Chart | undefined,
  numbers: string,
  empty: string,
  placement: Placement = 'beside',
): string {
  const axes = [
    chart?.countAxis ? ` data-count-axis="${chart.countAxis}"` : '',
    chart?.timeAxis ? ` data-time-axis="${chart.timeAxis}"` : '',
  ].join('');
  const figure = chart
    ? `<figure class="chart" id="chart-${chart.id}" data-mark="${chart.mark}" data-points="${chart.points}"${axes}>${chart.svgs.wide}${chart.svgs.narrow}<figcaption>${escape(chart.title)}</figcaption></figure>`
    : `<p class="empty">${escape(empty)}</p>`;
  const table = numbers ? `<div class="numbers ${placement}">${numbers}</div>` : '';
  return `<section><h2>${escape(title)}</h2><div class="pair">${figure}${table}</div></section>`;
}

function creditsNumbers(data: ReportData): string {
  const total = data.credits.reduce((sum, c) => sum + c.credits, 0);
  const byStream = new Map<string, number>();
  for (const c of data.credits) byStream.set(c.stream, (byStream.get(c.stream) ?? 0) + c.credits);
  const limits = [
    ['month to date', data.monthToDate],
    ['max_credits_per_month', data.budget.perMonth],
    ['max_credits_per_run', data.budget.perRun],
  ].filter(([, value]) => value !== undefined) as [string, number][];
  return table(
    ['', 'credits'],
    [[`last ${data.days} days`, total], ...limits, ...[...byStream].sort((a, b) => b[1] - a[1])],
  );
}

function balanceNumbers(data: ReportData): string {
  const last = data.balance[data.balance.length - 1];
  const first = data.balance[0];
  if (!last || !first) return '';
  const rows: [string, number][] = [
    ['now', last.credits],
    [`fell over ${data.days} days`, first.credits - last.credits],
  ];
  if (data.budget.keepBalance !== undefined) rows.push(['keep_balance', data.budget.keepBalance]);
  return table(['', 'credits'], rows);
}

function freshnessNumbers(data: ReportData): string {
  const streams = [...new Set(data.freshness.map((f) => f.stream))];
  const count = (stream: string, state: string) =>
    data.freshness.find((f) => f.stream === stream && f.state === state)?.seeds ?? 0;
  return table(
    ['stream', 'fresh', 'due', 'pending', 'failed'],
    streams.map((s) => [s, count(s, 'fresh'), count(s, 'due'), count(s, 'pending'), count(s, 'failed')]),
  );
}

function failuresNumbers(data: ReportData): string {
  return table(
    ['#', 'stream', 'kind', 'count', 'reason', 'latest example'],
    data.failures.slice(0, 20).map((f, i) => [i + 1, f.stream, f.kind, f.count, f.reason, { code: f.example }]),
  );
}

/** Refresh on change, per stream using it: its refreshes in the window against refresh by age alone. */
function refreshesTable(data: ReportData): string {
  if (data.refreshesOnChange.length === 0) return '';
  return table(
    ['stream', 'watched', 'refreshed by change', 'by age', 'by age alone'],
    data.refreshesOnChange.map((r) => [r.stream, r.watched, r.byChange, r.byAge, r.byAgeAlone]),
  );
}

/** Workers' API keys (by fingerprint): what their rounds in the window let them spend, and spent. */
function keysSection(data: ReportData): string {
  const rows = data.keys.map((k) => [k.key, k.rounds, k.limit, k.spent, k.refusedIn]);
  const numbers = table(['key', 'rounds', 'could spend', 'spent (billed or at risk)', 'refused in'], rows);
  return `<section><h2>Credits per key</h2><div class="pair"><div class="numbers below">${numbers}</div></div></section>`;
}

function runsTable(data: ReportData): string {
  return table(
    ['started (UTC)', 'status', 'seconds', 'expected', 'billed', 'records', 'stopped'],
    data.runs
      .slice(0, 10)
      .map((r) => [
        r.startedAt.slice(0, 16).replace('T', ' '),
        r.status,
        r.durationSeconds ?? '',
        r.estimatedCredits,
        r.credits,
        r.records,
        r.stopReason,
      ]),
  );
}

function firstSteps(context: PageContext): string {
  return `<section class="first"><h2>Nothing synced yet</h2><p>This warehouse has no run yet. Run these, then make the report again:</p>
<pre>seedline plan   --config ${escape(context.configPath)}   # what a sync would fetch and cost
seedline sync   --config ${escape(context.configPath)}
seedline report --config ${escape(context.configPath)}</pre></section>`;
}

/** A cell: text, a number (right-aligned), or a value shown as code on one line that scrolls. */
type Cell = string | number | { code: string };

function table(head: readonly string[], rows: readonly (readonly Cell[])[]): string {
  // data-label: at phone width a wide table is shown as one card per row, each value under its header.
  const cell = (value: Cell, i: number) => {
    const label = ` data-label="${escape(head[i] ?? '')}"`;
    if (typeof value === 'number') return `<td class="n"${label}>${value.toLocaleString('en-US')}</td>`;
    if (value === '') return `<td${label}></td>`;
    if (typeof value === 'string') return `<td${label}><span class="v">${words(value)}</span></td>`;
    return `<td${label}><code class="v" tabindex="0">${escape(value.code)}</code></td>`;
  };
  return `<table><thead><tr>${head.map((h) => `<th>${words(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((row) => `<tr>${row.map(cell).join('')}</tr>`).join('')}</tbody></table>`;
}

/**
 * Text that wraps only between words: a browser would also break after a hyphen or a slash
 * (`private-` / `dennis-ritchie`), so a word holding one is kept on one line.
 */
function words(text: string): string {
  return text
    .split(/(\s+)/)
    .map((word) => (/[^\s\w]/.test(word) ? `<span class="w">${escape(word)}</span>` : escape(word)))
    .join('');
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Two SVGs per chart, one shown: an SVG scaled down to a phone's width would shrink its text to 5 px.
const STYLE = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2428; }
body { margin: 0; background: #f6f7f8; }
header { padding: 16px 24px; background: #1d2428; color: #fff; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; opacity: .8; font-size: 14px; overflow-wrap: anywhere; }
main { max-width: 1240px; margin: 0 auto; padding: 8px 16px 32px; }
section { background: #fff; border-radius: 8px; margin: 16px 0; padding: 12px 16px; box-shadow: 0 1px 2px rgba(0,0,0,.08); break-inside: avoid; }
h2 { font-size: 17px; margin: 4px 0 8px; }
.pair { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 0; flex: 1 1 640px; min-width: 0; }
figure svg { display: block; max-width: 100%; height: auto; }
figure svg.narrow { display: none; }
figcaption { font-size: 12px; color: #5b6670; }
.numbers { flex: 1 1 300px; min-width: 0; overflow-x: auto; }
.numbers.below { flex-basis: 100%; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e3e6e8; text-align: left; vertical-align: top; overflow-wrap: normal; word-break: normal; hyphens: manual; }
th { white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.w { white-space: nowrap; }
td code { display: block; max-width: 32em; overflow-x: auto; white-space: nowrap; font-size: 12px; }
.empty { color: #5b6670; }
pre { background: #f0f2f3; padding: 12px; overflow-x: auto; }
@media (max-width: 720px) {
  main { padding: 4px 8px; } section { padding: 8px; } header { padding: 12px; }
  figure svg.wide { display: none; } figure svg.narrow { display: block; width: 100%; }
  th, td { padding: 3px 6px; } td code { max-width: 14em; }
  .below thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  .below tr { display: block; padding: 6px 0; border-bottom: 1px solid #e3e6e8; }
  .below td { display: grid; grid-template-columns: 7.5em minmax(0, 1fr); gap: 8px; padding: 1px 0; border: 0; text-align: left; }
  .below td::before { content: attr(data-label); color: #5b6670; white-space: nowrap; }
  .below td:empty { display: none; }
  .below td .v { overflow-x: auto; max-width: none; }
}
@media print { body { background: #fff; } section { box-shadow: none; border: 1px solid #ddd; } figure svg.wide { display: block; } figure svg.narrow { display: none; } }
`;
