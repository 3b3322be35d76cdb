import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

// Issue 33, item 4: a batch stream whose items are rows another stream loads in the same run
// (a user's enrichment of the people a search found) is planned from the rows that search may
// load, as a request stream reading a parent table is: its worst case covers what it bills.

const FOUND_PROFILES = `type: batch
name: found_profiles
description: Full profiles of the people a people search found.
depends_on: [people_search]
operation: profiles.enrich
single: { path: /v1/profiles/enrich }
failed_items_billed: true
cost: { $ref: enrichment_cost }
options:
  refresh_after: { $ref: refresh_weekly }
partitions: { type: parent, table: people_search, columns: [url], key: "{{ row.url }}" }
params:
  url: "{{ partition.url }}"
refresh_after: "{{ options.refresh_after }}"
table:
  name: found_profiles
  schema: profile
  primary_key: [url]
  write_mode: merge
`;

interface PlannedStream {
  stream: string;
  units: number;
  worst_case_credits: number;
  estimated_credits: number;
}

describe.each(e2eBackends)('a batch stream fed by a search of the same run, into $name', ({ make }) => {
  const workspace = useSandboxWorkspace(
    'svc_test_batch_child',
    {
      streams_dir: 'my-streams',
      streams: {
        people_search: { searches: [{ id: 'data', filters: { keywords: 'data engineer' }, max_results: 30 }] },
        found_profiles: {},
      },
    },
    (dir) => make(dir, 'batch_child'),
  );

  it('given a fresh warehouse, when planned and synced twice, then its worst case covers every item the search may find, it bills no more, and the second run bills 0', async (ctx) => {
    const { destination, configPath, sandbox } = workspace;
    if (!destination) return ctx.skip();
    await mkdir(join(dirname(configPath), 'my-streams'), { recursive: true });
    await writeFile(join(dirname(configPath), 'my-streams', 'found_profiles.stream.yaml'), FOUND_PROFILES);

    const planned = await runCliInProcess(['plan', '--config', configPath, '--json']);
    expect(planned.code, planned.stderr).toBe(0);
    const plan = Object.fromEntries(
      (JSON.parse(planned.stdout) as { streams: PlannedStream[] }).streams.map((s) => [s.stream, s]),
    );
    // 30 results the search may return, one item each at 1 credit, with one single retry of a billed failure.
    expect(plan.found_profiles).toMatchObject({ units: 30, worst_case_credits: 60, estimated_credits: 30 });

    const first = await runCliInProcess(['sync', '--config', configPath, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const synced = JSON.parse(first.stdout) as { streams: { stream: string; credits: number; records: number }[] };
    const found = synced.streams.find((s) => s.stream === 'found_profiles')!;
    const enriched = sandbox.ledger.entries.filter((e) => e.operation === 'profiles.enrich');
    expect(found.records).toBe(30);
    expect(found.credits).toBe(enriched.reduce((n, e) => n + e.credits, 0));
    expect(found.credits).toBeGreaterThan(0);
    expect(found.credits).toBeLessThanOrEqual(plan.found_profiles!.worst_case_credits);

    const entries = sandbox.ledger.entries.length;
    const second = JSON.parse((await runCliInProcess(['sync', '--config', configPath, '--json'])).stdout) as {
      credits: number;
    };
    expect(second.credits).toBe(0);
    expect(sandbox.ledger.entries.length).toBe(entries);
  });
});
