import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Destination } from '../../src/destinations/destination.js';
import { LoadWriter } from '../../src/load/load-writer.js';
import { TableShaper } from '../../src/normalize/table-shaper.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import type { StreamManifest } from '../../src/manifest/manifest-schema.js';
import { Mutex } from '../../src/util/mutex.js';
import { backendAvailable, destinationKinds, makeTestTarget, type TestTarget } from '../helpers/destinations.js';

/** The streams of every resource schema the issue names: the partition their table node reads, and the field that tells records apart. */
const STREAMS: Record<string, { partition: Record<string, unknown>; identity: string }> = {
  profiles: { partition: { url: 'https://www.network.example/in/seed' }, identity: 'url' },
  companies: { partition: { url: 'https://www.network.example/company/seed' }, identity: 'url' },
  posts: { partition: { url: 'https://www.network.example/posts/seed' }, identity: 'urn' },
  jobs: { partition: { key: 'query-key', company_url: 'https://www.network.example/company/seed' }, identity: 'url' },
  activity: { partition: { url: 'https://www.network.example/in/seed', kind: 'posts' }, identity: 'urn' },
  triggers: { partition: {}, identity: 'trigger_id' },
  signals: { partition: {}, identity: 'id' },
  usage: { partition: { from: '2026-10-01T00:00:00Z', to: '2026-11-01T00:00:00Z' }, identity: 'external_id' },
};

/** What a live scrape may send in place of any field. */
const hostileValue = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.string({ maxLength: 20 }),
  fc.constant('x'.repeat(100_000)),
  fc.constant('half \ud83d of an emoji'),
  fc.constant('nul \u0000 inside'),
  fc.constant('2024-02-30T25:61:00Z'),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null)), { maxLength: 3 }),
  fc.constant([{ title: 'an object item' }, 'a string item', null]),
  fc.dictionary(
    fc.string({ minLength: 1, maxLength: 8 }),
    fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null)),
    { maxKeys: 3 },
  ),
  fc.constant({ unknown: { nested: { keys: [1, 'two'] } } }),
);

const jsonOf = (value: unknown) =>
  (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown> | null;
const isEmpty = (value: unknown) =>
  value === null ||
  value === undefined ||
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === 'object' && value !== null && Object.keys(value).length === 0);

describe.each(destinationKinds)('misshapen records of every resource schema into %s', (kind) => {
  let target: TestTarget | undefined;
  let destination: Destination;
  let manifests: Map<string, StreamManifest>;

  beforeAll(async () => {
    if (!(await backendAvailable(kind))) return;
    target = makeTestTarget(kind);
    destination = await target.open();
    await destination.lock({ holder: 'property test' });
    await destination.ensureSystemTables();
    manifests = await loadManifests();
  });
  afterAll(() => target?.dispose());

  for (const stream of Object.keys(STREAMS)) {
    it(`given ${stream} records with random fields replaced by hostile values, when loaded, then each loads with its key and every value sent is in its column, its child rows or _extra`, async (ctx) => {
      if (!target) return ctx.skip();
      const manifest = manifests.get(stream)!;
      const { partition, identity } = STREAMS[stream]!;
      const shaper = TableShaper.of(manifest.table, {
        options: { write_mode: 'merge' },
        run: { id: 'run_property', started_at: '2026-11-25T00:00:00Z' },
      });
      const table = shaper.definitionFor(partition);
      const fields = Object.keys((table.schema as z.ZodObject).shape).filter(
        (field) => field !== identity && !(field in manifest.table.columns),
      );
      let round = 0;

      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.dictionary(fc.constantFrom(...fields, 'never_seen_before'), hostileValue, { maxKeys: 6 }), {
            minLength: 1,
            maxLength: 8,
          }),
          async (mutations) => {
            round++;
            const records: Record<string, unknown>[] = mutations.map((mutation, i) => ({
              ...mutation,
              [identity]: `${stream}-${round}-${i}`,
            }));
            const shaped = shaper.shape(partition, records);
            expect(shaped.rejected).toEqual([]);
            const writer = new LoadWriter(destination, `run_${round}`, stream, new Mutex());
            const counts = await writer.inUnit([shaped], async () => undefined);
            expect(counts).toMatchObject({ records: records.length, rejected: 0 });

            const rows = await destination.query(
              `select * from ${destination.schema}.${table.name} where _run_id = $1`,
              [`run_${round}`],
            );
            expect(rows).toHaveLength(records.length);
            for (const row of rows) {
              const sent = records.find((r) => r[identity] === row[identity]);
              expect(sent, String(row[identity])).toBeDefined();
              const extra = jsonOf(row._extra) ?? {};
              for (const [field, value] of Object.entries(sent!)) {
                if (field === identity || isEmpty(value)) continue;
                const inColumn = row[field] !== null && row[field] !== undefined;
                const flattened = Object.keys(row).some(
                  (column) => column.startsWith(`${field}__`) && row[column] !== null,
                );
                const inChildRows = await childRows(destination, `${table.name}__${field}`, table.primaryKey[0], row);
                expect(
                  inColumn || flattened || inChildRows || field in extra,
                  `${stream}.${field} = ${JSON.stringify(value).slice(0, 80)}`,
                ).toBe(true);
              }
            }
          },
        ),
        { numRuns: 12 },
      );
      // Every record loaded: nothing of this stream waits in _seedline_rejected.
      expect(
        await destination.query(`select reason from ${destination.schema}._seedline_rejected where stream = $1`, [
          stream,
        ]),
      ).toEqual([]);
    });
  }
});

/** Whether a child table holds rows of `parent` (false when the table does not exist). */
async function childRows(
  destination: Destination,
  table: string,
  link: string | undefined,
  parent: Record<string, unknown>,
): Promise<boolean> {
  const exists = await destination.query(
    'select 1 as found from information_schema.tables where table_schema = $1 and table_name = $2',
    [destination.schema, table],
  );
  if (exists.length === 0 || link === undefined) return false;
  const rows = await destination.query(
    `select count(*) as n from ${destination.schema}.${table} where _run_id = $1 and _parent_${link} = $2`,
    [parent._run_id, parent[link]],
  );
  return Number(rows[0]?.n) > 0;
}
