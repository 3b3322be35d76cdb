import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { problemsOf } from '../helpers/config.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';

const valid = `
api:
  base_url: sandbox
  api_key: \${SEEDLINE_API_KEY:-svc_test_demo}
destination: { type: duckdb, path: data/x.duckdb }
seeds:
  profiles: [jane-doe]
streams:
  profiles: { refresh_after: 7d }
  activity: { kinds: [posts] }
budget: { max_credits_per_run: 100 }
`;

describe('config', () => {
  it('given a valid config without the env var, when parsed, then the default applies and defaults fill in', () => {
    const config = parseConfig(valid, 'test.yaml', {});
    expect(config.api.api_key).toBe('svc_test_demo');
    expect(config.destination).toMatchObject({ type: 'duckdb', schema: 'seedline' });
    expect(config.streams.activity).toMatchObject({ kinds: ['posts'], posted_within: 'all', refresh_after: '1d' });
  });

  it('given an unquoted ${VAR} inside { … }, when parsed, then the YAML error says to quote it; quoted, it reads as the number it spells', () => {
    const unquoted = valid.replace(
      'budget: { max_credits_per_run: 100 }',
      'budget: { max_credits_per_run: ${BUDGET} }',
    );
    expect(problemsOf(unquoted, { BUDGET: '250' })).toEqual([
      expect.stringMatching(
        /^YAML syntax: .*line 11.*A \$\{VAR\} inside \{ … \} or \[ … \] must be quoted: key: "\$\{VAR\}"/,
      ),
    ]);
    const quoted = valid.replace(
      'budget: { max_credits_per_run: 100 }',
      'budget: { max_credits_per_run: "${BUDGET}" }',
    );
    expect(parseConfig(quoted, 'test.yaml', { BUDGET: '250' }).budget.max_credits_per_run).toBe(250);
  });

  it('given the env var, when parsed, then it wins over the default', () => {
    expect(parseConfig(valid, 'test.yaml', { SEEDLINE_API_KEY: 'svc_live_x' }).api.api_key).toBe('svc_live_x');
  });

  it('given DuckDB settings, when parsed, then values become strings and a bad setting name is named by its key', () => {
    const withSettings = valid.replace(
      'destination: { type: duckdb, path: data/x.duckdb }',
      'destination: { type: duckdb, path: data/x.duckdb, settings: { memory_limit: 128MB, threads: 1 } }',
    );
    expect(parseConfig(withSettings, 'test.yaml', {}).destination).toMatchObject({
      settings: { memory_limit: '128MB', threads: '1' },
    });
    const bad = valid.replace(
      'destination: { type: duckdb, path: data/x.duckdb }',
      'destination: { type: duckdb, path: data/x.duckdb, settings: { "Memory Limit": 1 } }',
    );
    expect(problemsOf(bad).join('\n')).toMatch(/destination\.settings.*expected a DuckDB setting name/);
  });

  it('given bad values, when parsed, then every problem names its exact key', () => {
    const problems = problemsOf(
      valid
        .replace('refresh_after: 7d', 'refresh_after: soon')
        .replace('kinds: [posts]', 'kinds: [likes]')
        .replace('max_credits_per_run: 100', 'max_credits_per_run: lots'),
    );
    expect(problems.some((p) => p.startsWith('streams.profiles.refresh_after:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('streams.activity.kinds[0]:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('budget.max_credits_per_run:'))).toBe(true);
  });

  it('given the crash and retry settings, when parsed, then their defaults fill in and bad values are named by key', () => {
    const config = parseConfig(valid, 'test.yaml', {});
    expect(config.api.max_billed_in_flight).toBeUndefined();
    expect(config.batch.retry_billed_failures).toBe(1);
    const set = parseConfig(
      `${valid}batch: { retry_billed_failures: 0 }\n`.replace('api_key:', 'max_billed_in_flight: 1\n  api_key:'),
      'test.yaml',
      {},
    );
    expect([set.api.max_billed_in_flight, set.batch.retry_billed_failures]).toEqual([1, 0]);
    const problems = problemsOf(
      `${valid}batch: { retry_billed_failures: 4 }\n`.replace('api_key:', 'max_billed_in_flight: 0\n  api_key:'),
    );
    expect(problems.some((p) => p.startsWith('api.max_billed_in_flight:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('batch.retry_billed_failures:'))).toBe(true);
  });

  it('given a DuckDB file named like the schema, when parsed, then it passes (the file is attached under a catalog of its own)', () => {
    const withPath = (path: string, schema = '') =>
      valid.replace(
        'destination: { type: duckdb, path: data/x.duckdb }',
        `destination: { type: duckdb, path: ${path}${schema} }`,
      );
    for (const path of ['seedline.duckdb', 'data/Seedline.v1.duckdb', 'seedline', 'warehouse.duckdb'])
      expect(problemsOf(withPath(path)), path).toEqual([]);
    expect(problemsOf(withPath('own.duckdb', ', schema: own'))).toEqual([]);
  });

  it('given mistyped keys, when parsed, then each unknown key names the closest known one', () => {
    const typos = valid
      .replace('refresh_after: 7d', 'refesh_after: 7d')
      .replace('budget: { max_credits_per_run: 100 }', 'budget: { max_credits_per_runn: 100 }')
      .replace('activity: { kinds: [posts] }', 'activty: {}');
    expect(problemsOf(typos)).toEqual([
      'streams.profiles: unknown key "refesh_after" (did you mean "refresh_after"?)',
      'streams: unknown key "activty" (did you mean "activity"?)',
      'budget: unknown key "max_credits_per_runn" (did you mean "max_credits_per_run"?)',
    ]);
    expect(problemsOf(valid.replace('budget: { max_credits_per_run: 100 }', 'budget: { nothing_like_it: 1 }'))).toEqual(
      ['budget: unknown key "nothing_like_it"'],
    );
  });

  it('given a Postgres url without its scheme, when parsed, then destination.url is refused with an example', () => {
    const withUrl = (url: string) =>
      valid.replace(
        'destination: { type: duckdb, path: data/x.duckdb }',
        `destination: { type: postgres, url: "${url}" }`,
      );
    expect(problemsOf(withUrl('127.0.0.1:5432/test')).join('\n')).toMatch(
      /^destination\.url: expected a URL such as postgres:\/\/user@127\.0\.0\.1:5432\/db/,
    );
    expect(problemsOf(withUrl('postgres://127.0.0.1:5432/test'))).toEqual([]);
    expect(problemsOf(withUrl('postgresql://u@db.example:5432/x'))).toEqual([]);
  });

  it('given a schedule group with a bad cron, when parsed (by sync and plan as by schedule), then schedule.<group>.cron is named', () => {
    const withCron = (cron: string) => `${valid}schedule: { nightly: { cron: "${cron}", streams: [profiles] } }\n`;
    expect(problemsOf(withCron('every night'))).toEqual([
      'schedule.nightly.cron: expected a cron expression of five fields (six with seconds first), such as "0 */6 * * *"',
    ]);
    expect(problemsOf(withCron('61 * * * *'))).toHaveLength(1);
    expect(problemsOf(withCron('0 3 * * *'))).toEqual([]);
  });

  it('given bad budget keys, when parsed, then each is named', () => {
    const problems = problemsOf(
      valid.replace(
        'max_credits_per_run: 100',
        'max_credits_per_run: 100, max_credits_per_month: -1, keep_balance: 1.5, max_credits_per_day: 3',
      ),
    );
    expect(problems.some((p) => p.startsWith('budget.max_credits_per_month:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('budget.keep_balance:'))).toBe(true);
    expect(problems.some((p) => p.includes('max_credits_per_day'))).toBe(true);
  });

  it('given an unknown key and a missing variable without default, when parsed, then both are reported', () => {
    const problems = problemsOf(
      valid.replace('api_key: ${SEEDLINE_API_KEY:-svc_test_demo}', 'api_key: ${MY_KEY}\n  colour: red'),
    );
    expect(problems).toContain('api: unknown key "colour"');
    expect(problems.some((p) => p.startsWith('api.api_key: environment variable MY_KEY is not set'))).toBe(true);
  });

  it('given an unknown stream, when parsed, then it is named', () => {
    expect(problemsOf(valid.replace('activity:', 'activty:'))).toContain(
      'streams: unknown key "activty" (did you mean "activity"?)',
    );
  });

  it('given a lone placeholder for a number, when parsed, then it stays a number', () => {
    const config = parseConfig(
      valid.replace('max_credits_per_run: 100', 'max_credits_per_run: "${BUDGET:-250}"'),
      'test.yaml',
      {},
    );
    expect(config.budget.max_credits_per_run).toBe(250);
    expect(
      parseConfig(valid.replace('max_credits_per_run: 100', 'max_credits_per_run: "${BUDGET}"'), 'test.yaml', {
        BUDGET: '40',
      }).budget.max_credits_per_run,
    ).toBe(40);
  });

  it('given a search with both filters and search_url, a clear-text remote URL and a bad schema name, when parsed, then each is named', () => {
    const text = valid
      .replace('base_url: sandbox', 'base_url: http://api.example.com')
      .replace(
        'destination: { type: duckdb, path: data/x.duckdb }',
        'destination: { type: duckdb, path: data/x.duckdb, schema: My-Schema }',
      )
      .replace(
        '  activity: { kinds: [posts] }',
        '  people_search: { searches: [{ id: cto, filters: { titles: [CTO] }, search_url: "https://x" }] }',
      );
    const problems = problemsOf(text);
    expect(problems.some((p) => p.startsWith('api.base_url: expected "sandbox" or an https URL'))).toBe(true);
    expect(problems.some((p) => p.startsWith('destination.schema:'))).toBe(true);
    expect(problems).toContain('streams.people_search.searches[0].filters: give exactly one of filters or search_url');
    expect(problemsOf(valid.replace('base_url: sandbox', 'base_url: http://127.0.0.1:8787'))).toEqual([]);
    expect(problemsOf(valid.replace('base_url: sandbox', 'base_url: https://api.example.com/v2'))).toEqual([]);
    expect(problemsOf(valid.replace('base_url: sandbox', 'base_url: "https:api.example.com"'))).toEqual([
      'api.base_url: expected "sandbox" or an https URL (plain http only to localhost: the API key would travel in clear text)',
    ]);
  });

  it('given headcount filters the service would refuse, when parsed, then the key is named before any call', () => {
    const problems = problemsOf(
      valid.replace('  profiles: [jane-doe]', '  headcount: [{ company_url: acme, filters: { seniorities: [boss] } }]'),
    );
    expect(problems.some((p) => p.startsWith('seeds.headcount[0].filters.seniorities[0]:'))).toBe(true);
  });

  it('given a quoted placeholder in a number key, or one holding text, when parsed, then only the lone placeholder is read as a number', () => {
    const budget = (value: string, env: NodeJS.ProcessEnv = {}) =>
      problemsOf(valid.replace('max_credits_per_run: 100', `max_credits_per_run: ${value}`), env);
    expect(budget('"${BUDGET}"', { BUDGET: 'lots' })).toEqual([
      'budget.max_credits_per_run: Invalid input: expected number, received string',
    ]);
    expect(budget('"100"')).toEqual(['budget.max_credits_per_run: Invalid input: expected number, received string']);
    expect(budget('"${A:-1}${B:-2}"')).toEqual([
      'budget.max_credits_per_run: Invalid input: expected number, received string',
    ]);
    const flags = parseConfig(
      valid.replace('refresh_after: 7d', 'refresh_after: 7d, with_followers_and_connections: "${FOLLOWERS:-true}"'),
      'test.yaml',
      {},
    );
    expect(flags.streams.profiles?.with_followers_and_connections).toBe(true);
  });
});

describe('config: ${VAR} gives text wherever the key wants text', () => {
  const signals = (tag: string, externalId: string) =>
    `${valid}signals:\n  tag: ${tag}\n  external_id: ${externalId}\n  schedule: { interval: 7d }\n  criteria: { mode: field_change, fields: [headline] }\n  targets: { from_seeds: profiles }\n`;

  it('given an API key of digits only from the environment, when parsed, then it stays the string', () => {
    expect(parseConfig(valid, 'test.yaml', { SEEDLINE_API_KEY: '123456789012' }).api.api_key).toBe('123456789012');
  });

  it('given digit-only defaults for a tag and an external_id, quoted or not, when parsed, then they stay text and keep their leading zeros', () => {
    for (const [tag, externalId] of [
      ['"${TAG:-2024}"', '"${EXT:-0042}"'],
      ['${TAG:-2024}', '${EXT:-0042}'],
    ] as const) {
      const config = parseConfig(signals(tag, externalId), 'test.yaml', {});
      expect(config.signals).toMatchObject({ tag: '2024', external_id: '0042' });
    }
    expect(parseConfig(signals('${TAG}', '"x-{key}"'), 'test.yaml', { TAG: 'true' }).signals?.tag).toBe('true');
  });

  it('given DuckDB settings from placeholders, when parsed, then they are text as the settings are', () => {
    const text = valid.replace(
      'path: data/x.duckdb }',
      'path: data/x.duckdb, settings: { threads: "${THREADS:-2}" } }',
    );
    expect(parseConfig(text, 'test.yaml', {}).destination).toMatchObject({ settings: { threads: '2' } });
  });
});

describe('config: messages inside unions and record keys', () => {
  const FORMS =
    'expected a list of seeds ([jane-doe, …]), a CSV column ({ file: seeds.csv, column: url }) or a query on the warehouse ({ sql: "select url from …" })';

  it('given a seed source of none of the three forms, when parsed, then the key is named with the forms allowed', () => {
    expect(problemsOf(valid.replace('profiles: [jane-doe]', 'profiles: jane-doe'))).toEqual([
      `seeds.profiles: ${FORMS}`,
    ]);
  });

  it('given a seed source close to one form, when parsed, then what is wrong in that form is named', () => {
    expect(problemsOf(valid.replace('profiles: [jane-doe]', 'profiles: [{ url: jane-doe }]'))).toEqual([
      'seeds.profiles[0]: Invalid input: expected string, received object',
    ]);
    expect(problemsOf(valid.replace('profiles: [jane-doe]', 'profiles: [jane-doe]\n  posts: { sql: 5 }'))).toEqual([
      'seeds.posts.sql: Invalid input: expected string, received number',
    ]);
    expect(problemsOf(valid.replace('profiles: [jane-doe]', 'profiles: { file: seeds.csv, colum: url }'))).toEqual([
      'seeds.profiles: unknown key "colum" (did you mean "column"?)',
    ]);
  });

  it('given signal targets of no allowed form, or from_seeds of another list, when parsed, then signals.targets is named with what it takes', () => {
    const targets = (value: string) =>
      problemsOf(
        `${valid}signals: { tag: t, schedule: { interval: 7d }, criteria: { mode: field_change, fields: [headline] }, targets: ${value} }\n`,
      );
    expect(targets('jane-doe')).toEqual([
      'signals.targets: expected a list of profiles ([jane-doe, …]), a CSV column ({ file: seeds.csv, column: url }), a query on the warehouse ({ sql: "select url from …" }) or every seeds.profiles seed ({ from_seeds: profiles })',
    ]);
    expect(targets('{ from_seeds: companies }')).toEqual([
      'signals.targets.from_seeds: Invalid input: expected "profiles"',
    ]);
  });

  it('given a base URL that is neither sandbox nor a URL, and an unknown destination type, when parsed, then each key says what it takes', () => {
    const problems = problemsOf(
      valid.replace('base_url: sandbox', 'base_url: nope').replace('type: duckdb', 'type: duck'),
    );
    expect(problems).toEqual([
      'api.base_url: expected "sandbox" or an https URL (plain http only to localhost: the API key would travel in clear text)',
      "destination.type: Invalid discriminator value. Expected 'duckdb' | 'postgres'",
    ]);
  });

  it('given a schedule group name with capitals, when parsed, then the group is named with the rule for names', () => {
    expect(problemsOf(`${valid}schedule: { Nightly: { cron: "0 0 * * *", streams: [profiles] } }\n`)).toEqual([
      'schedule.Nightly: expected a group name of a-z, 0-9, _ or - (at most 64)',
    ]);
  });
});

describe('config: streams and their seeds', () => {
  const head = valid.slice(0, valid.indexOf('seeds:'));
  const withStreams = (seeds: string, streams: string) => `${head}${seeds}streams:\n${streams}`;

  it('given streams enabled by a bare key (YAML null), when parsed, then they run with their defaults', () => {
    const config = parseConfig(
      withStreams('seeds: { profiles: [jane-doe] }\n', '  profiles:\n  account:\n'),
      'test.yaml',
      {},
    );
    expect(config.streams.profiles).toEqual({
      refresh_after: '7d',
      with_followers_and_connections: false,
      write_mode: 'merge',
    });
    expect(config.streams.account).toEqual({});
  });

  it('given seeded streams with no seed source, when parsed, then each seeds key is named with what to do', () => {
    expect(problemsOf(withStreams('', '  profiles: {}\n  companies: {}\n  headcount:\n  activity: {}\n'))).toEqual([
      'seeds.profiles: streams.profiles is enabled but has no seeds: add seeds.profiles (a list, { file, column } or { sql }; [] only finishes batch jobs already submitted), or remove streams.profiles',
      'seeds.companies: streams.companies is enabled but has no seeds: add seeds.companies (a list, { file, column } or { sql }; [] only finishes batch jobs already submitted), or remove streams.companies',
      'seeds.headcount: streams.headcount is enabled but has no seeds: add seeds.headcount (a list of companies, each with the filters of its series: [{ company_url: acme, filters: { seniorities: [senior] } }]; [] only finishes batch jobs already submitted), or remove streams.headcount',
    ]);
  });

  it('given jobs with neither keywords nor company seeds, when parsed, then streams.jobs is named; keywords alone or company seeds alone are enough', () => {
    const jobsProblem =
      'streams.jobs: nothing to fetch: add seeds.companies (read while streams.jobs.per_company is true), or streams.jobs.keywords';
    expect(problemsOf(withStreams('', '  jobs: {}\n'))).toEqual([jobsProblem]);
    expect(problemsOf(withStreams('seeds: { companies: [acme] }\n', '  jobs: { per_company: false }\n'))).toEqual([
      jobsProblem,
    ]);
    expect(problemsOf(withStreams('', '  jobs: { keywords: [data engineer] }\n'))).toEqual([]);
    expect(problemsOf(withStreams('seeds: { companies: [acme] }\n', '  jobs: {}\n'))).toEqual([]);
  });

  it('given an empty seed list, or streams that take no seeds, when parsed, then nothing is missing', () => {
    expect(
      problemsOf(
        withStreams('seeds: { profiles: [] }\n', '  profiles: {}\n  activity: {}\n  triggers: {}\n  usage: {}\n'),
      ),
    ).toEqual([]);
  });

  it('given every built-in stream whose partitions read seeds, enabled without any, when parsed, then each is refused by name', async () => {
    const seeded = [...(await loadManifests()).values()]
      .filter((m) => JSON.stringify(m.partitions).includes('seeds'))
      .map((m) => m.name);
    expect(seeded.sort()).toEqual(['companies', 'headcount', 'jobs', 'posts', 'profiles']);
    for (const name of seeded) {
      expect(problemsOf(withStreams('', `  ${name}: {}\n`)).join('\n')).toMatch(
        new RegExp(`^(seeds|streams)\\.${name}: `),
      );
    }
  });

  it('given seeds no configured stream reads, when parsed, then a warning names each; seeds read by Signals are not warned about', () => {
    const warnings: string[] = [];
    const text = withStreams(
      'seeds: { profiles: [jane-doe], companies: [acme], posts: [p1] }\n',
      '  jobs: { keywords: [x], per_company: false }\n',
    );
    parseConfig(
      `${text}signals: { tag: t, schedule: { interval: 7d }, criteria: { mode: field_change, fields: [headline] }, targets: { from_seeds: profiles } }\n`,
      'test.yaml',
      {},
      (line) => warnings.push(line),
    );
    expect(warnings).toEqual([
      'warning: seeds.companies: no configured stream reads these seeds (read by streams.companies, or streams.jobs): add one under streams:, or remove seeds.companies',
      'warning: seeds.posts: no configured stream reads these seeds (read by streams.posts): add one under streams:, or remove seeds.posts',
    ]);
  });
});

describe('config: paths', () => {
  it('given ~/ in the DuckDB path, a seed file and the webhook files, when parsed, then they are in the home folder', () => {
    const text = valid
      .replace('path: data/x.duckdb', 'path: ~/x.duckdb')
      .replace('profiles: [jane-doe]', 'profiles: { file: ~/seeds.csv }')
      .concat('webhooks: { secrets: [whsec_x], secrets_file: ~/secrets.jsonl, spool_dir: ~/spool }\n');
    const config = parseConfig(text, 'test.yaml', {});
    expect(config.destination).toMatchObject({ path: join(homedir(), 'x.duckdb') });
    expect(config.seeds.profiles).toEqual({ file: join(homedir(), 'seeds.csv'), column: 'url' });
    expect(config.webhooks).toMatchObject({
      secrets_file: join(homedir(), 'secrets.jsonl'),
      spool_dir: join(homedir(), 'spool'),
    });
  });

  it('given ~user in the DuckDB path, when parsed, then destination.path is refused with what to write', () => {
    expect(problemsOf(valid.replace('path: data/x.duckdb', 'path: ~bob/x.duckdb'))).toEqual([
      'destination.path: expected ~/… for a path in your home folder (~user is not expanded), or a path relative to the config file',
    ]);
  });
});

describe('config: webhooks', () => {
  it('given a webhook secret from an unset ${VAR:-}, when parsed, then the config loads (only serve needs a secret, and leaves an empty one out)', () => {
    const config = parseConfig(
      `${valid}webhooks: { secrets: ["\${ACCOUNT_WEBHOOK_SECRET:-}", whsec_kept] }\n`,
      'test.yaml',
      {},
    );
    expect(config.webhooks?.secrets).toEqual(['', 'whsec_kept']);
  });
});

describe('config: manifests', () => {
  it('given the built-in manifests, when loaded, then every stream of the issue is there and valid', async () => {
    const manifests = await loadManifests();
    expect([...manifests.keys()].sort()).toEqual(
      [
        'account',
        'activity',
        'companies',
        'company_posts',
        'company_search',
        'headcount',
        'jobs',
        'people_search',
        'post_comments',
        'post_reactions',
        'post_search',
        'posts',
        'profile_interests',
        'profile_recommendations',
        'profiles',
        'signals',
        'triggers',
        'usage',
      ].sort(),
    );
  });
});

describe('config: refresh_after of every billed stream', () => {
  const head = valid.slice(0, valid.indexOf('seeds:'));
  const seeds = 'seeds: { profiles: [jane-doe], companies: [acme], posts: [p1], headcount: [{ company_url: acme }] }\n';
  const search = '{ searches: [{ id: s1, filters: { titles: [CTO] } }] }';
  const billed = {
    profiles: '{}',
    companies: '{}',
    posts: '{}',
    headcount: '{}',
    jobs: '{}',
    activity: '{}',
    company_posts: '{}',
    people_search: search,
    company_search: search,
  };
  const withStreams = (streams: Record<string, string>) =>
    `${head}${seeds}streams:\n${Object.entries(streams)
      .map(([name, options]) => `  ${name}: ${options}\n`)
      .join('')}`;

  it('given every billed stream without refresh_after, when parsed, then each gets its documented default', () => {
    const config = parseConfig(withStreams(billed), 'test.yaml', {});
    const refresh = Object.fromEntries(
      Object.keys(billed).map((name) => [
        name,
        (config.streams as Record<string, { refresh_after?: string }>)[name]?.refresh_after,
      ]),
    );
    expect(refresh).toEqual({
      profiles: '7d',
      companies: '7d',
      posts: '7d',
      headcount: '1d',
      jobs: '1d',
      activity: '1d',
      company_posts: '1d',
      people_search: '7d',
      company_search: '7d',
    });
  });

  it('given a refresh_after on the searches and headcount, when parsed, then it is kept', () => {
    const config = parseConfig(
      withStreams({
        headcount: '{ refresh_after: 12h }',
        people_search: `{ refresh_after: 30d, searches: [{ id: s1, filters: { titles: [CTO] } }] }`,
        company_search: `{ refresh_after: 0s, searches: [{ id: s1, search_url: "https://x" }] }`,
      }),
      'test.yaml',
      {},
    );
    expect(config.streams.headcount?.refresh_after).toBe('12h');
    expect(config.streams.people_search?.refresh_after).toBe('30d');
    expect(config.streams.company_search?.refresh_after).toBe('0s');
  });

  it('given a refresh_after that is not a duration on each billed stream, when parsed, then each is named like the other durations', () => {
    const bad = Object.fromEntries(
      Object.entries(billed).map(([name, options]) => [
        name,
        options === '{}'
          ? '{ refresh_after: weekly }'
          : options.replace('{ searches', '{ refresh_after: weekly, searches'),
      ]),
    );
    const problems = problemsOf(withStreams(bad));
    for (const name of Object.keys(billed))
      expect(problems, name).toContain(`streams.${name}.refresh_after: expected a duration such as 12h, 7d or 0s`);
  });

  it('given the built-in manifests, when loaded, then every billed stream reads its refresh_after from the config', async () => {
    const manifests = await loadManifests();
    for (const name of Object.keys(billed))
      expect(manifests.get(name)?.refresh_after, name).toBe('{{ options.refresh_after }}');
  });
});
