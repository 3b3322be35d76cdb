import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { readReportData } from '../../src/report/report-data.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { e2eBackends } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';
import { timeLimit } from '../helpers/time-limits.js';

const CHROMIUM = process.env.SEEDLINE_CHROMIUM ?? '/usr/bin/chromium';
/** Where the browser test keeps its screenshots (README "The report"); CI keeps the folder as an artefact. */
const SCREENSHOTS = resolve(import.meta.dirname, '../../test-artifacts/report');

const SEEDS = {
  profiles: ['ada-lovelace', 'grace-hopper', 'private-dennis-ritchie', 'alan-turing'],
  companies: ['acme-analytics', 'globex', 'initech'],
};

// Issue 19: the report's data on both backends, and the page in a real browser.
/** The config of a sync that fails a seed (private-…) and stops at the budget. */
const CONFIG = {
  seeds: SEEDS,
  streams: { profiles: {}, companies: {}, account: {} },
  budget: { max_credits_per_run: 6 },
  webhooks: { secrets: ['whsec_report_test'], port: 0 },
};

describe.each(e2eBackends)('seedline report data on $name', ({ make }) => {
  const workspace = useSandboxWorkspace('svc_live_report', CONFIG, (dir) => make(dir, 'report'));

  it('given a sync that failed a seed and stopped at the budget, when the report data is read, then credits, balance, freshness, failures and runs agree with the ledger', async (ctx) => {
    const { destination: dest, configPath, sandbox } = workspace;
    if (!dest) return ctx.skip();
    const sync = await runCli(['sync', '--config', configPath]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toMatch(/budget_exhausted/);

    const destination = await createDestination(dest);
    try {
      const data = await readReportData(destination, (await loadConfig(configPath)).config, 30);
      expect(data.credits.reduce((sum, c) => sum + c.credits, 0)).toBe(sandbox.ledger.totalBilled());
      expect(data.monthToDate).toBe(sandbox.ledger.totalBilled());
      expect(data.runs[0]).toMatchObject({
        status: 'partial',
        stopReason: 'budget_exhausted',
        credits: sandbox.ledger.totalBilled(),
      });
      expect(data.balance.length).toBeGreaterThanOrEqual(1);
      expect(data.freshness).toContainEqual({ stream: 'profiles', state: 'failed', seeds: 1 });
      expect(data.freshness.filter((f) => f.state === 'pending' || f.stream === 'companies').length).toBeGreaterThan(0);
      expect(data.failures).toContainEqual(
        expect.objectContaining({
          stream: 'profiles',
          kind: 'failed seed',
          count: 1,
          example: expect.stringContaining('private-dennis-ritchie'),
        }),
      );
    } finally {
      await destination.close();
    }
  });

  it('given seedline serve on that warehouse, when /report is requested, then the page is made on the spot from the destination', async (ctx) => {
    const { destination: dest, configPath } = workspace;
    if (!dest) return ctx.skip();
    const served = spawnCli(['serve', '--config', configPath]);
    try {
      await vi.waitFor(() => expect(served.stdout).toMatch(/listening on http:\/\/\S+/), {
        timeout: timeLimit(60_000),
        interval: 100,
      });
      const base = new URL(/listening on (http:\/\/\S+)/.exec(served.stdout)![1]!).origin;
      const page = await fetch(`${base}/report`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await page.text();
      expect(html).toContain('Credits per day and stream');
      expect(html).toContain('budget_exhausted');
    } finally {
      served.child.kill('SIGTERM');
      await served.exited;
    }
  });
});

describe('the report page in Chromium', () => {
  // Every section drawn: jobs too, and a monthly budget line.
  const workspace = useSandboxWorkspace('svc_live_report_page', {
    ...CONFIG,
    streams: { ...CONFIG.streams, jobs: { max_results: 5 } },
    budget: { max_credits_per_month: 5000 },
  });

  it('given such a warehouse, when the report page opens at 1280 and 390 px, then every chart draws one mark per point, nothing goes to the network, and the page is not blank', async (ctx) => {
    const { configPath } = workspace;
    if (!existsSync(CHROMIUM)) return ctx.skip();
    expect((await runCli(['sync', '--config', configPath])).code).toBe(0);
    const out = join(SCREENSHOTS, 'report.html');
    await mkdir(SCREENSHOTS, { recursive: true });
    const made = await runCli(['report', '--config', configPath, '--out', out]);
    expect(made.code, made.stderr).toBe(0);

    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(pathToFileURL(out).href);
      const charts = await page.$$eval('figure.chart', (figures) =>
        figures.map((figure) => ({
          id: figure.id,
          points: Number(figure.getAttribute('data-points')),
          marks: figure.querySelectorAll(`g.mark-${figure.getAttribute('data-mark')}.role-mark > *`).length,
        })),
      );
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
      for (const chart of charts) expect(chart.marks, chart.id).toBe(chart.points);

      for (const [width, height] of [
        [1280, 900],
        [390, 844],
      ] as const) {
        await page.setViewportSize({ width, height });
        const shot = await page.screenshot({ path: join(SCREENSHOTS, `report-${width}x${height}.png`) });
        expect(await distinctColours(page, shot), `${width}x${height}`).toBeGreaterThan(20);
        // Nothing wider than the viewport but the charts' own scroll: the page reads at phone width.
        expect(
          await page.evaluate(() => (globalThis as unknown as BrowserGlobals).document.documentElement.scrollWidth),
          `${width}x${height}`,
        ).toBeLessThanOrEqual(width);
      }
      expect(requests.filter((url) => !url.startsWith('file:') && !url.startsWith('data:'))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

/** The few browser globals the page code uses (the tests are type-checked without the DOM library). */
interface BrowserGlobals {
  document: {
    documentElement: { scrollWidth: number };
    createElement(tag: 'canvas'): {
      width: number;
      height: number;
      getContext(kind: '2d'): {
        drawImage(image: unknown, x: number, y: number): void;
        getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
      } | null;
    };
  };
  Image: new () => { src: string; width: number; height: number; decode(): Promise<void> };
}

/** Distinct colours of a screenshot, counted in the page itself (a blank page has one or two). */
async function distinctColours(page: import('playwright-core').Page, png: Buffer): Promise<number> {
  return page.evaluate(async (data) => {
    const { Image, document } = globalThis as unknown as BrowserGlobals;
    const image = new Image();
    image.src = `data:image/png;base64,${data}`;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    const context = canvas.getContext('2d')!;
    context.drawImage(image, 0, 0);
    const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < pixels.length && seen.size < 1000; i += 16)
      seen.add((pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!);
    return seen.size;
  }, png.toString('base64'));
}
