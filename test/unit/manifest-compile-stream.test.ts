import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compilePartitions } from '../../src/manifest/components/partitions.js';
import { compileStream, compileStreams } from '../../src/manifest/compile-stream.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { packageRoot } from '../../src/util/package-root.js';

/** Every TypeScript file under a folder, with its text. */
function sources(dir: string): { file: string; text: string }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [{ file: path, text: readFileSync(path, 'utf8') }] : [];
  });
}

describe('one compiled stream', () => {
  it('given the engine source, when searched, then no file renders a template, imports the manifest language or switches on a manifest node type', () => {
    const engine = sources(join(packageRoot(), 'src', 'engine'));
    expect(engine.length).toBeGreaterThan(20);
    const offending = engine.filter(({ text }) =>
      /renderTemplate|manifest\/template|manifest-schema|(node|manifest|paginator|incremental|cap|partitions)\.type\b/.test(
        text,
      ),
    );
    expect(offending.map((o) => o.file)).toEqual([]);
  });

  it('given every built-in manifest, when compiled with its defaults, then each is a batch or request stream with every component of its kind', async () => {
    const manifests = await loadManifests();
    const compiled = [...manifests.values()].map((manifest) => compileStream(manifest, {}));
    expect(compiled.length).toBe(manifests.size);
    for (const stream of compiled) {
      expect(typeof stream.partitions.resolve).toBe('function');
      expect(typeof stream.table.nameOf).toBe('function');
      if (stream.kind === 'batch') expect(stream.items.operation).toMatch(/^[a-z_]+\.[a-z_]+$/);
      else {
        expect(typeof stream.requester.pathOf).toBe('function');
        expect(['none', 'page_token', 'cursor']).toContain(stream.paginator.name);
      }
    }
  });

  it('given options, when a request stream is compiled, then its call, page limit and refresh come from them without any render at run time', async () => {
    const manifests = await loadManifests();
    const [activity] = compileStreams(manifests, {
      activity: { kinds: ['posts'], max_pages: 3, refresh_after: '2d' },
    }).values();
    if (activity?.kind !== 'request') throw new Error('activity is a request stream');
    const partition = { key: 'u|kind=posts', values: { key: 'u|kind=posts', url: 'https://x/in/a', kind: 'posts' } };
    expect(activity.paginator.maxPages(partition)).toBe(3);
    expect(activity.refreshAfterMs).toBe(2 * 86_400_000);
    expect(activity.requester.pathOf(partition)).toMatch(/^\/v1\//);
    const args = activity.paginator.pageArgs(activity.requester.argsOf(partition, {}, { number: 2, token: 't2' }), {
      number: 2,
      token: 't2',
    });
    expect(args).toMatchObject({ page: 2, pagination_token: 't2' });
  });
});

describe('parent partitions', () => {
  it('given parent rows with BIGINT values (as DuckDB reads them), when partitioned, then the values are numbers (text past 2^53) and the partition writes as JSON', () => {
    const source = compilePartitions(
      { type: 'parent', table: 'activity_posts', columns: ['url', 'comments_count'], key: '{{ row.url }}' },
      {},
    );
    const [parent] = source.parents;
    const [small, huge] = parent!.partitionsOf([
      { url: 'u1', comments_count: 12n },
      { url: 'u2', comments_count: 2n ** 60n },
    ]);
    expect(small!.values).toEqual({ url: 'u1', comments_count: 12, key: 'u1' });
    expect(huge!.values.comments_count).toBe('1152921504606846976');
    expect(() => JSON.stringify(huge!.values)).not.toThrow();
  });
});
