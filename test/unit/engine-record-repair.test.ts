import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Profile } from '../../schemas/profile.js';
import { shapeRecords } from '../../src/normalize/record-shaper.js';
import { tableLayout } from '../../src/normalize/table-layout.js';
import { relaxSchema, repairRecord } from '../../src/normalize/record-repair.js';
import { TableShaper } from '../../src/normalize/table-shaper.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';

const run = { id: 'r', started_at: '2026-11-25T00:00:00Z' };
const trigger = {
  trigger_id: 't1',
  signal_id: 's',
  check_number: 1,
  checked_at: '2024-01-01T00:00:00Z',
  criteria_matched: [],
};

/** A shaped batch's column by name, row by row. */
function column(batch: ReturnType<typeof shapeRecords>, name: string): unknown[] {
  return batch.parent.columns[batch.parent.shape.columns.findIndex((c) => c.name === name)]!;
}

describe('repairing records the schema refuses', () => {
  it('given map entries of the wrong shape (a Trigger diff), when shaped, then the map lands in its JSON column as sent and nothing is counted as taken out', async () => {
    const manifest = (await loadManifests()).get('triggers')!;
    const shaper = TableShaper.of(manifest.table, { options: {}, run });
    const shaped = shaper.shape({}, [
      { ...trigger, diff: { headline: 5 } },
      { ...trigger, trigger_id: 't2', diff: { a: {}, b: { before: 1, after: 2 } } },
    ]);
    expect(shaped.rejected).toEqual([]);
    const batch = shapeRecords(tableLayout(shaped.table), shaped.rows, { runId: 'r', loadedAt: 0 });
    expect(batch.repairs).toEqual([]);
    expect(column(batch, 'diff').map((json) => JSON.parse(String(json)))).toEqual([
      { headline: 5 },
      { a: {}, b: { before: 1, after: 2 } },
    ]);
  });

  it('given two misfits under one group, when repaired, then both are kept in _extra and counted once each', () => {
    const schema = z.looseObject({
      id: z.string(),
      place: z
        .looseObject({
          city: z.string().optional(),
          zip: z.number().optional(),
          deep: z.looseObject({ a: z.number().optional(), b: z.number().optional() }).optional(),
        })
        .optional(),
    });
    const record = { id: '1', place: { city: 7, zip: 'x', deep: { a: 'one', b: 'two' } } };
    const repaired = repairRecord(
      record,
      schema.safeParse(record).error!,
      relaxSchema(schema, ['id']),
      ['id'],
      'evolve',
    );
    expect('row' in repaired && repaired.fields.sort()).toEqual([
      'place.city',
      'place.deep.a',
      'place.deep.b',
      'place.zip',
    ]);
    const batch = shapeRecords(
      tableLayout({ name: 't', schema, primaryKey: ['id'], writeMode: 'merge' }),
      [(repaired as { row: Record<string, unknown> }).row],
      { runId: 'r', loadedAt: 0 },
    );
    expect(JSON.parse(String(column(batch, '_extra')[0]))).toEqual({
      place: { city: 7, zip: 'x', deep: { a: 'one', b: 'two' } },
    });
  });

  it('given a map key named constructor holding a misfit, when repaired, then nothing outside the record changes', () => {
    const schema = z.looseObject({
      id: z.string(),
      m: z.record(z.string(), z.looseObject({ a: z.looseObject({ b: z.number() }) })).optional(),
      n: z.looseObject({ constructor: z.number().optional() }).optional(),
    });
    const record = JSON.parse('{"id":"1","m":{"constructor":{"a":{"b":"x"}}},"n":{"constructor":"x"}}') as Record<
      string,
      unknown
    >;
    const repaired = repairRecord(
      record,
      schema.safeParse(record).error!,
      relaxSchema(schema, ['id']),
      ['id'],
      'evolve',
    );
    expect('row' in repaired).toBe(true);
    expect((Object as unknown as Record<string, unknown>).a).toBeUndefined();
    expect(({} as Record<string, unknown>).constructor).toBe(Object);
  });

  it('given history mode, when a misfit value changes between loads, then the row hash changes too (a new version keeps the new value)', () => {
    const layout = tableLayout({ name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'history' });
    const hashOf = (headline: unknown) => {
      const record = { url: 'u', public_identifier: 'p', urn: 'x', scraped_at: '2024-01-01T00:00:00Z', headline };
      const repaired = repairRecord(
        record,
        Profile.safeParse(record).error!,
        relaxSchema(Profile, ['url']),
        ['url'],
        'evolve',
      ) as { row: Record<string, unknown> };
      return column(shapeRecords(layout, [repaired.row], { runId: 'r', loadedAt: 0 }), '_row_hash')[0];
    };
    expect(hashOf({ text: 'a' })).not.toBe(hashOf({ text: 'b' }));
  });

  it('given a repaired record that the destination then rejects (columns: discard_row), when kept, then the rejection holds the values as received', async () => {
    const manifest = (await loadManifests()).get('profiles')!;
    const shaper = TableShaper.of(manifest.table, {
      options: { write_mode: 'merge', schema_contract: { columns: 'discard_row' } },
      run,
    });
    const shaped = shaper.shape({ url: 'u' }, [
      { url: 'u', public_identifier: 'a', urn: 'x', scraped_at: '2024-01-01T00:00:00Z', headline: 5, brand_new: 1 },
    ]);
    const batch = shapeRecords(tableLayout(shaped.table), shaped.rows, { runId: 'r', loadedAt: 0 });
    expect(batch.rejected).toHaveLength(1);
    expect(batch.rejected[0]!.record).toMatchObject({ headline: 5, brand_new: 1 });
    // The record did not load: its headline counts as no repair.
    expect(batch.repairs).toEqual([]);
    const loaded = shaper.shape({ url: 'v' }, [
      { url: 'v', public_identifier: 'b', urn: 'y', scraped_at: '2024-01-01T00:00:00Z', headline: 5 },
    ]);
    expect(shapeRecords(tableLayout(loaded.table), loaded.rows, { runId: 'r', loadedAt: 0 }).repairs).toEqual([
      { table: 'profiles', field: 'headline', change: 'kept_in_extra', count: 1 },
    ]);
  });
});
