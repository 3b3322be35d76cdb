import { describe, expect, it } from 'vitest';
import { manifestsSync } from '../../src/manifest/load-manifests.js';
import { StreamManifest } from '../../src/manifest/manifest-schema.js';
import { templateProblems } from '../../src/manifest/template-scopes.js';
import { templateReferences } from '../../src/manifest/template.js';
import { closestName } from '../../src/util/closest-name.js';

const manifest = (node: Record<string, unknown>) =>
  StreamManifest.parse({
    type: 'request',
    name: 'probe',
    request: { path: '/v1/search/posts', body: { keywords: '{{ partition.keywords }}' } },
    cost: { credits: 2, per: 'page' },
    records: 'data.posts',
    table: { name: 'probe', schema: 'post' },
    ...node,
  });

describe('template references', () => {
  it('given strings, lists, objects and a $switch, then each {{ path }} is found with its key path', () => {
    expect(
      templateReferences(
        {
          a: ['x {{ partition.url }} y {{ options.n }}'],
          b: { $switch: '{{ partition.kind }}', cases: { p: '{{ run.id }}' } },
        },
        ['request', 'body'],
      ),
    ).toEqual([
      { path: ['partition', 'url'], at: ['request', 'body', 'a', 0] },
      { path: ['options', 'n'], at: ['request', 'body', 'a', 0] },
      { path: ['partition', 'kind'], at: ['request', 'body', 'b', '$switch'] },
      { path: ['run', 'id'], at: ['request', 'body', 'b', 'cases', 'p'] },
    ]);
  });
});

describe('template scopes', () => {
  it('given the built-in manifests, then none reads anything its place does not give', () => {
    for (const builtIn of manifestsSync().values()) expect(templateProblems(builtIn), builtIn.name).toEqual([]);
  });

  it('given a union of seeds and a single search, then partition gives every branch its fields', () => {
    const union = manifest({
      partitions: {
        type: 'union',
        of: [
          { type: 'seeds', seeds: 'companies', as: 'company_url' },
          { type: 'single', values: { keywords: '{{ options.words }}' } },
        ],
      },
      options: { words: { type: 'array' } },
      table: {
        name: 'probe',
        schema: 'post',
        columns: { c: '{{ partition.company_url }}', s: '{{ partition.seed }}' },
      },
    });
    expect(templateProblems(union)).toEqual([]);
  });

  it('given a cap notice, a count and args, then they read; a paginator reading state does not', () => {
    const capped = manifest({
      options: { max_pages: { type: 'integer' } },
      partitions: { type: 'months', count: 2 },
      request: { path: '/v1/usage', method: 'GET', query: { from: '{{ partition.from }}', to: '{{ partition.to }}' } },
      cap: { type: 'hold_window', at: '{{ args.from }}', notice: '{{ count }} from {{ partition.key }}' },
      paginator: { type: 'page_token', max_pages: '{{ state.newest }}' },
    });
    expect(templateProblems(capped)).toEqual([
      {
        keys: ['paginator', 'max_pages'],
        message: '{{ state.newest }}: nothing named "state" can be read here (it may read: options, partition)',
      },
    ]);
  });

  it('given a typical size that reads a partition field or an option of a typo, then each is refused with a did-you-mean', () => {
    const typical = manifest({
      options: { window: { enum: ['week', 'all'] } },
      partitions: { type: 'seeds', seeds: 'companies', as: 'company_url' },
      request: { path: '/v1/search/posts', body: { keywords: '{{ partition.company_url }}' } },
      typical: {
        records: { $switch: '{{ partition.compny_url }}', cases: { posts: '{{ options.windw }}' }, default: 40 },
      },
    });
    expect(templateProblems(typical)).toEqual([
      {
        keys: ['typical', 'records', '$switch'],
        message:
          '{{ partition.compny_url }}: partition has no "compny_url" here (it may read: company_url, key, seed); did you mean "company_url"?',
      },
      {
        keys: ['typical', 'records', 'cases', 'posts'],
        message:
          '{{ options.windw }}: options has no "windw" here (it may read: schema_contract, window); did you mean "window"?',
      },
    ]);
  });

  it('given a list of objects whose option declares its properties, then a property typo is refused', () => {
    const searches = manifest({
      options: {
        searches: {
          type: 'array',
          items: { type: 'object', additionalProperties: false, properties: { id: {}, keywords: {} } },
        },
      },
      partitions: { type: 'list', values: '{{ options.searches }}', key: '{{ item.idd }}' },
      request: { path: '/v1/search/posts', body: { keywords: '{{ partition.kewords }}' } },
    });
    expect(templateProblems(searches).map((problem) => problem.message)).toEqual([
      '{{ item.idd }}: item has no "idd" here (it may read: id, keywords); did you mean "id"?',
      '{{ partition.kewords }}: partition has no "kewords" here (it may read: id, key, keywords); did you mean "keywords"?',
    ]);
  });
});

describe('list items', () => {
  it('given scalar items, then the key reads the item whole and partition.value is the item', () => {
    const topics = (key: string) =>
      manifest({
        options: { topics: { type: 'array', items: { type: 'string' } } },
        partitions: { type: 'list', values: '{{ options.topics }}', key },
        request: { path: '/v1/search/posts', body: { keywords: '{{ partition.value }}' } },
      });
    expect(templateProblems(topics('{{ item }}'))).toEqual([]);
    expect(templateProblems(topics('{{ item.value }}')).map((problem) => problem.message)).toEqual([
      '{{ item.value }}: item has no "value" here (nothing can be read)',
    ]);
  });

  it('given object items that allow more properties, then any field of theirs reads', () => {
    const open = manifest({
      options: { searches: { type: 'array', items: { type: 'object', properties: { id: {} } } } },
      partitions: { type: 'list', values: '{{ options.searches }}', key: '{{ item.id }}' },
      request: { path: '/v1/search/posts', body: { keywords: '{{ partition.words }}' } },
    });
    expect(templateProblems(open)).toEqual([]);
  });
});

describe('closest name', () => {
  it('given a table name reading the run, or a template reading a seed list whole, then each is refused; entries the manifest declares read', () => {
    const problems = templateProblems(
      manifest({
        table: { name: 'probe_{{ run.id }}', schema: 'post', columns: { run: '{{ run.id }}' } },
        seeds: { topics: { entries: 'headcount_entry' } },
        partitions: {
          type: 'union',
          of: [
            { type: 'list', values: '{{ seeds.profiles }}', key: '{{ item }}' },
            { type: 'list', values: '{{ seeds.topics }}', key: '{{ item.company_url }}' },
          ],
        },
      }),
    );
    expect(problems.map((p) => [p.keys.join('.'), p.message.split(':')[0]])).toEqual([
      ['partitions.of.0.values', '{{ seeds.profiles }}'],
      ['table.name', '{{ run.id }}'],
    ]);
  });

  it('given a typo, a swap or nothing alike, then the close name or none', () => {
    expect(closestName('kwords', ['id', 'keywords'])).toBe('keywords');
    expect(closestName('vaule', ['key', 'value'])).toBe('value');
    expect(closestName('zzz', ['key', 'value'])).toBeUndefined();
  });
});
