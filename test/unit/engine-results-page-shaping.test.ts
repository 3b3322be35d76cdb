import { describe, expect, it } from 'vitest';
import { PARTITION } from '../../src/normalize/table-definition.js';
import { type WriteShaping } from '../../src/normalize/record-shaper.js';
import { tableLayout } from '../../src/normalize/table-layout.js';
import {
  decodeResultsPage,
  shapeResultsPage,
  valuesLookup,
  writeWithPartitions,
  type ResultEntry,
} from '../../src/engine/batch/results-page-shaping.js';
import { TableShaper } from '../../src/normalize/table-shaper.js';
import { manifestsSync } from '../../src/manifest/load-manifests.js';
import { profileRecord } from '../helpers/destinations.js';

const table = manifestsSync().get('profiles')!.table;
const frozen = TableShaper.of(table, {
  options: { write_mode: 'merge', schema_contract: { data_type: 'freeze' } },
  run: { id: 'run_1', started_at: '2026-11-26T00:00:00.000Z' },
});
const shaping: WriteShaping = { table: 'profiles', layout: tableLayout(frozen.definitionFor({})), rejectNul: true };
const shapings = new Map([['profiles', shaping]]);

const values = (n: number) => ({ url: `https://network.example/in/person-${n}`, seed: `person-${n}`, key: `r${n}` });
const valuesOf = valuesLookup([1, 2, 3, 4].map((n) => [`r${n}`, values(n)] as const));
const entries: ResultEntry[] = [
  { ref: 'r1', status: 'succeeded', credits_used: 1, data: profileRecord(1) },
  // Fits its schema, not its column: a lone surrogate cannot be stored, and `freeze` refuses to keep it in `_extra`.
  { ref: 'r2', status: 'succeeded', credits_used: 1, data: profileRecord(2, { full_name: 'Ada \ud83d' }) },
  // Does not fit its schema.
  { ref: 'r3', status: 'succeeded', credits_used: 1, data: profileRecord(3, { connections_count: 'many' }) },
  { ref: 'r4', status: 'failed', credits_used: 1, error: { type: 'not_found', message: 'no such profile' } },
];
const pageText = JSON.stringify({
  data: entries.map((entry, index) => ({ ...entry, index, operation: 'profiles.enrich' })),
  meta: { nextCursor: 'c2', creditsUsed: 4 },
});

describe('a results page shaped for its write (issue 20: the work of a shaping worker thread)', () => {
  it('given passing, misfit, refused and failed entries, when shaped, then the facts, the write and both kinds of rejection are what the main thread would make', () => {
    const page = shapeResultsPage(entries, valuesOf, frozen, shapings, 'run_1')!;
    expect(page.entries).toEqual([
      { ref: 'r1', status: 'succeeded', credits_used: 1, canonicalUrl: values(1).url },
      { ref: 'r2', status: 'succeeded', credits_used: 1, canonicalUrl: values(2).url },
      {
        ref: 'r3',
        status: 'succeeded',
        credits_used: 1,
        canonicalUrl: values(3).url,
        rejection: expect.stringContaining('connections_count'),
      },
      {
        ref: 'r4',
        status: 'failed',
        credits_used: 1,
        canonicalUrl: null,
        error: { type: 'not_found', message: 'no such profile' },
      },
    ]);
    const [profiles] = page.tables;
    expect(page.tables).toHaveLength(1);
    expect(profiles).toMatchObject({ table: 'profiles', ref: 'r1', size: 2 });
    expect(profiles!.rejected).toEqual([
      expect.objectContaining({ table: 'profiles', partition: values(3), reason: expect.stringContaining('freeze') }),
    ]);
    expect(profiles!.write!.records).toBe(1);
    expect(profiles!.write!.keys).toEqual([[values(1).url]]);
    expect(profiles!.write!.rejected).toEqual([expect.objectContaining({ reason: expect.stringContaining('freeze') })]);
    expect(profiles!.rejectedPartitions).toEqual([values(2)]);
  });

  it('given a shaped page cloned across threads, when its write is taken, then each rejected record has its partition back', () => {
    const crossed = structuredClone(shapeResultsPage(entries, valuesOf, frozen, shapings, 'run_1')!);
    expect((crossed.tables[0]!.write!.rejected[0]!.record as Record<symbol, unknown>)[PARTITION]).toBeUndefined();
    const write = writeWithPartitions(crossed.tables[0]!)!;
    expect((write.rejected[0]!.record as Record<symbol, unknown>)[PARTITION]).toEqual(values(2));
    expect(write.rejected[0]!.record).toMatchObject({ full_name: 'Ada \ud83d' });
  });

  it('given the text of a page, when decoded, then it is shaped with its meta; a body that is no JSON, no envelope, or names a table without shaping is left to the client', () => {
    const decoded = decodeResultsPage(pageText, valuesOf, frozen, shapings, 'run_1')!;
    expect(decoded.meta).toMatchObject({ nextCursor: 'c2', creditsUsed: 4 });
    expect(decoded.data.entries.map((e) => e.ref)).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(decodeResultsPage('{"data": [', valuesOf, frozen, shapings, 'run_1')).toBeNull();
    expect(decodeResultsPage('{"data": [{"ref": 1}], "meta": {}}', valuesOf, frozen, shapings, 'run_1')).toBeNull();
    expect(decodeResultsPage(pageText, valuesOf, frozen, new Map(), 'run_1')).toBeNull();
  });
});

