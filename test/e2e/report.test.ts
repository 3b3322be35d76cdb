import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { readReportData } from '../../src/report/report-data.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends } from '../helpers/destinations.js';
import { REPORT_CONFIG } from '../helpers/report-config.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';
import { timeLimit } from '../helpers/time-limits.js';

// Issue 19: the report's data on both backends (the page in a real browser: report-layout.test.ts).

describe.each(e2eBackends)('seedline report data on $name', ({ make }) => {
  const workspace = useSandboxWorkspace('svc_live_report', REPORT_CONFIG, (dir) => make(dir, 'report'));

  it('given a sync that failed a seed and stopped at the budget, when the report data is read, then credits, balance, freshness, failures and runs agree with the ledger', async (ctx) => {
    const { destination: dest, configPath, sandbox } = workspace;
    if (!dest) return ctx.skip();
    // Fills the warehouse whose report data is read (in-process); serve below stays a process.
    const sync = await runCliInProcess(['sync', '--config', configPath]);
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
