import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../src/manifest/template.js';
import { seedKey } from '../../src/util/seed-keys.js';
import { Budget, cutToFit } from '../../src/engine/books/budget.js';
import { BudgetExhaustedError, InsufficientBalanceError } from '../../src/engine/engine-errors.js';
import { resolvePartitions, type OptionsAndContext as PartitionContext } from '../helpers/partition-nodes.js';
import { CostModel } from '../../src/engine/books/cost-model.js';
import { costOfCall } from '../../src/engine/service-calls.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { parseDuration } from '../../src/util/duration.js';
import { parseCsv } from '../../src/util/csv-rows.js';
import { stableJson } from '../../src/util/stable-json.js';
import type { Destination, RunRow } from '../../src/destinations/destination.js';
import { creditsThisMonth } from '../../src/engine/pipeline.js';
import { creditsOf, errorType } from '../../src/engine/service-calls.js';
import { compileCost } from '../../src/manifest/components/requester.js';
import { serviceErrorFrom } from '../../src/client/errors.js';

const context = (over: Partial<PartitionContext> = {}): PartitionContext => ({
  options: {},
  seeds: {},
  readTable: async () => [],
  now: new Date('2026-11-15T12:00:00Z'),
  ...over,
});

describe('templates', () => {
  it('given a whole-value placeholder, when rendered, then the value keeps its type', () => {
    expect(renderTemplate('{{ options.max }}', { options: { max: 25 } })).toBe(25);
    expect(renderTemplate({ kinds: '{{ options.kinds }}' }, { options: { kinds: ['posts'] } })).toEqual({
      kinds: ['posts'],
    });
  });

  it('given embedded placeholders, when rendered, then they are interpolated as text', () => {
    expect(renderTemplate('activity_{{ partition.kind }}', { partition: { kind: 'comments' } })).toBe(
      'activity_comments',
    );
  });

  it('given one template rendered again and again, when the contexts differ, then each rendering reads its own context', () => {
    const contexts = [
      { partition: { kind: 'posts', n: 1 } },
      { partition: { kind: 'comments', n: 2 } },
      { partition: {} },
    ];
    for (let round = 0; round < 2; round++) {
      expect(contexts.map((c) => renderTemplate('{{ partition.n }}', c))).toEqual([1, 2, undefined]);
      expect(contexts.map((c) => renderTemplate('activity_{{ partition.kind }}', c))).toEqual([
        'activity_posts',
        'activity_comments',
        'activity_',
      ]);
      expect(contexts.map((c) => renderTemplate('profiles', c))).toEqual(['profiles', 'profiles', 'profiles']);
    }
  });

  it('given a placeholder with no value, when rendered in an object, then the key is dropped', () => {
    expect(
      renderTemplate({ url: '{{ partition.url }}', urn: '{{ partition.urn }}' }, { partition: { url: 'u' } }),
    ).toEqual({ url: 'u' });
  });
});

describe('seed keys', () => {
  it('given the same profile written three ways, when keyed, then the keys are equal', () => {
    const keys = [
      'https://www.network.example/in/Jane-Doe/?trk=abc',
      'jane-doe',
      'https://other.example/in/jane%2Ddoe',
    ].map((s) => seedKey('profile', s));
    expect(new Set(keys)).toEqual(new Set(['jane-doe']));
  });

  it('given a company URL with a sub-page, when keyed, then the slug after /company/ is the key', () => {
    expect(seedKey('company', 'https://www.network.example/company/Acme/about/')).toBe('acme');
  });
});

