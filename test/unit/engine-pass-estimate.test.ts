import { describe, expect, it } from 'vitest';
import type { CompiledRequestStream } from '../../src/manifest/compile-stream.js';
import { compileStream } from '../../src/manifest/compile-stream.js';
import { manifestsSync } from '../../src/manifest/load-manifests.js';
import { StreamManifest } from '../../src/manifest/manifest-schema.js';
import { streamOptionsSchema } from '../../src/manifest/stream-options.js';
import { CostModel } from '../../src/engine/books/cost-model.js';
import { passCost } from '../../src/engine/request/pass-estimate.js';
import type { PartitionState } from '../../src/engine/request/partition-pass.js';
import type { StreamContext } from '../../src/engine/stream-context.js';

const builtIns = manifestsSync();

function compiled(manifest: StreamManifest, options: Record<string, unknown> = {}): CompiledRequestStream {
  return compileStream(manifest, streamOptionsSchema(manifest).parse(options)) as CompiledRequestStream;
}

const builtIn = (name: string, options: Record<string, unknown> = {}) => compiled(builtIns.get(name)!, options);

function context(fullRefresh = false): StreamContext {
  return { costs: CostModel.builtIn(), fullRefresh, now: () => new Date('2026-11-28T00:00:00Z') } as StreamContext;
}

const partition = (values: Record<string, unknown>) => ({ key: String(values.url ?? 'k'), values });

describe('the expected cost of a pass', () => {
  it('given a feed of 43 typical records, pages of 25 and max_pages 10, then a first pass expects 2 pages and 43 rows; the worst case stays 10 pages', () => {
    const stream = builtIn('profile_recommendations');
    const pass = passCost(stream, context(), partition({ url: 'u', direction: 'received' }), {});
    expect(pass).toMatchObject({ worst: 20, expected: 4, records: { worst: 250, expected: 43 } });
  });

  it('given more typical records than max_pages reads, then the expected case reads every page this run may', () => {
    const stream = builtIn('post_reactions', { max_pages: 1 });
    const pass = passCost(stream, context(), partition({ url: 'u', urn: '1' }), {});
    expect(pass).toMatchObject({ worst: 2, expected: 2, records: { worst: 25, expected: 25 } });
  });

  it('given a pass under way at its page 2, then the pages left of the typical records are expected', () => {
    const stream = builtIn('company_posts');
    const saved: PartitionState = { pending: { number: 2, token: 't' } };
    const pass = passCost(stream, context(), partition({ url: 'u' }), saved);
    // 200 typical records: 8 pages of 25, the first one read by the earlier run.
    expect(pass).toMatchObject({ expected: 14, records: { expected: 175 } });
  });

  it('given a later pass that stops at the newest item loaded, then only its first page is expected; a full refresh reads them all again', () => {
    const stream = builtIn('post_comments');
    const saved: PartitionState = { newest: '2026-11-01T00:00:00Z', completed_at: '2026-11-20T00:00:00Z' };
    const target = partition({ url: 'u', urn: '1' });
    expect(passCost(stream, context(), target, saved)).toMatchObject({ expected: 2, records: { expected: 12.5 } });
    expect(passCost(stream, context(true), target, saved)).toMatchObject({ expected: 6, records: { expected: 70 } });
  });

  it('given a search billed per result, then the typical results are expected, never more than max_results asks', () => {
    const few = passCost(builtIn('jobs', { max_results: 100 }), context(), partition({ company_url: 'c' }), {});
    expect(few).toMatchObject({ worst: 100, expected: 20, records: { worst: 100, expected: 20 } });
    const capped = passCost(builtIn('jobs', { max_results: 5 }), context(), partition({ company_url: 'c' }), {});
    expect(capped).toMatchObject({ worst: 5, expected: 5, records: { expected: 5 } });
  });

  it('given a $switch on the partition and an option, then each kind expects its own case', () => {
    const stream = builtIn('activity', { kinds: ['posts', 'comments'], posted_within: 'month', max_pages: 2 });
    const posts = passCost(stream, context(), partition({ url: 'u', urn: '1', kind: 'posts' }), {});
    const comments = passCost(stream, context(), partition({ url: 'u', urn: '1', kind: 'comments' }), {});
    expect(posts).toMatchObject({ expected: 2, records: { expected: 5 } });
    expect(comments).toMatchObject({ expected: 4, records: { expected: 50 } });
  });

  it('given no typical size, then a first pass is expected to read its first page half full', () => {
    const manifest = StreamManifest.parse({
      type: 'request',
      name: 'probe',
      request: { path: '/v1/posts/comments', body: { url: '{{ partition.url }}', per_page: 25 } },
      cost: { credits: 2, per: 'page' },
      paginator: { type: 'page_token', max_pages: 4 },
      records: 'data.comments',
      table: { name: 'probe', schema: 'post_comment' },
    });
    const pass = passCost(compiled(manifest), context(), partition({ url: 'u' }), {});
    expect(pass).toMatchObject({ worst: 8, expected: 2, records: { worst: 100, expected: 12.5 } });
  });

  it('given a typical size that is not a number, then the plan stops with an error naming the stream and the key', () => {
    const manifest = StreamManifest.parse({
      type: 'request',
      name: 'probe',
      request: { path: '/v1/posts/comments', body: { url: '{{ partition.url }}' } },
      cost: { credits: 2, per: 'page' },
      records: 'data.comments',
      typical: { records: 'many' },
      table: { name: 'probe', schema: 'post_comment' },
    });
    expect(() => passCost(compiled(manifest), context(), partition({ url: 'u' }), {})).toThrow(
      /stream "probe": typical\.records renders to "many" for u; give a number of records/,
    );
  });
});
