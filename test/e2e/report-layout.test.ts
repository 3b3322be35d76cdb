import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends } from '../helpers/destinations.js';
import { REPORT_PAGE_CONFIG } from '../helpers/report-config.js';
import {
  distinctColours,
  measureCharts,
  measureTableWords,
  pageScrollWidth,
  type ChartLayout,
} from '../helpers/report-layout.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

const CHROMIUM = process.env.SEEDLINE_CHROMIUM ?? '/usr/bin/chromium';
/** Where the browser test keeps its pages and screenshots (docs/report.md); CI keeps the folder as an artefact. */
const SCREENSHOTS = resolve(import.meta.dirname, '../../test-artifacts/report');
const VIEWPORTS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
] as const;
/** The smallest chart text a reader is asked to read, in CSS px. */
const SMALLEST_FONT = 10;

// Issue 39 item 5: the report checked in a real browser, on both backends, at desktop and phone width.
describe.each(e2eBackends)('the report page in Chromium on $name', ({ name, make }) => {
  const workspace = useSandboxWorkspace('svc_live_report_page', REPORT_PAGE_CONFIG, (dir) => make(dir, 'report_page'));
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (existsSync(CHROMIUM)) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(() => browser?.close());

  it('given a warehouse synced twice on one day, when the report opens at 1280×900 and 390×844, then every mark is inside its plot, counts tick in whole numbers, no two time labels read alike, no table word breaks, charts fill a phone with text of 10 px or more, and a day is a narrow bar', async (ctx) => {
    if (!workspace.destination || !browser) return ctx.skip();
    const { configPath } = workspace;
    // Two runs (one day of data), the second most likely in the same minute as the first.
    // The syncs only fill the warehouse (in-process); the report command stays a process, its stderr read whole.
    for (const run of [1, 2])
      expect((await runCliInProcess(['sync', '--config', configPath])).code, `sync ${run}`).toBe(0);
    await mkdir(SCREENSHOTS, { recursive: true });
    const out = join(SCREENSHOTS, `report-${name}.html`);
    const made = await runCli(['report', '--config', configPath, '--out', out]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr, 'no Vega-Lite warning').not.toMatch(/\bWARN\b/);

    for (const viewport of VIEWPORTS) {
      const at = `${name} ${viewport.width}x${viewport.height}`;
      const page = await browser.newPage({ viewport });
      try {
        const requests: string[] = [];
        page.on('request', (request) => requests.push(request.url()));
        await page.goto(pathToFileURL(out).href);
        const shot = await page.screenshot({
          path: join(SCREENSHOTS, `report-${name}-${viewport.width}x${viewport.height}.png`),
          fullPage: true,
        });
        expect(await distinctColours(page, shot), at).toBeGreaterThan(20);
        expect(await pageScrollWidth(page), `${at}: the page never scrolls sideways`).toBeLessThanOrEqual(
          viewport.width,
        );
        expect(
          requests.filter((url) => !url.startsWith('file:') && !url.startsWith('data:')),
          at,
        ).toEqual([]);

        const charts = await measureCharts(page);
        expect(charts.map((c) => c.id)).toEqual(
          expect.arrayContaining([
            'chart-credits',
            'chart-month',
            'chart-balance',
            'chart-freshness',
            'chart-ages',
            'chart-failures',
            'chart-jobs',
            'chart-runs',
          ]),
        );
        for (const chart of charts) expectReadableChart(chart, viewport.width, `${at} ${chart.id}`);
        // Keyed by run: two runs are two pairs of bars, however close they started.
        expect(charts.find((c) => c.id === 'chart-runs')!.points, at).toBe(4);

        const words = await measureTableWords(page);
        expect(words.checked, at).toBeGreaterThan(50);
        expect(words.broken, `${at}: table words broken over lines`).toEqual([]);
      } finally {
        await page.close();
      }
    }
  });
});

/** The chart as a reader sees it at `viewport` px: complete, inside its axes, legible. */
function expectReadableChart(chart: ChartLayout, viewport: number, at: string): void {
  expect(chart.marks, `${at}: one mark per point`).toBe(chart.points);
  expect(chart.marksChecked, at).toBeGreaterThan(0);
  expect(chart.outside, `${at}: marks outside the plot`).toEqual([]);
  expect(chart.textsCut, `${at}: texts cut off at the SVG's edge`).toEqual([]);
  if (chart.countAxis) expect(chart.countLabels.length, `${at}: count labels`).toBeGreaterThan(1);
  if (chart.timeAxis) expect(chart.timeLabels.length, `${at}: time labels`).toBeGreaterThan(1);
  for (const label of chart.countLabels) expect(label, `${at}: a count's tick label`).toMatch(/^\d{1,3}(,\d{3})*$/);
  expect(new Set(chart.timeLabels).size, `${at}: time labels ${chart.timeLabels.join(' | ')}`).toBe(
    chart.timeLabels.length,
  );
  if (chart.widestBar !== null) expect(chart.widestBar, `${at}: widest bar over plot width`).toBeLessThanOrEqual(0.4);
  expect(chart.smallestFont, `${at}: smallest text on screen, px`).toBeGreaterThanOrEqual(SMALLEST_FONT);
  expect(chart.width, `${at}: chart width`).toBeLessThanOrEqual(Math.min(viewport, chart.containerWidth + 0.5));
  if (viewport < 720)
    expect(chart.width / chart.containerWidth, `${at}: share of the column`).toBeGreaterThanOrEqual(0.9);
}