describe('budget', () => {
  it('given reservations up to the limit, when one more is asked, then it is refused and nothing is spent past the limit', () => {
    const budget = new Budget(10);
    const first = budget.reserve(6);
    expect(() => budget.reserve(5)).toThrow(BudgetExhaustedError);
    first.settle(2);
    expect(budget.spent).toBe(2);
    expect(budget.remaining).toBe(8);
    expect(cutToFit([3, 3, 3], (n) => n, budget.remaining).take).toHaveLength(2);
  });

  it('given several limits, when the budget is built, then the tightest binds and a 402 stops every further reservation', () => {
    const budget = new Budget({ perRun: 50, monthLeft: 20, balanceLeft: 30 });
    expect([budget.limit, budget.limitName]).toEqual([20, 'budget.max_credits_per_month']);
    const open = budget.reserve(5);
    budget.exhaust('balance too low');
    budget.noteBalance(3);
    expect(() => budget.reserve(1)).toThrow(
      /402 insufficient_credits: balance too low.*the account balance is 3 credits.*Top up the account/,
    );
    expect(budget.stopError(1).message).not.toMatch(/keep_balance|max_credits/);
    open.settle(5);
    expect(budget.spent).toBe(5);
    expect(budget.refusedByService).toBe(true);
  });

  it('given a 402 while a reservation is in flight, when that reservation settles below its worst case, then no paid reservation fits afterwards (free calls still go)', () => {
    const budget = new Budget(undefined);
    const inFlight = budget.reserve(8);
    budget.exhaust('balance too low');
    inFlight.settle(2);
    expect(() => budget.reserve(6)).toThrow(InsufficientBalanceError);
    expect(() => budget.reserve(1)).toThrow(/402/);
    expect(budget.remaining).toBe(0);
    budget.reserve(0).settle(0);
    expect(budget.spent).toBe(2);
  });

  it('given no limit, when reserving, then everything fits', () => {
    const budget = new Budget(undefined);
    budget.reserve(1_000_000).settle(7);
    expect(budget.spent).toBe(7);
    expect(budget.remaining).toBe(Infinity);
  });
});

describe('partitions', () => {
  it('given seeds that name one profile twice, when resolved, then one partition per key keeps the first seed', async () => {
    const parts = await resolvePartitions(
      { type: 'seeds', seeds: 'profiles', as: 'url', seed_kind: 'profile' },
      context({ seeds: { profiles: ['https://x/in/a-b/', 'a-b', 'c-d'] } }),
    );
    expect(parts.map((p) => [p.key, p.values.url])).toEqual([
      ['a-b', 'https://x/in/a-b/'],
      ['c-d', 'c-d'],
    ]);
  });

  it('given parent rows and an expand list, when resolved, then each row is crossed with each value', async () => {
    const parts = await resolvePartitions(
      {
        type: 'parent',
        table: 'profiles',
        columns: ['url', 'urn'],
        key: '{{ row.url }}',
        expand: { kind: '{{ options.kinds }}' },
      },
      context({ options: { kinds: ['posts', 'comments'] }, readTable: async () => [{ url: 'u1', urn: 'n1' }] }),
    );
    expect(parts.map((p) => p.key)).toEqual(['u1|kind=posts', 'u1|kind=comments']);
    expect(parts[1]!.values).toMatchObject({ url: 'u1', urn: 'n1', kind: 'comments' });
  });

  it('given a union with a false `when`, when resolved, then that branch adds nothing', async () => {
    const parts = await resolvePartitions(
      {
        type: 'union',
        of: [
          {
            type: 'seeds',
            seeds: 'companies',
            as: 'company_url',
            seed_kind: 'company',
            when: '{{ options.per_company }}',
          },
          { type: 'single', values: { keywords: '{{ options.keywords }}' }, when: '{{ options.keywords }}' },
        ],
      },
      context({ options: { per_company: false, keywords: ['data'] }, seeds: { companies: ['acme'] } }),
    );
    expect(parts).toEqual([{ key: '*', values: { keywords: ['data'], key: '*' } }]);
  });

  it('given two months, when resolved mid-month, then the past month is final and the open one is not', async () => {
    const parts = await resolvePartitions({ type: 'months', count: 2 }, context());
    expect(parts.map((p) => [p.key, p.final])).toEqual([
      ['2026-10-01T00:00:00.000Z', true],
      ['2026-11-01T00:00:00.000Z', false],
    ]);
  });
});

