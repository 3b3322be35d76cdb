import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';

async function problemsOf(streams: Record<string, unknown>, seeds: Record<string, unknown> = {}): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'seedline-request-check-'));
  const path = join(dir, 'seedline.yaml');
  await writeFile(
    path,
    JSON.stringify({
      api: { base_url: 'sandbox', api_key: 'svc_test_x' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      seeds,
      streams,
    }),
  );
  try {
    await loadConfig(path, {}, () => {});
    return [];
  } catch (error) {
    return (error as { problems?: string[] }).problems ?? [String(error)];
  }
}

// Issue 21, item 3: a request option the service would refuse is found when the config loads, not at run time.
describe('requests checked when the config loads', () => {
  it('given a people search with a filter the endpoint does not take, when loaded, then the problem names the search entry and the filter', async () => {
    const problems = await problemsOf({
      people_search: {
        searches: [
          { id: 'ok', filters: { titles: ['CTO'] } },
          { id: 'bad', filters: { titlez: ['CTO'] } },
        ],
      },
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^streams\.people_search\.searches\[1\]: the service would refuse the request POST \/v1\/search\/people .*filters.*titlez/,
    );
  });

  it('given a company search with empty filters, when loaded, then it is refused before any call', async () => {
    const problems = await problemsOf({ company_search: { searches: [{ id: 'none', filters: {} }] } });
    expect(problems).toEqual([
      expect.stringMatching(/^streams\.company_search\.searches\[0\]: .*at least one filter is required/),
    ]);
  });

  it('given the jobs filters, profile fields and company fields the client supports, when loaded, then they pass; a bad seniority is refused by the option', async () => {
    expect(
      await problemsOf(
        {
          jobs: {
            keywords: ['data'],
            per_company: true,
            locations: ['Berlin'],
            seniority: ['senior'],
            function: ['engineering'],
            workplace_type: ['remote'],
          },
          profiles: { fields: ['headline', 'skills'] },
          companies: { fields: ['name'] },
        },
        { profiles: ['ada-lovelace'], companies: ['acme'] },
      ),
    ).toEqual([]);
    expect((await problemsOf({ jobs: { keywords: ['data'], seniority: ['intern'] } }))[0]).toMatch(
      /^streams\.jobs\.seniority\[0\]: /,
    );
  });

  it('given headcount with an empty entry list, when loaded, then it loads (a sync then only finishes jobs already submitted)', async () => {
    expect(await problemsOf({ headcount: {} }, { headcount: [] })).toEqual([]);
    expect(await problemsOf({ headcount: {} }, { headcount: [{ company_url: 'acme' }] })).toEqual([]);
  });
});
