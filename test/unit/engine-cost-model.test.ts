import { describe, expect, it } from 'vitest';
import { CostModel, parseCreditText, SPEC_CREDIT_TEXTS } from '../../src/engine/cost-model.js';
import { StreamDefinitionError } from '../../src/engine/engine-errors.js';
import { buildOpenApiDocument } from '../../src/sandbox/openapi.js';

describe('cost model', () => {
  it('given the spec table texts, when parsed, then each gives its credits, unit and page size', () => {
    expect(parseCreditText(SPEC_CREDIT_TEXTS['/v1/profiles/enrich']!)).toEqual({ credits: 1, unit: 'call', pageSize: 25 });
    expect(parseCreditText(SPEC_CREDIT_TEXTS['/v1/search/people']!)).toEqual({ credits: 2, unit: 'page', pageSize: 25 });
    expect(parseCreditText(SPEC_CREDIT_TEXTS['/v1/search/jobs']!)).toEqual({ credits: 1, unit: 'result', pageSize: 25 });
    expect(parseCreditText('submission free; each item bills at its operation rate')).toEqual({ credits: 0, unit: 'free', pageSize: 25 });
  });

  it('given the spec states 2 and an earlier 1 credit per company-search page, when parsed, then the worst case takes 2', () => {
    expect(parseCreditText(SPEC_CREDIT_TEXTS['/v1/search/companies']!).credits).toBe(2);
  });

  it('given a people search of max_results 100, when priced, then it reserves 4 pages of 2 credits; an enrichment 1; a sales-nav item its max_results-sized reservation', () => {
    const costs = CostModel.builtIn();
    expect(costs.callCost('searchPeople', { body: { max_results: 100 }, variant: 'default' })).toEqual({ worst: 8, expected: 8 });
    expect(costs.callCost('searchPeople', { body: {} }).worst).toBe(2);
    expect(costs.itemCost('profiles.enrich', { url: 'jane' })).toEqual({ worst: 1, expected: 1 });
    expect(costs.itemCost('search.people.sales_nav', { max_results: 60 }).worst).toBe(6);
    expect(costs.callCost('profileActivity', { kind: 'posts' }).worst).toBe(2);
    expect(costs.callCost('searchJobs', { keywords: ['x'] }).worst).toBe(25);
    expect(costs.callCost('getAccount', {}).worst).toBe(0);
  });

  it('given a call or operation it cannot price, when asked, then it refuses instead of treating it as free', () => {
    const costs = CostModel.builtIn();
    expect(() => costs.callCost('scrapeEverything', {})).toThrow(StreamDefinitionError);
    expect(() => costs.itemCost('profiles.scrape', {})).toThrow(/no credit cost is known for the batch operation "profiles.scrape"/);
  });

  it("given the sandbox's OpenAPI document, when read, then its x-credits give the same costs as the built-in spec table", () => {
    const fromService = CostModel.fromOpenApi(buildOpenApiDocument());
    const builtIn = CostModel.builtIn();
    expect(fromService.source).toBe('openapi');
    for (const path of Object.keys(SPEC_CREDIT_TEXTS)) expect([path, fromService.operation(path)]).toEqual([path, builtIn.operation(path)]);
  });

  it('given an OpenAPI document that prices an operation higher, when read, then the higher figure is used; a lower one never lowers a worst case', () => {
    const doc = (text: string) => ({ paths: { '/v1/profiles/enrich': { post: { 'x-credits': text } } } });
    expect(CostModel.fromOpenApi(doc('3 credits per successful profile')).itemCost('profiles.enrich', {}).worst).toBe(3);
    expect(CostModel.fromOpenApi(doc('free')).itemCost('profiles.enrich', {}).worst).toBe(1);
    expect(CostModel.fromOpenApi({ not: 'openapi' }).source).toBe('built-in');
    expect(CostModel.fromOpenApi(null).source).toBe('built-in');
  });

  it('given an OpenAPI document wording a per-page price the parser reads as per call, when a large search is priced, then it still reserves every page', () => {
    const doc = { paths: { '/v1/search/people': { post: { 'x-credits': '2 credits per scraped page' } } } };
    expect(CostModel.fromOpenApi(doc).callCost('searchPeople', { body: { max_results: 1000 } }).worst).toBe(80);
  });
});