describe('small parsers', () => {
  it('given durations, when parsed, then they are milliseconds; junk is refused', () => {
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('0s')).toBe(0);
    expect(() => parseDuration('seven days')).toThrow(/not a duration/);
  });

  it('given quoted CSV, when parsed, then quotes, commas and CRLF are handled', () => {
    expect(parseCsv('url,note\r\n"https://x/in/a","say ""hi"", ok"\r\nb,\n')).toEqual([
      ['url', 'note'],
      ['https://x/in/a', 'say "hi", ok'],
      ['b', ''],
    ]);
  });

  it('given objects with keys in another order, when serialised stably, then the text is equal', () => {
    expect(stableJson({ b: 1, a: { d: 2, c: [3] } })).toBe(stableJson({ a: { c: [3], d: 2 }, b: 1 }));
  });

  it('given a search of 60 results and a job search of 10, when priced, then pages of 25 cost 2 each and jobs 1 each', async () => {
    const costs = CostModel.builtIn();
    const manifests = await loadManifests();
    expect(
      costOfCall(costs, compileCost(manifests.get('people_search')!.cost), '/v1/search/people', { max_results: 60 })
        .worst,
    ).toBe(6);
    expect(
      costOfCall(costs, compileCost(manifests.get('jobs')!.cost), '/v1/search/jobs', { max_results: 10 }).worst,
    ).toBe(10);
  });
});

describe('seed keys without a scheme', () => {
  it('given a profile written without https, with www, or as a path, when keyed, then all share the slug', () => {
    const seeds = [
      'www.network.example/in/jane-doe',
      'network.example/in/Jane-Doe/',
      'in/jane-doe',
      '/in/jane-doe?trk=1',
      'jane-doe?trk=x',
    ];
    expect(new Set(seeds.map((s) => seedKey('profile', s)))).toEqual(new Set(['jane-doe']));
  });

  it('given a post with and without scheme and query, when keyed, then the keys are equal', () => {
    expect(seedKey('post', 'network.example/posts/abc?x=1')).toBe(
      seedKey('post', 'https://www.network.example/posts/abc/'),
    );
  });
});

describe('credits this month', () => {
  it('given a run that started last month and finished this one, when this month is counted, then its credits count; a run wholly last month does not', async () => {
    const runs: RunRow[] = [
      {
        runId: 'b',
        startedAt: new Date('2026-11-30T23:50:00Z'),
        finishedAt: new Date('2026-12-01T00:20:00Z'),
        status: 'partial',
        creditsUsed: 7,
      },
      {
        runId: 'a',
        startedAt: new Date('2026-11-10T00:00:00Z'),
        finishedAt: new Date('2026-11-10T01:00:00Z'),
        status: 'succeeded',
        creditsUsed: 50,
      },
    ];
    const destination = { readRuns: async () => runs } as unknown as Destination;
    expect(await creditsThisMonth(destination, new Date('2026-12-05T00:00:00Z'))).toBe(7);
    expect(await creditsThisMonth(destination, new Date('2026-11-30T23:59:00Z'))).toBe(57);
  });
});

describe('error types the spec does not name', () => {
  const answer = (status: number, type: string) =>
    serviceErrorFrom({ status, type, serviceMessage: 'x', requestId: 'req_1' });

  it.each([
    [422, 'target_gone', 'unprocessable_target', 2],
    [402, 'credits_exhausted', 'insufficient_credits', 0],
    [500, 'database_on_fire', 'internal_error', 0],
    [418, 'teapot', 'teapot', 2],
    [404, 'route_not_found', 'route_not_found', 2],
    [409, 'idempotency_request_in_progress', 'idempotency_request_in_progress', 2],
  ])(
    'given a %i answer typed %s, when the engine judges it, then it counts as %s (worst case 2 → %i credits)',
    (status, type, judged, credits) => {
      const error = answer(status, type);
      expect(errorType(error)).toBe(judged);
      expect(creditsOf(2, { error })).toBe(credits);
    },
  );

  it('given a named type, when judged, then it is that type', () => {
    expect(errorType(answer(422, 'unprocessable_target'))).toBe('unprocessable_target');
    expect(errorType(new Error('boom'))).toBeUndefined();
  });
});