describe('a table shaper, record by record (issue 20: its per-record work cut)', () => {
  const run = { id: 'run_1', started_at: '2026-11-26T00:00:00.000Z' };
  const record = (n: number): Record<string, unknown> => ({
    ...profileRecord(n),
    url: `https://network.example/in/person-${n}`,
  });

  it('given a table name with a placeholder, when records of two partitions are shaped, then each goes to its own table, every time', () => {
    const shaper = TableShaper.of(
      { ...table, name: 'profiles_{{ partition.kind }}', columns: {} },
      { options: { write_mode: 'merge' }, run },
    );
    for (let round = 0; round < 2; round++) {
      expect(shaper.shape({ kind: 'a' }, [record(1)]).table.name).toBe('profiles_a');
      expect(shaper.shape({ kind: 'b' }, [record(2)]).table.name).toBe('profiles_b');
    }
  });

  it('given added columns, when records are shaped, then each row gets its own partition and record values, and the record given is left as it was', () => {
    const shaper = TableShaper.of(
      { ...table, columns: { seed: '{{ partition.seed }}', name_again: '{{ record.full_name }}' } },
      { options: { write_mode: 'merge' }, run },
    );
    const given = [record(1), record(2)];
    const before = structuredClone(given);
    const rows = [shaper.shape({ seed: 's1' }, [given[0]]).rows[0], shaper.shape({ seed: 's2' }, [given[1]]).rows[0]];
    expect(rows.map((row) => [row!.seed, row!.name_again])).toEqual([
      ['s1', given[0]!.full_name],
      ['s2', given[1]!.full_name],
    ]);
    expect(given).toEqual(before);
    expect(shaper.shape({ seed: 's3' }, [record(3)]).table).toBe(shaper.shape({ seed: 's4' }, [record(4)]).table);
  });

  it('given no added columns, when a record is shaped, then its row is a copy the shaper can mark, not the record itself', () => {
    const shaper = TableShaper.of({ ...table, columns: {} }, { options: { write_mode: 'merge' }, run });
    const given = record(5);
    const [row] = shaper.shape({ seed: 's5' }, [given]).rows;
    expect(row).not.toBe(given);
    expect((row as Record<PropertyKey, unknown>)[PARTITION]).toEqual({ seed: 's5' });
    expect((given as Record<PropertyKey, unknown>)[PARTITION]).toBeUndefined();
  });
});
