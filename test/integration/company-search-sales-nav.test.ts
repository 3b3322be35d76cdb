import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

// Issue 39, item 8: the Sales Navigator variant of the company search, through the company_search
// stream: it asks POST /v1/search/companies/sales-nav (a single call: no batch operation takes it),
// loads what it returns, and the next run within refresh_after asks nothing.

describe.each(e2eBackends)('the Sales Navigator company search into $name', ({ make }) => {
  const workspace = useSandboxWorkspace(
    'svc_live_sales_nav_companies',
    {
      streams: {
        company_search: {
          searches: [{ id: 'fintech', variant: 'sales-nav', filters: { keywords: 'fintech' }, max_results: 30 }],
        },
      },
    },
    (dir) => make(dir, 'sales_nav_companies'),
  );

  it('given a sales-nav search, when synced twice, then its results load under the search id, billed as the service billed them, and the second run bills 0', async (ctx) => {
    const { destination, configPath, sandbox } = workspace;
    if (!destination) return ctx.skip();
    const first = await runCliInProcess(['sync', '--config', configPath, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const billed = sandbox.ledger.entries.filter((e) => e.credits > 0);
    expect(billed.map((e) => e.operation)).toEqual(['search.companies.sales_nav']);
    const synced = JSON.parse(first.stdout) as { streams: { stream: string; credits: number; records: number }[] };
    const stream = synced.streams.find((s) => s.stream === 'company_search')!;
    expect(stream.credits).toBe(billed.reduce((n, e) => n + e.credits, 0));
    const schema = destination.schema ?? 'seedline';
    const rows = await query(
      destination,
      `select search_id, count(*) as n from ${schema}.company_search group by search_id`,
    );
    expect(rows).toEqual([{ search_id: 'fintech', n: stream.records }]);
    expect(stream.records).toBeGreaterThan(0);

    const entries = sandbox.ledger.entries.length;
    const second = JSON.parse((await runCliInProcess(['sync', '--config', configPath, '--json'])).stdout) as {
      credits: number;
    };
    expect(second.credits).toBe(0);
    expect(sandbox.ledger.entries.length).toBe(entries);
  });
});
