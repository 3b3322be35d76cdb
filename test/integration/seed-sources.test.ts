import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';

// Issue 33, item 5: a seed source is a named list whose name and shape come from the manifests
// that read it. A user manifest can read a source of its own; the config takes it, and a source
// no manifest reads is refused by name.

/** Posts of the company pages in `seeds.accounts`, a seed source no built-in stream reads. */
const ACCOUNT_POSTS = `type: request
name: account_posts
description: Posts of the company pages listed under seeds.accounts.
request:
  path: /v1/companies/posts
  body: { url: "{{ partition.url }}", per_page: 25 }
cost: { $ref: page_cost }
options:
  refresh_after: { $ref: refresh_daily }
refresh_after: "{{ options.refresh_after }}"
seeds:
  accounts: { description: "company pages whose posts to read" }
partitions: { type: seeds, seeds: accounts, as: url, seed_kind: company }
paginator: { type: page_token, max_pages: 1 }
records: data.posts
table:
  name: account_posts
  schema: post
  primary_key: [urn]
  columns: { company_url: "{{ partition.url }}" }
`;

describe('seed sources named by the manifests', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
  });
  afterAll(() => sandbox?.close());

  async function configWith(seeds: Record<string, unknown>, streams: Record<string, unknown>): Promise<string> {
    const dir = await tempWorkspace();
    await mkdir(join(dir, 'my-streams'));
    await writeFile(join(dir, 'my-streams', 'account_posts.stream.yaml'), ACCOUNT_POSTS);
    await writeFile(join(dir, 'accounts.csv'), 'page\nhttps://www.network.example/company/acme\n');
    return writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: 'svc_live_seeds' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      seeds,
      streams_dir: 'my-streams',
      streams,
    });
  }

  it('given a user manifest reading seeds.accounts from a CSV file, when synced, then its partitions are those seeds and a second run spends nothing', async () => {
    const config = await configWith(
      { accounts: { file: 'accounts.csv', column: 'page' } },
      { account_posts: { refresh_after: '1d' } },
    );
    const plan = await runCliInProcess(['plan', '--config', config, '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout).streams[0]).toMatchObject({ stream: 'account_posts', units: 1 });
    const first = await runCliInProcess(['sync', '--config', config, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const synced = JSON.parse(first.stdout) as { credits: number; streams: { records: number }[] };
    expect(synced.credits).toBeGreaterThan(0);
    expect(synced.streams[0]!.records).toBeGreaterThan(0);
    const billed = sandbox.ledger.entries.length;
    const second = await runCliInProcess(['sync', '--config', config, '--json']);
    expect(JSON.parse(second.stdout).credits).toBe(0);
    expect(sandbox.ledger.entries.length).toBe(billed);
  });

  it('given the stream without its seeds, or a seed source no manifest reads, when planned, then each exits 2 naming the key, and nothing is called', async () => {
    const before = sandbox.ledger.entries.length;
    const missing = await runCliInProcess(['plan', '--config', await configWith({}, { account_posts: {} })]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      'seeds.accounts: streams.account_posts is enabled but has no seeds: add seeds.accounts (a list, { file, column } or { sql }',
    );
    const typo = await runCliInProcess([
      'plan',
      '--config',
      await configWith({ acounts: ['acme'] }, { account_posts: {} }),
    ]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('seeds: unknown key "acounts" (did you mean "accounts"?)');
    expect(sandbox.ledger.entries.length).toBe(before);
  });

  it('given a manifest reading {{ seeds.x }} it does not declare, when loaded, then it is refused naming the file and key', async () => {
    const dir = await tempWorkspace();
    await mkdir(join(dir, 'my-streams'));
    const undeclared = ACCOUNT_POSTS.replace(
      'partitions: { type: seeds, seeds: accounts, as: url, seed_kind: company }',
      'partitions: { type: list, values: "{{ seeds.pages }}", key: "{{ item }}" }',
    ).replace('"{{ partition.url }}"', '"{{ partition.value }}"');
    await writeFile(join(dir, 'my-streams', 'account_posts.stream.yaml'), undeclared);
    const config = await writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: 'svc_live_seeds' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      streams_dir: 'my-streams',
      streams: { account_posts: {} },
    });
    const result = await runCliInProcess(['plan', '--config', config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /account_posts\.stream\.yaml:\d+: partitions\.values: \{\{ seeds\.pages \}\}: seeds has no "pages" here/,
    );
  });
});
