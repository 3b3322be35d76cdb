import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Profile } from '../../schemas/profile.js';
import { EVOLVE, isFrozenRejection, type SchemaContract } from '../../src/normalize/table-definition.js';
import { tableLayout, parentShape, childShape } from '../../src/normalize/table-layout.js';
import fc from 'fast-check';
import { parseIsoTimestamp, shapeRecords } from '../../src/normalize/record-shaper.js';
import { duckDbTypeMapper } from '../../src/destinations/duckdb/duckdb-type-mapper.js';
import { postgresTypeMapper } from '../../src/destinations/postgres/postgres-type-mapper.js';
import {
  encodeCopyBinary,
  escapeCopyText,
  encodeCopyRows,
} from '../../src/destinations/postgres/postgres-copy-encoder.js';

const profiles = tableLayout({ name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' });
const typeOf = (name: string): string | undefined => profiles.columns.find((c) => c.name === name)?.type;

describe('table layout from zod', () => {
  it('given the Profile schema, when laid out, then scalars, flattened objects, JSON arrays and meta types get their logical types', () => {
    expect(typeOf('url')).toBe('text');
    expect(typeOf('urn')).toBe('text'); // Id: union transformed to string, meta sqlType text
    expect(typeOf('scraped_at')).toBe('timestamp'); // Timestamp: meta sqlType timestamp
    expect(typeOf('connections_count')).toBe('bigint');
    expect(typeOf('location__city')).toBe('text');
    expect(typeOf('current_company__headcount')).toBe('bigint');
    expect(typeOf('skills')).toBe('json');
    expect(typeOf('recommendations')).toBe('json');
    expect(typeOf('open_to_work__titles')).toBe('json');
    expect(typeOf('positions')).toBeUndefined();
  });

  it('given arrays of objects, when laid out, then they become child tables with parent key, _index and their own _extra', () => {
    expect(profiles.children.map((c) => c.name)).toEqual([
      'profiles__positions',
      'profiles__education',
      'profiles__certifications',
      'profiles__publications',
      'profiles__patents',
      'profiles__honors',
      'profiles__projects',
    ]);
    const positions = childShape(profiles, profiles.children[0]!).columns;
    expect(positions.slice(0, 2)).toEqual([
      { name: '_parent_url', type: 'text' },
      { name: '_index', type: 'bigint' },
    ]);
    expect(positions.find((c) => c.name === 'skills')?.type).toBe('json');
    expect(positions.slice(-3).map((c) => c.name)).toEqual(['_extra', '_run_id', '_loaded_at']);
  });

  it('given history mode, when laid out, then the parent carries _valid_from, _valid_to and _row_hash, children _parent_valid_from', () => {
    const history = tableLayout({ name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'history' });
    expect(
      parentShape(history)
        .columns.slice(-3)
        .map((c) => c.name),
    ).toEqual(['_valid_from', '_valid_to', '_row_hash']);
    expect(
      childShape(history, history.children[0]!)
        .columns.slice(0, 3)
        .map((c) => c.name),
    ).toEqual(['_parent_url', '_parent_valid_from', '_index']);
  });

  it('given doubles, booleans, dates, enums and camelCase, when laid out, then each maps as documented', () => {
    const layout = tableLayout({
      name: 't',
      schema: z.object({
        ratio: z.number(),
        ok: z.boolean(),
        at: z.date(),
        kind: z.enum(['a', 'b']),
        creditsUsed: z.int(),
        anything: z.unknown(),
      }),
      primaryKey: [],
      writeMode: 'append',
    });
    expect(layout.columns).toEqual([
      { name: 'ratio', type: 'double' },
      { name: 'ok', type: 'boolean' },
      { name: 'at', type: 'timestamp' },
      { name: 'kind', type: 'text' },
      { name: 'credits_used', type: 'bigint' },
      { name: 'anything', type: 'json' },
    ]);
  });

  it('given merge without a primary key or a hostile name, when laid out, then it is refused with a stable code', () => {
    expect(() =>
      tableLayout({ name: 'x', schema: z.object({ a: z.string() }), primaryKey: [], writeMode: 'merge' }),
    ).toThrow(expect.objectContaining({ code: 'SEEDLINE_INVALID_TABLE_DEFINITION' }));
    expect(() =>
      tableLayout({ name: 'X;drop', schema: z.object({ a: z.string() }), primaryKey: [], writeMode: 'append' }),
    ).toThrow(expect.objectContaining({ code: 'SEEDLINE_INVALID_IDENTIFIER' }));
  });
});

describe('dialect type mappers', () => {
  it('given each logical type, when mapped, then DuckDB and Postgres get their documented types and map back', () => {
    const logical = ['text', 'bigint', 'double', 'boolean', 'timestamp', 'json'] as const;
    expect(logical.map((t) => duckDbTypeMapper.sqlType(t))).toEqual([
      'VARCHAR',
      'BIGINT',
      'DOUBLE',
      'BOOLEAN',
      'TIMESTAMPTZ',
      'JSON',
    ]);
    expect(logical.map((t) => postgresTypeMapper.sqlType(t))).toEqual([
      'text',
      'bigint',
      'double precision',
      'boolean',
      'timestamptz',
      'jsonb',
    ]);
    expect(
      ['VARCHAR', 'BIGINT', 'DOUBLE', 'BOOLEAN', 'TIMESTAMP WITH TIME ZONE', 'JSON'].map((t) =>
        duckDbTypeMapper.logicalType(t),
      ),
    ).toEqual([...logical]);
    expect(
      ['text', 'bigint', 'double precision', 'boolean', 'timestamp with time zone', 'jsonb'].map((t) =>
        postgresTypeMapper.logicalType(t),
      ),
    ).toEqual([...logical]);
    expect(postgresTypeMapper.logicalType('integer')).toBe('bigint');
  });
});

describe('record shaping', () => {
  it('given records with unknown fields and misfits, when shaped, then every record loads: unknown fields and misfits (column NULL) go to _extra, and misfits are counted', () => {
    const batch = shapeRecords(
      profiles,
      [
        {
          url: 'u1',
          public_identifier: 'p',
          urn: 1,
          scraped_at: '2024-01-01T00:00:00Z',
          surprise: { deep: [1] },
          location: { city: 'Lyon', zip: '69001' },
        },
        { url: 'u2', public_identifier: 'p', urn: 2, scraped_at: 'not a date' },
        { url: 'u3', public_identifier: 'p', urn: 3, scraped_at: '2024-01-01T00:00:00Z', followers_count: 1.5 },
      ],
      { runId: 'r', loadedAt: 0 },
    );
    expect(batch.records).toBe(3);
    expect(batch.rejected).toEqual([]);
    const column = (name: string) =>
      batch.parent.columns[batch.parent.shape.columns.findIndex((c) => c.name === name)]!;
    expect(JSON.parse(column('_extra')[0] as string)).toEqual({ surprise: { deep: [1] }, location: { zip: '69001' } });
    expect(column('scraped_at')[1]).toBeNull();
    expect(JSON.parse(column('_extra')[1] as string)).toEqual({ scraped_at: 'not a date' });
    expect(column('followers_count')[2]).toBeNull();
    expect(JSON.parse(column('_extra')[2] as string)).toEqual({ followers_count: 1.5 });
    expect(batch.repairs).toEqual([
      { table: 'profiles', field: 'scraped_at', change: 'kept_in_extra', count: 1 },
      { table: 'profiles', field: 'followers_count', change: 'kept_in_extra', count: 1 },
    ]);
  });
});

describe('schema contracts in the record shaper', () => {
  const table = (contract: Partial<SchemaContract>) =>
    tableLayout({
      name: 'people',
      schema: z.object({
        id: z.string(),
        age: z.number().int().optional(),
        tags: z.array(z.object({ name: z.string() })).optional(),
      }),
      primaryKey: ['id'],
      writeMode: 'merge',
      contract: { ...EVOLVE, ...contract },
    });
  const records = [{ id: 'a', age: 'old', tags: [{ name: 'x' }, 'loose'], hobby: 'chess' }];
  const extraOf = (batch: ReturnType<typeof shapeRecords>) =>
    batch.parent.columns[batch.parent.shape.columns.findIndex((c) => c.name === '_extra')]![0];

  it('given evolve, when a value does not fit, then its column is NULL and it is kept in _extra with unknown fields and list items that are not objects', () => {
    const batch = shapeRecords(table({}), records, { runId: 'r', loadedAt: 0 });
    expect(batch.records).toBe(1);
    expect(JSON.parse(extraOf(batch) as string)).toEqual({ age: 'old', tags: { 1: 'loose' }, hobby: 'chess' });
    expect(batch.children[0]!.length).toBe(1);
    expect(batch.repairs.map((r) => [r.field, r.change])).toEqual([
      ['age', 'kept_in_extra'],
      ['tags[]', 'kept_in_extra'],
    ]);
  });

  it('given discard_value, when values do not fit and fields are unknown, then the record loads without them and each is counted as discarded', () => {
    const batch = shapeRecords(table({ dataType: 'discard_value', columns: 'discard_value' }), records, {
      runId: 'r',
      loadedAt: 0,
    });
    expect(batch.records).toBe(1);
    expect(extraOf(batch)).toBeNull();
    expect(batch.repairs.map((r) => [r.field, r.change])).toEqual([
      ['age', 'discarded'],
      ['tags[]', 'discarded'],
      ['hobby', 'discarded'],
    ]);
  });

  it('given discard_row or freeze, when a value does not fit or a field is unknown, then the record is rejected naming the contract key', () => {
    for (const mode of ['discard_row', 'freeze'] as const) {
      const typed = shapeRecords(table({ dataType: mode }), [{ id: 'a', age: 'old' }], { runId: 'r', loadedAt: 0 });
      expect(typed.rejected.map((r) => r.reason)).toEqual([
        `column age: expected an integer, got a string ("old") (schema_contract.data_type: ${mode})`,
      ]);
      const unknown = shapeRecords(table({ columns: mode }), [{ id: 'b', hobby: 'chess' }], {
        runId: 'r',
        loadedAt: 0,
      });
      expect(unknown.rejected.map((r) => r.reason)).toEqual([
        `field hobby is not in the schema (schema_contract.columns: ${mode})`,
      ]);
      expect(isFrozenRejection(unknown.rejected[0]!.reason)).toBe(mode === 'freeze');
    }
  });
});

describe('COPY text escaping', () => {
  it('given hostile strings, when escaped, then backslashes and line/field breaks become escapes and nothing else changes', () => {
    expect(escapeCopyText('plain é 🙂 "q" \'s\'')).toBe('plain é 🙂 "q" \'s\'');
    expect(escapeCopyText('a\\b\tc\nd\re\\N')).toBe('a\\\\b\\tc\\nd\\re\\\\N');
    const columns = [
      ['x\ty', null],
      [12n, null],
      [true, null],
      [0, null],
      ['{"a":"\\n"}', null],
    ];
    expect([...encodeCopyRows(['text', 'bigint', 'boolean', 'timestamp', 'json'], columns, 2)].join('')).toBe(
      'x\\ty\t12\tt\t1970-01-01T00:00:00.000Z\t{"a":"\\\\n"}\n\\N\t\\N\t\\N\t\\N\t\\N\n',
    );
  });
});

describe('COPY binary encoding', () => {
  /** Reads binary COPY back into rows of raw field bytes (null for NULL), checking header and trailer. */
  function decode(data: Buffer): (Buffer | null)[][] {
    expect(data.subarray(0, 11)).toEqual(Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'));
    expect(data.readInt32BE(11)).toBe(0);
    expect(data.readInt32BE(15)).toBe(0);
    const rows: (Buffer | null)[][] = [];
    let at = 19;
    for (;;) {
      const count = data.readInt16BE(at);
      at += 2;
      if (count === -1) break;
      const row: (Buffer | null)[] = [];
      for (let f = 0; f < count; f++) {
        const length = data.readInt32BE(at);
        at += 4;
        row.push(length < 0 ? null : data.subarray(at, at + length));
        at += Math.max(0, length);
      }
      rows.push(row);
    }
    expect(at).toBe(data.length);
    return rows;
  }

  it('given each column type, when encoded, then fields carry their binary forms and NULLs', () => {
    const before2000 = Date.parse('1999-12-31T23:59:59.999Z');
    const year9999 = Date.parse('9999-12-31T23:59:59.999Z');
    const columns = [
      ['é🙂\t\\', null, 'x'.repeat(100)],
      [-2, 2n ** 62n, 9_007_199_254_740_991],
      [1.5, null, -0.25],
      [true, false, null],
      [before2000, year9999, 946_684_800_000],
      ['{"a":"ü"}', null, '[]'],
    ];
    const rows = decode(
      Buffer.concat([...encodeCopyBinary(['text', 'bigint', 'double', 'boolean', 'timestamp', 'json'], columns, 3)]),
    );
    expect(rows).toHaveLength(3);
    expect(rows[0]![0]!.toString('utf8')).toBe('é🙂\t\\');
    expect(rows[2]![0]!.toString('utf8')).toBe('x'.repeat(100));
    expect(rows.map((r) => r[1]!.readBigInt64BE(0))).toEqual([-2n, 2n ** 62n, 9_007_199_254_740_991n]);
    expect(rows.map((r) => r[2]?.readDoubleBE(0) ?? null)).toEqual([1.5, null, -0.25]);
    expect(rows.map((r) => r[3]?.[0] ?? null)).toEqual([1, 0, null]);
    // Microseconds since 2000-01-01, exact beyond 2^53 as well.
    expect(rows.map((r) => r[4]!.readBigInt64BE(0))).toEqual([-1000n, BigInt(year9999 - 946_684_800_000) * 1000n, 0n]);
    expect(rows[0]![5]![0]).toBe(1);
    expect(rows[0]![5]!.subarray(1).toString('utf8')).toBe('{"a":"ü"}');
    expect(rows[1]![5]).toBeNull();
  });

  it('given constant columns and a small chunk size, when encoded, then the chunks concatenate to every row (rows may straddle chunks) and constants repeat', () => {
    const length = 500;
    const columns = [
      Array.from({ length }, (_, i) => `row-${i}-${'ü'.repeat(i % 7)}`),
      new Array(length).fill('run_1'),
      new Array(length).fill(1_700_000_000_000),
    ];
    const chunks = [...encodeCopyBinary(['text', 'text', 'timestamp'], columns, length, [false, true, true], 256)];
    expect(chunks.length).toBeGreaterThan(10);
    const rows = decode(Buffer.concat(chunks));
    expect(rows.map((r) => r[0]!.toString('utf8'))).toEqual(columns[0]);
    expect(new Set(rows.map((r) => r[1]!.toString('utf8')))).toEqual(new Set(['run_1']));
    expect(new Set(rows.map((r) => r[2]!.readBigInt64BE(0)))).toEqual(
      new Set([BigInt(1_700_000_000_000 - 946_684_800_000) * 1000n]),
    );
  });
});

describe('ISO 8601 timestamps', () => {
  it('given any instant of years 1-9999, when written by toISOString or with an offset, then it parses back to the same millisecond', () => {
    // A day inside years 1-9999 at each end: the local time of an offset stays a four-digit year.
    const instant = fc.integer({ min: -62135596800000 + 86_400_000, max: 253402300799999 - 86_400_000 });
    const offset = fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 });
    fc.assert(
      fc.property(instant, offset, (ms, minutes) => {
        expect(parseIsoTimestamp(new Date(ms).toISOString())).toBe(ms);
        const local = new Date(ms + minutes * 60_000).toISOString().slice(0, 23);
        const sign = minutes < 0 ? '-' : '+';
        const zone = `${sign}${String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0')}:${String(Math.abs(minutes) % 60).padStart(2, '0')}`;
        expect(parseIsoTimestamp(`${local}${zone}`)).toBe(ms);
      }),
    );
  });

  it('given the forms ISO 8601 allows, when parsed, then each is the instant it names, UTC when no offset is given', () => {
    expect(parseIsoTimestamp('2024-05-01')).toBe(Date.UTC(2024, 4, 1));
    expect(parseIsoTimestamp('2024-05-01T12:30')).toBe(Date.UTC(2024, 4, 1, 12, 30));
    expect(parseIsoTimestamp('2024-05-01 12:30:15')).toBe(Date.UTC(2024, 4, 1, 12, 30, 15));
    expect(parseIsoTimestamp('2024-05-01T12:30:15.123456Z')).toBe(Date.UTC(2024, 4, 1, 12, 30, 15, 123));
    expect(parseIsoTimestamp('2024-05-01T12:30:15,5+0130')).toBe(Date.UTC(2024, 4, 1, 11, 0, 15, 500));
    expect(parseIsoTimestamp('2024-05-01T12:30:15-05')).toBe(Date.UTC(2024, 4, 1, 17, 30, 15));
    expect(parseIsoTimestamp('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(parseIsoTimestamp('0050-06-01T00:00:00Z')).toBe(new Date('0050-06-01T00:00:00Z').getTime());
  });

  it('given impossible dates and text Date.parse would guess at, when parsed, then each is NaN', () => {
    for (const text of [
      '2023-02-29T00:00:00Z',
      '2024-02-30',
      '2024-13-01',
      '2024-05-01T24:00:00Z',
      '2024-05-01T12:60Z',
      '2024-05-01T12:00:00+24:00',
      '12',
      'Foo 12',
      '1/2/3',
      'May 1, 2024',
      '2024-05-01T12',
      ' 2024-05-01',
      '+002024-05-01T00:00:00Z',
      '',
    ]) {
      expect(parseIsoTimestamp(text), text).toBeNaN();
    }
  });
});
