import { validate, compileErrors } from '@readme/openapi-parser';
import { describe, expect, it } from 'vitest';
import { useHarness } from '../helpers/sandbox.js';

const h = useHarness();

describe('GET /openapi.json', () => {
  it('given the served document, when validated by a real OpenAPI parser, then it is valid 3.1 at version 1.0.0', async () => {
    const res = await h.get('/openapi.json', { key: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.info.version).toBe('1.0.0');
    const result = await validate(structuredClone(res.body));
    expect(result.valid ? '' : compileErrors(result)).toBe('');
    const broken = structuredClone(res.body);
    broken.paths['/v1/account'].get.responses = 'none';
    expect((await validate(broken)).valid).toBe(false);
  });

  it('given every operation, when inspected, then each declares x-credits and the spec endpoints are all present', async () => {
    const doc = (await h.get('/openapi.json', { key: null })).body;
    const operations = Object.values(doc.paths as Record<string, Record<string, { 'x-credits'?: string }>>).flatMap(
      (item) => Object.values(item),
    );
    expect(operations.every((op) => typeof op['x-credits'] === 'string')).toBe(true);
    for (const path of [
      '/v1/profiles/enrich',
      '/v1/batch/{job_id}/results',
      '/v1/signals/{id}/check-now',
      '/v1/triggers',
      '/v1/usage/signals',
      '/v1/webhook-deliveries/{delivery_id}',
      '/api/api-auth/authenticate',
    ]) {
      expect(doc.paths[path]).toBeDefined();
    }
    expect(doc.paths['/v1/profiles/enrich'].post['x-credits']).toBe('1 credit per successful profile');
    expect(doc.components.schemas.Profile.properties.urn).toBeDefined();
  });
});
