import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { ConfigError } from '../../src/config/config-errors.js';
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

function problemsOf(text: string, env: NodeJS.ProcessEnv = {}): readonly string[] {
  try {
    parseConfig(text, 'test.yaml', env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('config', () => {
  it('given a valid config without the env var, when parsed, then the default applies and defaults fill in', () => {
    const config = parseConfig(valid, 'test.yaml', {});
    expect(config.api.api_key).toBe('svc_test_demo');
    expect(config.destination).toMatchObject({ type: 'duckdb', schema: 'seedline' });
    expect(config.streams.activity).toMatchObject({ kinds: ['posts'], posted_within: 'all', refresh_after: '1d' });
  });

  it('given the env var, when parsed, then it wins over the default', () => {
    expect(parseConfig(valid, 'test.yaml', { SEEDLINE_API_KEY: 'svc_live_x' }).api.api_key).toBe('svc_live_x');
  });

  it('given DuckDB settings, when parsed, then values become strings and a bad setting name is named by its key', () => {
    const withSettings = valid.replace('destination: { type: duckdb, path: data/x.duckdb }', 'destination: { type: duckdb, path: data/x.duckdb, settings: { memory_limit: 128MB, threads: 1 } }');
    expect(parseConfig(withSettings, 'test.yaml', {}).destination).toMatchObject({ settings: { memory_limit: '128MB', threads: '1' } });
    const bad = valid.replace('destination: { type: duckdb, path: data/x.duckdb }', 'destination: { type: duckdb, path: data/x.duckdb, settings: { "Memory Limit": 1 } }');
    expect(problemsOf(bad).join('\n')).toMatch(/destination\.settings.*expected a DuckDB setting name/);
  });

  it('given bad values, when parsed, then every problem names its exact key', () => {
    const problems = problemsOf(valid.replace('refresh_after: 7d', 'refresh_after: soon').replace('kinds: [posts]', 'kinds: [likes]').replace('max_credits_per_run: 100', 'max_credits_per_run: lots'));
    expect(problems.some((p) => p.startsWith('streams.profiles.refresh_after:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('streams.activity.kinds[0]:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('budget.max_credits_per_run:'))).toBe(true);
  });

  it('given bad budget keys, when parsed, then each is named', () => {
    const problems = problemsOf(valid.replace('max_credits_per_run: 100', 'max_credits_per_run: 100, max_credits_per_month: -1, keep_balance: 1.5, max_credits_per_day: 3'));
    expect(problems.some((p) => p.startsWith('budget.max_credits_per_month:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('budget.keep_balance:'))).toBe(true);
    expect(problems.some((p) => p.includes('max_credits_per_day'))).toBe(true);
  });

  it('given an unknown key and a missing variable without default, when parsed, then both are reported', () => {
    const problems = problemsOf(valid.replace('api_key: ${SEEDLINE_API_KEY:-svc_test_demo}', 'api_key: ${MY_KEY}\n  colour: red'));
    expect(problems).toContain('api: unknown key "colour"');
    expect(problems.some((p) => p.startsWith('api.api_key: environment variable MY_KEY is not set'))).toBe(true);
  });

  it('given an unknown stream, when parsed, then it is named', () => {
    expect(problemsOf(valid.replace('activity:', 'activty:'))).toContain('streams: unknown key "activty"');
  });

  it('given a lone placeholder for a number, when parsed, then it stays a number', () => {
    const config = parseConfig(valid.replace('max_credits_per_run: 100', 'max_credits_per_run: "${BUDGET:-250}"'), 'test.yaml', {});
    expect(config.budget.max_credits_per_run).toBe(250);
    expect(parseConfig(valid.replace('max_credits_per_run: 100', 'max_credits_per_run: "${BUDGET}"'), 'test.yaml', { BUDGET: '40' }).budget.max_credits_per_run).toBe(40);
  });

  it('given a search with both filters and search_url, a clear-text remote URL and a bad schema name, when parsed, then each is named', () => {
    const text = valid
      .replace('base_url: sandbox', 'base_url: http://api.example.com')
      .replace('destination: { type: duckdb, path: data/x.duckdb }', 'destination: { type: duckdb, path: data/x.duckdb, schema: My-Schema }')
      .replace('  activity: { kinds: [posts] }', '  people_search: { searches: [{ id: cto, filters: { titles: [CTO] }, search_url: "https://x" }] }');
    const problems = problemsOf(text);
    expect(problems.some((p) => p.startsWith('api.base_url: expected "sandbox" or an https URL'))).toBe(true);
    expect(problems.some((p) => p.startsWith('destination.schema:'))).toBe(true);
    expect(problems).toContain('streams.people_search.searches[0].filters: give exactly one of filters or search_url');
    expect(problemsOf(valid.replace('base_url: sandbox', 'base_url: http://127.0.0.1:8787'))).toEqual([]);
  });

  it('given headcount filters the service would refuse, when parsed, then the key is named before any call', () => {
    const problems = problemsOf(valid.replace('  profiles: [jane-doe]', '  headcount: [{ company_url: acme, filters: { seniorities: [boss] } }]'));
    expect(problems.some((p) => p.startsWith('seeds.headcount[0].filters.seniorities[0]:'))).toBe(true);
  });

  it('given the built-in manifests, when loaded, then every stream of the issue is there and valid', async () => {
    const manifests = await loadManifests();
    expect([...manifests.keys()].sort()).toEqual(
      ['account', 'activity', 'companies', 'company_posts', 'company_search', 'headcount', 'jobs', 'people_search', 'posts', 'profiles', 'signals', 'triggers', 'usage'].sort(),
    );
  });
});
