import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';

const PROFILES = ['ada-lovelace', 'sparse-grace-hopper', 'mangled-alan-turing'];
const COMPANIES = ['acme-analytics', 'sparse-globex', 'mangled-initech'];

/** A JSON column as an object, whether the backend returns it parsed (Postgres) or as text (DuckDB). */
const jsonOf = (value: unknown) =>
  (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown> | null;

// Issue 16: a paid record loads unless it has no key; what does not fit is NULL in its column and kept in _extra.
describe.each(e2eBackends)('misshapen records from the service into $name', ({ name, make }) => {
  let sandbox: Sandbox;
  let dest: DestinationConfig | undefined;
  let dir: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    dir = await tempWorkspace();
    dest = await make(dir, 'misshapen');
  });
  afterAll(() => sandbox?.close());

  const config = (streams: Record<string, unknown>) =>
    writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: 'svc_test_misshapen' },
      destination: dest,
      seeds: { profiles: PROFILES, companies: COMPANIES },
      streams,
    });

  it('given sparse and mangled profiles and companies, when synced with the default contract, then every record is in its table, none rejected, and status counts the repaired fields', async (ctx) => {
    if (!dest) return ctx.skip();
    const sync = await runCliInProcess(['sync', '--config', await config({ profiles: {}, companies: {} })]);
    expect(sync.code, sync.stderr).toBe(0);
    const schema = dest.schema ?? 'seedline';
    expect((await query(dest, `select url from ${schema}.profiles order by url`)).length).toBe(PROFILES.length);
    expect((await query(dest, `select url from ${schema}.companies`)).length).toBe(COMPANIES.length);
    expect(await query(dest, `select stream, reason from ${schema}._seedline_rejected`)).toEqual([]);

    const [mangled] = await query(
      dest,
      `select headline, full_name, scraped_at, _extra from ${schema}.profiles where public_identifier = 'mangled-alan-turing'`,
    );
    const extra = jsonOf(mangled!._extra)!;
    // Each misfit: the column NULL, the value as received in _extra (a lone surrogate with its escape written out).
    expect([mangled!.headline, (extra.headline as { text?: unknown }).text]).toEqual([null, expect.any(String)]);
    expect([mangled!.scraped_at, extra.scraped_at]).toEqual([null, '2024-02-30T25:61:00Z']);
    expect(mangled!.full_name === null && String(extra.full_name).endsWith('\\ud83d')).toBe(true);
    expect(extra.unheard_of).toEqual({ nested: { deeper: [1, 'two', { three: null }] } });
    // Groups that came back null are NULL columns and no child rows, not misfits.
    const [sparse] = await query(
      dest,
      `select headline, location__city, _extra from ${schema}.profiles where public_identifier = 'sparse-grace-hopper'`,
    );
    expect([sparse!.headline, sparse!.location__city]).toEqual([null, null]);
    expect(Object.values(jsonOf(sparse!._extra) ?? {}).every((value) => value === null)).toBe(true);
    const sparseChildren = await query(
      dest,
      `select count(*) as n from ${schema}.profiles__positions where _parent_url like '%sparse-grace-hopper%'`,
    );
    expect(Number(sparseChildren[0]!.n)).toBe(0);

    const repairs = await query(
      dest,
      `select stream, field, change, sum("count") as n from ${schema}._seedline_repairs group by stream, field, change`,
    );
    expect(repairs).toContainEqual(
      expect.objectContaining({ stream: 'profiles', field: 'headline', change: 'kept_in_extra' }),
    );
    expect(repairs).toContainEqual(
      expect.objectContaining({ stream: 'companies', field: 'scraped_at', change: 'kept_in_extra' }),
    );
    const status = await runCliInProcess(['status', '--config', await config({ profiles: {}, companies: {} })]);
    expect(status.stdout).toMatch(/Repaired fields[\s\S]*profiles\s+profiles\s+headline\s+kept_in_extra/);
  });

  it('given schema_contract freeze, when the mangled records sync, then they are kept in _seedline_rejected naming the contract, the stream is partial, and the rest load', async (ctx) => {
    if (!dest) return ctx.skip();
    const schema = dest.schema ?? 'seedline';
    const sync = await runCliInProcess([
      'sync',
      '--full-refresh',
      '--config',
      await config({ profiles: { schema_contract: { data_type: 'freeze' } } }),
    ]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toMatch(/profiles\s+partial/);
    expect(sync.stdout).toMatch(/schema_contract freeze/);
    const rejected = await query(
      dest,
      `select record, reason from ${schema}._seedline_rejected where stream = 'profiles'`,
    );
    expect(rejected.map((r) => JSON.parse(String(r.record)).public_identifier)).toEqual(['mangled-alan-turing']);
    expect(String(rejected[0]!.reason)).toMatch(/\(schema_contract\.data_type: freeze\)$/);
  });

  it('given the record freeze kept, when retried under freeze it stays once; when the contract is loosened, rejected retry loads it without a call and a second retry finds nothing', async (ctx) => {
    if (!dest) return ctx.skip();
    const schema = dest.schema ?? 'seedline';
    const calls = sandbox.ledger.entries.length;
    const frozen = await config({ profiles: { schema_contract: { data_type: 'freeze' } } });
    const list = await runCliInProcess(['rejected', 'list', '--config', frozen, '--json']);
    expect(JSON.parse(list.stdout)).toEqual([
      expect.objectContaining({ stream: 'profiles', table: 'profiles', records: 1 }),
    ]);

    const still = await runCliInProcess(['rejected', 'retry', '--config', frozen, '--stream', 'profiles', '--json']);
    expect(still.code, still.stderr).toBe(0);
    expect(JSON.parse(still.stdout).streams).toEqual([{ stream: 'profiles', retried: 1, loaded: 0, rejected: 1 }]);
    expect(
      Number(
        (await query(dest, `select count(*) as n from ${schema}._seedline_rejected where stream = 'profiles'`))[0]!.n,
      ),
    ).toBe(1);

    const loosened = await config({ profiles: {} });
    const retry = await runCliInProcess(['rejected', 'retry', '--config', loosened, '--reason', 'freeze']);
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stdout).toMatch(/no call was made[\s\S]*profiles\s+1\s+1\s+0/);
    const [row] = await query(
      dest,
      `select headline, _extra, _run_id from ${schema}.profiles where public_identifier = 'mangled-alan-turing'`,
    );
    expect(String(row!._run_id)).toMatch(/^retry_/);
    expect(jsonOf(row!._extra)!.scraped_at).toBe('2024-02-30T25:61:00Z');
    expect(await query(dest, `select reason from ${schema}._seedline_rejected where stream = 'profiles'`)).toEqual([]);
    expect((await runCliInProcess(['rejected', 'retry', '--config', loosened])).stdout).toMatch(/nothing to retry/);
    expect(sandbox.ledger.entries.length).toBe(calls);
  });
});
