import { describe, expect, it } from 'vitest';
import { callKey } from '../../src/engine/books/answer-journal.js';
import { renderArgs, type PartitionState } from '../../src/engine/request/partition-pass.js';
import type { StreamContext } from '../../src/engine/stream-context.js';
import { compileStream, type CompiledRequestStream } from '../../src/manifest/compile-stream.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';

// A journaled answer is named by what its call asks apart from the clock: a jobs search whose
// answer was paid for yesterday answers the same page today, though posted_within_days moved.
const ctxAt = (now: string) => ({ fullRefresh: false, now: () => new Date(now) }) as unknown as StreamContext;
/** A built-in stream compiled with these options. */
const compiled = async (name: string, options: Record<string, unknown>) =>
  compileStream((await loadManifests()).get(name)!, options) as CompiledRequestStream;
const partition = {
  key: 'https://www.network.example/company/acme',
  values: { company_url: 'https://www.network.example/company/acme' },
};
const saved: PartitionState = { completed_at: '2026-11-20T10:00:00.000Z' };

describe('the journal key of a page call', () => {
  it('given a jobs search asked a day later, when keyed, then its arguments differ but its key does not', async () => {
    const jobs = await compiled('jobs', { max_results: 25 });
    const page = { number: 1 };
    const day1 = ctxAt('2026-11-21T09:00:00.000Z');
    const day2 = ctxAt('2026-11-22T11:00:00.000Z');
    const args1 = renderArgs(jobs, day1, partition, saved, page);
    const args2 = renderArgs(jobs, day2, partition, saved, page);
    expect((args1.filters as { posted_within_days: number }).posted_within_days).toBe(1);
    expect((args2.filters as { posted_within_days: number }).posted_within_days).toBe(3);
    const key = (ctx: StreamContext, args: Record<string, unknown>) =>
      callKey({
        name: 'searchJobs',
        partition: partition.key,
        args,
        asks: renderArgs(jobs, ctx, partition, saved, page, { withoutClock: true }),
      });
    expect(key(day1, args1)).toBe(key(day2, args2));
  });

  it('given another max_results or another page, when keyed, then the key differs', async () => {
    const ctx = ctxAt('2026-11-21T09:00:00.000Z');
    const key = (jobs: CompiledRequestStream, page: { number: number }) =>
      callKey({
        name: 'searchJobs',
        partition: partition.key,
        args: {},
        asks: renderArgs(jobs, ctx, partition, saved, page, { withoutClock: true }),
      });
    const jobs = await compiled('jobs', { max_results: 25 });
    const wider = await compiled('jobs', { max_results: 100 });
    expect(key(jobs, { number: 1 })).not.toBe(key(wider, { number: 1 }));
    const activity = await compiled('activity', { max_pages: 3 });
    const feed = { key: 'u', values: { urn: 'u', kind: 'posts', url: 'u' } };
    const pageKey = (number: number, token?: string) =>
      callKey({
        name: 'profileActivity',
        partition: 'u',
        args: {},
        asks: renderArgs(activity, ctx, feed, {}, { number, token }, { withoutClock: true }),
      });
    expect(pageKey(1)).not.toBe(pageKey(2, 't2'));
    expect(pageKey(2, 't2')).not.toBe(pageKey(2, 't3'));
  });
});
