import { describe, expect, it } from 'vitest';
import { CostModel, parseCreditText } from '../../src/engine/books/cost-model.js';
import { costOfCall } from '../../src/engine/service-calls.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { StreamManifest } from '../../src/manifest/manifest-schema.js';
import { renderTemplate } from '../../src/manifest/template.js';
import { buildOpenApiDocument } from '../../src/sandbox/openapi.js';
import { compileCost } from '../../src/manifest/components/requester.js';

const manifests = await loadManifests();
const costOf = (stream: string) => compileCost(manifests.get(stream)!.cost);

describe('cost model', () => {
  it("given the spec's credit texts, when parsed, then each gives its credits, unit and page size", () => {
    expect(parseCreditText('1 credit per successful profile')).toEqual({ credits: 1, unit: 'call', pageSize: 25 });
    expect(parseCreditText('2 credits per page scraped (up to 25 results per page); empty pages free')).toEqual({
      credits: 2,
      unit: 'page',
      pageSize: 25,
    });
    expect(parseCreditText('1 credit per job returned; zero-result queries free')).toEqual({
      credits: 1,
      unit: 'result',
      pageSize: 25,
    });
    expect(parseCreditText('submission free; each item bills at its operation rate')).toEqual({
      credits: 0,
      unit: 'free',
      pageSize: 25,
    });
  });

  it('given the spec states 2 and an earlier 1 credit per company-search page, when parsed, then the worst case takes 2', () => {
    expect(
      parseCreditText(
        '2 credits per page scraped (up to 25 results per page); empty pages free. An earlier description states 1 credit per page.',
      ).credits,
    ).toBe(2);
  });

  it("given the built-in manifests' costs, when a people search of max_results 100 is priced, then it reserves 4 pages of 2 credits; an enrichment 1; a feed page 2; a job search 1 per result", () => {
    const costs = CostModel.builtIn();
    expect(costOfCall(costs, costOf('people_search'), '/v1/search/people', { max_results: 100 })).toEqual({
      worst: 8,
      expected: 8,
    });
    expect(costOfCall(costs, costOf('people_search'), '/v1/search/people', {}).worst).toBe(2);
    expect(costOfCall(costs, costOf('profiles'), '/v1/profiles/enrich', { url: 'jane' })).toEqual({
      worst: 1,
      expected: 1,
    });
    expect(costOfCall(costs, costOf('people_search'), '/v1/search/people/sales-nav', { max_results: 60 }).worst).toBe(
      6,
    );
    expect(costOfCall(costs, costOf('activity'), '/v1/profiles/activity', { kind: 'posts' }).worst).toBe(2);
    expect(costOfCall(costs, costOf('jobs'), '/v1/search/jobs', { keywords: ['x'] }).worst).toBe(25);
    expect(costOfCall(costs, costOf('account'), '/v1/account', {}).worst).toBe(0);
  });

  it('given a manifest that states no cost, or credits without a unit that bills, when validated, then it is refused instead of taken as free', () => {
    const base = {
      type: 'request',
      name: 'x',
      request: { path: '/v1/x' },
      records: 'data',
      table: { name: 'x', schema: 'post' },
    };
    expect(StreamManifest.safeParse(base).error?.issues.map((i) => i.path.join('.'))).toContain('cost');
    expect(
      StreamManifest.safeParse({ ...base, cost: { per: 'page' } }).error?.issues.map(
        (i) => `${i.path.join('.')}: ${i.message}`,
      ),
    ).toContain('cost.credits: expected credits above 0 (or per: free)');
  });

  it("given the sandbox's OpenAPI document, when read, then its x-credits give every built-in manifest's cost for its path", () => {
    const fromService = CostModel.fromOpenApi(buildOpenApiDocument());
    expect(fromService.source).toBe('openapi');
    const checked: string[] = [];
    for (const manifest of manifests.values()) {
      const path =
        manifest.type === 'batch'
          ? manifest.single?.path
          : renderTemplate(manifest.request.path, { partition: { variant: 'default' } });
      if (manifest.cost.per === 'free' || typeof path !== 'string') continue;
      checked.push(manifest.name);
      const { credits, per, page_size } = manifest.cost;
      expect([manifest.name, fromService.operation(path)]).toEqual([
        manifest.name,
        { credits, unit: per, pageSize: page_size },
      ]);
    }
    expect(checked.length).toBeGreaterThanOrEqual(10);
  });

  it('given an OpenAPI document that prices an operation higher, when read, then the higher figure is used; a lower one never lowers a worst case', () => {
    const doc = (text: string) => ({ paths: { '/v1/profiles/enrich': { post: { 'x-credits': text } } } });
    expect(
      costOfCall(
        CostModel.fromOpenApi(doc('3 credits per successful profile')),
        costOf('profiles'),
        '/v1/profiles/enrich',
        {},
      ).worst,
    ).toBe(3);
    expect(costOfCall(CostModel.fromOpenApi(doc('free')), costOf('profiles'), '/v1/profiles/enrich', {}).worst).toBe(1);
    expect(CostModel.fromOpenApi({ not: 'openapi' }).source).toBe('built-in');
    expect(CostModel.fromOpenApi(null).source).toBe('built-in');
  });

  it('given an OpenAPI document wording a per-page price the parser reads as per call, when a large search is priced, then it still reserves every page', () => {
    const doc = { paths: { '/v1/search/people': { post: { 'x-credits': '2 credits per scraped page' } } } };
    expect(
      costOfCall(CostModel.fromOpenApi(doc), costOf('people_search'), '/v1/search/people', { max_results: 1000 }).worst,
    ).toBe(80);
  });
});
