import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

// Issue 18, item 1: a stream is one YAML file. The user's own manifest (in `streams_dir`, with a
// JSON Schema file for its records and options of its own) and the built-in post_search (YAML only)
// sync against the sandbox, bill what the service billed, and cost nothing the second time.

const MANIFEST = `type: request
name: my_posts
description: Posts about each configured topic, through the post search.
request:
  path: /v1/search/posts
  body:
    keywords: "{{ partition.value }}"
    max_results: "{{ options.per_topic }}"
cost: { $ref: page_cost, results: "{{ args.max_results }}" }
options:
  topics: { type: array, items: { type: string, minLength: 1 }, minItems: 1, required: true }
  per_topic: { type: integer, minimum: 1, maximum: 100, default: 30 }
  refresh_after: { $ref: refresh_weekly }
partitions: { type: list, values: "{{ options.topics }}", key: "{{ item }}" }
records: data.posts
refresh_after: "{{ options.refresh_after }}"
table:
  name: my_posts
  schema: { file: post_hit.schema.json }
  primary_key: [topic, urn]
  write_mode: merge
  columns: { topic: "{{ partition.value }}" }
`;

const RECORD_SCHEMA = {
  type: 'object',
  properties: {
    url: { type: 'string' },
    urn: { type: 'string' },
    text: { type: ['string', 'null'] },
    posted_at: { type: 'string', format: 'date-time' },
    reactions_count: { type: 'integer' },
    author: { type: 'object', properties: { name: { type: 'string' }, url: { type: 'string' } } },
  },
  required: ['url', 'urn', 'posted_at'],
};

async function writeStreams(dir: string, manifest = MANIFEST): Promise<void> {
  await mkdir(join(dir, 'my-streams'), { recursive: true });
  await writeFile(join(dir, 'my-streams', 'my_posts.stream.yaml'), manifest);
  await writeFile(join(dir, 'my-streams', 'post_hit.schema.json'), JSON.stringify(RECORD_SCHEMA));
}

interface SyncJson {
  credits: number;
  streams: { stream: string; status: string; credits: number; records: number }[];
}

describe.each(e2eBackends)('a user manifest and the YAML-only post_search into $name', ({ make }) => {
  const workspace = useSandboxWorkspace(
    'svc_test_user_manifest',
    {
      streams_dir: 'my-streams',
      streams: {
        my_posts: { topics: ['dbt', 'warehouse'] },
        post_search: { searches: [{ id: 'lakehouse', keywords: 'lakehouse', max_results: 40 }] },
      },
    },
    (dir) => make(dir, 'user_manifest'),
  );

  it('given a manifest in streams_dir and post_search configured, when synced twice, then rows load, credits match the service, and the second run bills 0', async (ctx) => {
    const { destination: dest, configPath, sandbox } = workspace;
    if (!dest) return ctx.skip();
    await writeStreams(dirname(configPath));
    const first = await runCliInProcess(['sync', '--config', configPath, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const result = JSON.parse(first.stdout) as SyncJson;
    const billed = sandbox.ledger.entries
      .filter((e) => e.operation === 'search.posts')
      .reduce((n, e) => n + e.credits, 0);
    expect(billed).toBeGreaterThan(0);
    expect(result.credits).toBe(billed);
    const byStream = Object.fromEntries(result.streams.map((s) => [s.stream, s]));
    expect(byStream.my_posts).toMatchObject({ status: 'succeeded' });
    expect(byStream.post_search).toMatchObject({ status: 'succeeded', records: 40 });
    const billedFor = (targets: string[]) =>
      sandbox.ledger.entries.filter((e) => targets.includes(e.target)).reduce((n, e) => n + e.credits, 0);
    expect([byStream.my_posts!.credits, byStream.post_search!.credits]).toEqual([
      billedFor(['posts:dbt', 'posts:warehouse']),
      billedFor(['posts:lakehouse']),
    ]);
    // 30 results are 2 pages of 2 credits per topic, 40 results 2 pages.
    expect([byStream.my_posts!.credits, byStream.post_search!.credits]).toEqual([8, 4]);

    const schema = dest.schema ?? 'seedline';
    const rows = await query(
      dest,
      `select topic, count(*) as n, count(posted_at) as stamped from ${schema}.my_posts group by topic order by topic`,
    );
    expect(rows.map((r) => r.topic)).toEqual(['dbt', 'warehouse']);
    expect(rows.reduce((n, r) => n + Number(r.n), 0)).toBe(byStream.my_posts!.records);
    expect(rows.every((r) => Number(r.stamped) === Number(r.n) && Number(r.n) > 0)).toBe(true);
    expect(
      Number(
        (await query(dest, `select count(*) as n from ${schema}.post_search where search_id = 'lakehouse'`))[0]!.n,
      ),
    ).toBe(40);

    const described = JSON.parse(
      (await runCliInProcess(['schema', '--config', configPath, '--format', 'json'])).stdout,
    ) as {
      table: string;
      columns: { name: string; type: string }[];
    }[];
    const table = described.find((t) => t.table === 'my_posts');
    expect(
      table?.columns.filter((c) => ['posted_at', 'text', 'reactions_count'].includes(c.name)).map((c) => c.type),
    ).toEqual(['text', 'timestamp', 'bigint']);

    const entries = sandbox.ledger.entries.length;
    const second = JSON.parse((await runCliInProcess(['sync', '--config', configPath, '--json'])).stdout) as SyncJson;
    expect(second.credits).toBe(0);
    expect(sandbox.ledger.entries.length).toBe(entries);
  });
});

/** `plan` on a config in `dir` that syncs my_posts from its streams_dir with `options`. */
async function planIn(dir: string, options: Record<string, unknown>) {
  const configPath = await writeConfig(dir, {
    api: { base_url: 'sandbox', api_key: 'svc_test_x' },
    destination: { type: 'duckdb', path: 'w.duckdb' },
    streams_dir: 'my-streams',
    streams: { my_posts: options },
  });
  return runCliInProcess(['plan', '--config', configPath]);
}

describe('a user manifest that is wrong', () => {
  it('given a manifest with a bad key, when a command loads the config, then it exits 2 naming the file, the line and the key', async () => {
    const dir = await tempWorkspace();
    await writeStreams(
      dir,
      MANIFEST.replace(
        '    max_results: "{{ options.per_topic }}"\n',
        '    max_results: "{{ options.per_topic }}"\npaginator: { type: pages }\n',
      ),
    );
    const result = await planIn(dir, { topics: ['a'] });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/my_posts\.stream\.yaml:9: paginator\.type: /);
  });

  it('given a stream name that is not an identifier, when a command loads the config, then it exits 2 naming the rule and never echoes the name', async () => {
    const dir = await tempWorkspace();
    await writeStreams(dir, MANIFEST.replace('name: my_posts', `name: "my_posts'; drop--"`));
    const result = await planIn(dir, { topics: ['a'] });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/my_posts\.stream\.yaml:2: name: expected a stream name of lower-case letters/);
    expect(result.stderr).not.toContain('drop--');
  });

  it('given an option the manifest does not declare, when the config loads, then it is refused with a did-you-mean', async () => {
    const dir = await tempWorkspace();
    await writeStreams(dir);
    const result = await planIn(dir, { topics: ['a'], per_topik: 5 });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('streams.my_posts: unknown key "per_topik" (did you mean "per_topic"?)');
  });
});
