import { describe, expect, it } from 'vitest';
import { StreamDefinitionError } from '../../src/engine/engine-errors.js';
import { stampFields } from '../../src/manifest/components/incremental.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { StreamManifest } from '../../src/manifest/manifest-schema.js';

const partition = (kind: string) => ({ key: `p|${kind}`, values: { key: `p|${kind}`, kind } });

describe('incremental stamp field chosen per partition', () => {
  it('given the built-in activity manifest, when each kind is stamped, then each kind has its own field and reposts only reposted_at', async () => {
    const activity = (await loadManifests()).get('activity');
    const incremental = activity?.type === 'request' ? activity.incremental : undefined;
    if (incremental?.type !== 'newest') throw new Error('activity is a request stream with a newest cursor');
    const fields = (kind: string) => stampFields(incremental.field, 'activity')(partition(kind));
    expect([fields('posts'), fields('comments'), fields('reactions'), fields('reposts')]).toEqual([
      ['posted_at'],
      ['posted_at'],
      ['reacted_at'],
      ['reposted_at'],
    ]);
  });

  it('given a partition value with no case, when stamped, then a stream definition error names the value', () => {
    const field = { by: '{{ partition.kind }}', cases: { posts: ['posted_at'] } };
    expect(() => stampFields(field, 'activity')(partition('likes'))).toThrow(StreamDefinitionError);
    expect(() => stampFields(field, 'activity')(partition('likes'))).toThrow(/no case for "likes"/);
  });

  it('given a field switch without `by` or with an unknown key, when the manifest is validated, then it is refused', () => {
    const manifest = (field: unknown) => ({
      type: 'request',
      name: 's',
      request: { path: '/v1/profiles/activity' },
      cost: { credits: 2, per: 'page' },
      records: 'data',
      table: { name: 's', schema: 's' },
      incremental: { type: 'newest', field },
    });
    expect(StreamManifest.safeParse(manifest({ cases: { posts: 'posted_at' } })).success).toBe(false);
    expect(
      StreamManifest.safeParse(manifest({ by: '{{ partition.kind }}', cases: { posts: 'posted_at' }, default: 'x' }))
        .success,
    ).toBe(false);
    expect(
      StreamManifest.safeParse(manifest({ by: '{{ partition.kind }}', cases: { posts: 'posted_at' } })).success,
    ).toBe(true);
  });
});
