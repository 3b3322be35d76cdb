import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';

// Issue 33, item 2: every `{{ … }}` of a manifest is checked against what its place gives it
// when the config loads: a typo is exit 2 naming the file, line and key, before any call.

const MANIFEST = `type: request
name: my_posts
request:
  path: /v1/search/posts
  body:
    keywords: "{{ partition.value }}"
    max_results: "{{ options.per_topic }}"
cost: { $ref: page_cost, results: "{{ args.max_results }}" }
options:
  topics: { type: array, items: { type: string, minLength: 1 }, minItems: 1, required: true }
  per_topic: { type: integer, minimum: 1, maximum: 100, default: 30 }
partitions: { type: list, values: "{{ options.topics }}", key: "{{ item }}" }
records: data.posts
table:
  name: my_posts
  schema: post
  primary_key: [urn]
  columns: { topic: "{{ partition.value }}" }
`;

/** A manifest reading the loaded profiles: its partitions give `url` and `key` only. */
const PARENT_MANIFEST = `type: request
name: my_activity
depends_on: [profiles]
request:
  path: /v1/profiles/activity
  body: { urn: "{{ partition.urn }}", kind: posts, per_page: 25 }
cost: { $ref: page_cost }
partitions: { type: parent, table: profiles, columns: [url], key: "{{ row.url }}" }
records: data.posts
table: { name: my_activity, schema: activity_posts, primary_key: [urn] }
`;

describe('strict templates in a user manifest', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
  });
  afterAll(() => sandbox?.close());

  /** Writes `manifest` into a streams_dir and a config selecting it; returns the config path. */
  async function configWith(name: string, manifest: string, options: Record<string, unknown>): Promise<string> {
    const dir = await tempWorkspace();
    await mkdir(join(dir, 'my-streams'));
    await writeFile(join(dir, 'my-streams', `${name}.stream.yaml`), manifest);
    return writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: 'svc_live_strict' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      seeds: { profiles: ['ada-lovelace'] },
      streams_dir: 'my-streams',
      streams: { [name]: options },
    });
  }

  it.each([
    {
      what: 'a partition field typo',
      name: 'my_posts',
      manifest: MANIFEST.replace('keywords: "{{ partition.value }}"', 'keywords: "{{ partition.vaule }}"'),
      options: { topics: ['dbt'] },
      error:
        'my_posts.stream.yaml:6: request.body.keywords: {{ partition.vaule }}: partition has no "vaule" here (it may read: key, value); did you mean "value"?',
    },
    {
      what: 'an option the manifest does not declare',
      name: 'my_posts',
      manifest: MANIFEST.replace('"{{ options.per_topic }}"', '"{{ options.per_topik }}"'),
      options: { topics: ['dbt'] },
      error:
        'my_posts.stream.yaml:7: request.body.max_results: {{ options.per_topik }}: options has no "per_topik" here (it may read: per_topic, schema_contract, topics); did you mean "per_topic"?',
    },
    {
      what: 'a name nothing gives',
      name: 'my_posts',
      manifest: MANIFEST.replace('topic: "{{ partition.value }}"', 'topic: "{{ partiton.value }}"'),
      options: { topics: ['dbt'] },
      error:
        'my_posts.stream.yaml:18: table.columns.topic: {{ partiton.value }}: nothing named "partiton" can be read here (it may read: options, partition, record, run); did you mean "partition"?',
    },
    {
      what: "a field the parent's columns do not give",
      name: 'my_activity',
      manifest: PARENT_MANIFEST,
      options: {},
      error:
        'my_activity.stream.yaml:6: request.body.urn: {{ partition.urn }}: partition has no "urn" here (it may read: key, url)',
    },
  ])(
    'given $what, when plan and sync load the config, then each exits 2 naming the file, line and key, and nothing is called',
    async ({ name, manifest, options, error }) => {
      const configPath = await configWith(name, manifest, options);
      for (const command of ['plan', 'sync']) {
        const result = await runCliInProcess([command, '--config', configPath]);
        expect(result.code, command).toBe(2);
        expect(result.stderr).toContain(error);
      }
      expect(sandbox.ledger.entries).toEqual([]);
    },
  );

  it('given the same manifests without the typos, when planned, then they load', async () => {
    expect(
      (await runCliInProcess(['plan', '--config', await configWith('my_posts', MANIFEST, { topics: ['dbt'] })])).code,
    ).toBe(0);
    const fixed = PARENT_MANIFEST.replace('columns: [url]', 'columns: [url, urn]');
    const planned = await runCliInProcess(['plan', '--config', await configWith('my_activity', fixed, {})]);
    expect(planned.code, planned.stderr).toBe(0);
  });
});

describe('names checked before the first credit', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
  });
  afterAll(() => sandbox?.close());

  it.each([
    {
      what: 'a table name',
      from: 'name: my_posts\n  schema',
      to: 'name: My-Posts\n  schema',
      error: /Invalid table name "My-Posts"/,
    },
    {
      what: 'an added column name',
      from: 'columns: { topic:',
      to: 'columns: { "the topic":',
      error: /Invalid column name "the topic"/,
    },
  ])(
    'given $what no destination takes, when plan and sync load the config, then each exits 2 naming the stream, and nothing is called',
    async ({ from, to, error }) => {
      const dir = await tempWorkspace();
      await mkdir(join(dir, 'my-streams'));
      await writeFile(join(dir, 'my-streams', 'my_posts.stream.yaml'), MANIFEST.replace(from, to));
      const configPath = await writeConfig(dir, {
        api: { base_url: sandbox.url, api_key: 'svc_live_names' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        streams_dir: 'my-streams',
        streams: { my_posts: { topics: ['dbt'] } },
      });
      for (const command of ['plan', 'sync']) {
        const result = await runCliInProcess([command, '--config', configPath]);
        expect(result.code, command).toBe(2);
        expect(result.stderr).toMatch(/streams\.my_posts\.topics\[0\]: the stream's manifest \(table\): /);
        expect(result.stderr).toMatch(error);
      }
      expect(sandbox.ledger.entries).toEqual([]);
    },
  );
});

describe('parent columns checked before the first credit', () => {
  it('given a manifest reading a column its configured parent stream never writes, when plan and sync load the config, then each exits 2 with a did-you-mean', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      const dir = await tempWorkspace();
      await mkdir(join(dir, 'my-streams'));
      const manifest = PARENT_MANIFEST.replace('columns: [url]', 'columns: [url, urnn]').replace(
        '{{ partition.urn }}',
        '{{ partition.urnn }}',
      );
      await writeFile(join(dir, 'my-streams', 'my_activity.stream.yaml'), manifest);
      const configPath = await writeConfig(dir, {
        api: { base_url: sandbox.url, api_key: 'svc_live_parent_columns' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        seeds: { profiles: ['ada-lovelace'] },
        streams_dir: 'my-streams',
        streams: { profiles: {}, my_activity: {} },
      });
      for (const command of ['plan', 'sync']) {
        const result = await runCliInProcess([command, '--config', configPath]);
        expect(result.code, command).toBe(2);
        expect(result.stderr).toContain(
          `streams.my_activity: the stream's manifest (partitions): table profiles has no column "urnn" (did you mean "urn"?)`,
        );
      }
      expect(sandbox.ledger.entries).toEqual([]);
    } finally {
      await sandbox.close();
    }
  });
});
