import { describe, expect, it } from 'vitest';
import { useHarness } from '../helpers/sandbox.js';

const h = useHarness({ seed: 9, latencyMs: [10, 10], balance: 2 });

describe('admin routes under /__sandbox/', () => {
  it('given a clock advance or set, when posted, then the virtual clock moves', async () => {
    const before = (await h.get('/__sandbox/clock', { key: null })).body.data.now;
    expect(before).toBe('2026-11-01T00:00:00.000Z');
    const advanced = await h.post('/__sandbox/clock', { advance_ms: 3_600_000 }, { key: null });
    expect(advanced.body.data.now).toBe('2026-11-01T01:00:00.000Z');
    const set = await h.post('/__sandbox/clock', { set: '2026-12-01T00:00:00Z' }, { key: null });
    expect(set.body.data.now).toBe('2026-12-01T00:00:00.000Z');
    expect(h.sandbox.clock.now().toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect((await h.post('/__sandbox/clock', { advance_ms: -1 }, { key: null })).status).toBe(400);
  });

  it('given charges, when the ledger is read, then entries and the billed total are returned', async () => {
    await h.post('/v1/profiles/enrich', { url: 'ledger-lee' }, { key: 'svc_live_admin' });
    const ledger = await h.get('/__sandbox/ledger', { key: null });
    expect(ledger.body.data.total_billed).toBe(1);
    expect(ledger.body.data.entries[0]).toMatchObject({
      operation: 'profiles.enrich',
      target: 'https://www.network.example/in/ledger-lee',
      credits: 1,
      billed: true,
    });
    expect(JSON.stringify(ledger.body)).not.toContain('svc_live_admin');
  });

  it('given faults set to always 500, when a scrape is made, then it fails with internal_error; reset restores success', async () => {
    expect((await h.post('/__sandbox/faults', { '500': 1 }, { key: null })).body.data['500']).toBe(1);
    const failed = await h.post('/v1/profiles/enrich', { url: 'fault-fay' });
    expect(failed.status).toBe(500);
    expect(failed.body.error.type).toBe('internal_error');
    h.sandbox.setFaults({ upstream_error: 1 });
    const upstream = await h.post('/v1/companies/enrich', { url: 'acme' });
    expect(upstream.status).toBe(502);
    expect(upstream.body.error.type).toBe('upstream_error');
    await h.post('/__sandbox/faults', {}, { key: null });
    expect((await h.post('/v1/profiles/enrich', { url: 'fault-fay' })).status).toBe(200);
  });

  it('given deliveries, when listed, then the admin route shows them without secrets', async () => {
    const res = await h.get('/__sandbox/deliveries', { key: null });
    expect(Array.isArray(res.body.data)).toBe(true);
    expect(JSON.stringify(res.body)).not.toContain('whsec_');
  });
});

describe('forced outcomes and the balance', () => {
  it('given a slow-* slug, when enriched, then the reported latency is 3× the configured latency', async () => {
    const normal = await h.post('/v1/profiles/enrich', { url: 'quick-quinn' });
    const slow = await h.post('/v1/profiles/enrich', { url: 'slow-sam' });
    expect(normal.body.meta.latencyMs).toBe(10);
    expect(slow.body.meta.latencyMs).toBe(30);
  });

  it('given a live balance spent, when enriching, then 402 insufficient_credits and nothing is billed', async () => {
    const key = 'svc_live_broke';
    expect((await h.post('/v1/profiles/enrich', { url: 'a-one' }, { key })).status).toBe(200);
    expect((await h.post('/v1/profiles/enrich', { url: 'a-two' }, { key })).status).toBe(200);
    const refused = await h.post('/v1/profiles/enrich', { url: 'a-three' }, { key });
    expect(refused.status).toBe(402);
    expect(refused.body.error.type).toBe('insufficient_credits');
    expect(h.sandbox.ledger.countFor('profiles.enrich', 'https://www.network.example/in/a-three')).toBe(0);
  });
});
