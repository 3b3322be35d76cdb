import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Id, UntypedText } from '../../schemas/common.js';
import { compiledParse, UNPARSED } from '../../src/normalize/compiled-parse.js';
import { schemaRegistry } from '../../src/manifest/schema-registry.js';
import { canonicalCompany, canonicalProfile } from '../../src/sandbox/fixtures/canonical.js';
import { buildCompany } from '../../src/sandbox/fixtures/company.js';
import { buildProfile } from '../../src/sandbox/fixtures/profile.js';

const NOW = Date.UTC(2026, 10, 1);

/** The generated parse agrees with zod: when it answers, zod takes the value and gives back the same output. */
function expectAgrees(schema: z.ZodType, value: unknown): 'parsed' | 'left to zod' {
  const zod = schema.safeParse(value);
  const fast = compiledParse(schema)(value);
  if (fast === UNPARSED) return 'left to zod';
  expect(zod.success, JSON.stringify(value)?.slice(0, 200)).toBe(true);
  expect(fast).toStrictEqual(zod.data);
  return 'parsed';
}

/** What a live scrape may send in place of any field. */
const hostileValue = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.string({ maxLength: 12 }),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null)), { maxLength: 3 }),
  fc.constant([{ title: 'an object item', number: 7 }, 'a string item', null]),
  fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.integer(), fc.string({ maxLength: 8 })), {
    maxKeys: 3,
  }),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}, "city": "Lyon"}')),
);

describe('the parse generated from a record schema', () => {
  it('given sandbox profiles and companies as the service sends them, when parsed, then each is parsed without zod and equals zod’s output', () => {
    for (let i = 0; i < 50; i++) {
      const profile = JSON.parse(JSON.stringify(buildProfile(1, canonicalProfile(`person-${i}`), NOW))) as unknown;
      const company = JSON.parse(JSON.stringify(buildCompany(1, canonicalCompany(`company-${i}`), NOW))) as unknown;
      expect(expectAgrees(schemaRegistry.profile, profile)).toBe('parsed');
      expect(expectAgrees(schemaRegistry.company, company)).toBe('parsed');
    }
  });

  it('given ids and untyped fields sent as numbers or booleans, when parsed, then they are text as zod makes them, and the record sent is left as it was', () => {
    const record = JSON.parse(JSON.stringify(buildProfile(1, canonicalProfile('person-ids'), NOW))) as Record<
      string,
      unknown
    >;
    record.urn = 5_000_123;
    record.certifications = [{ name: true, url: 12.5 }];
    const sent = structuredClone(record);
    expect(expectAgrees(schemaRegistry.profile, record)).toBe('parsed');
    expect(compiledParse(schemaRegistry.profile)(record)).toMatchObject({
      urn: '5000123',
      certifications: [{ name: 'true', url: '12.5' }],
    });
    expect(record).toStrictEqual(sent);
    expect(compiledParse(Id)(Number.NaN)).toBe(UNPARSED);
    expect(compiledParse(UntypedText)(false)).toBe('false');
  });

  it('given a copy the caller owns, when a field changes and a later one is left to zod, then the copy is as it was, and zod parses what was sent', () => {
    const schema = z.looseObject({ doubled: z.number().transform((n) => n * 2), id: Id, name: z.string() });
    const copy = { doubled: 2, id: 7, name: 3 };
    expect(compiledParse(schema)(copy, true)).toBe(UNPARSED);
    expect(copy).toStrictEqual({ doubled: 2, id: 7, name: 3 });
    const fits = { doubled: 2, id: 7, name: 'n' };
    expect(compiledParse(schema)(fits, true)).toBe(fits);
    expect(fits).toStrictEqual({ doubled: 4, id: '7', name: 'n' });
  });

  it('given records of every registered schema with random fields replaced by hostile values, when parsed, then the parse agrees with zod', () => {
    for (const schema of Object.values(schemaRegistry)) {
      const fields = Object.keys((schema as z.ZodObject).shape);
      fc.assert(
        fc.property(
          fc.dictionary(fc.constantFrom(...fields, 'never_seen_before'), hostileValue, { maxKeys: 8 }),
          (record) => {
            expectAgrees(schema, record);
          },
        ),
        { numRuns: 150 },
      );
    }
  });

  it('given a profile with one nested field replaced by a hostile value, when parsed, then the parse agrees with zod', () => {
    const base = JSON.parse(JSON.stringify(buildProfile(1, canonicalProfile('person-nested'), NOW))) as Record<
      string,
      unknown
    >;
    base.positions = [{ title: 'Engineer', network_id: '12', skills: ['go'] }];
    base.location = { city: 'Lyon' };
    const paths = [
      ['positions', 0, 'title'],
      ['positions', 0, 'network_id'],
      ['positions', 0, 'skills'],
      ['positions', 0],
      ['location', 'city'],
      ['location'],
      ['url'],
    ] as const;
    let parsed = 0;
    fc.assert(
      fc.property(fc.constantFrom(...paths), hostileValue, (path, value) => {
        const record = structuredClone(base);
        let at = record as Record<string | number, unknown>;
        for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
        at[path[path.length - 1]!] = value;
        if (expectAgrees(schemaRegistry.profile, record) === 'parsed') parsed++;
      }),
      { numRuns: 300 },
    );
    expect(parsed).toBeGreaterThan(0);
  });

  it('given schemas the generated code leaves to zod (refinements, defaults, records, strict and stripping objects, unions of objects), when values are parsed, then the parse agrees with zod', () => {
    const schema = z.looseObject({
      short: z.string().min(2).optional(),
      counts: z.record(z.string(), z.number()).optional(),
      strict: z.strictObject({ n: z.number() }).optional(),
      stripped: z.object({ n: z.number() }).optional(),
      few: z.array(z.int()).max(2).optional(),
      defaulted: z.string().default('none'),
      either: z
        .union([z.object({ n: z.number().transform((n) => n * 2) }), z.looseObject({ n: z.unknown() })])
        .optional(),
      kind: z.enum(['a', 'b']).nullable().optional(),
      exact: z.literal(3).optional(),
    });
    // Mostly values zod takes, so that both outcomes come up; objects with and without a prototype.
    const or = (valid: fc.Arbitrary<unknown>) =>
      fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: hostileValue, weight: 1 });
    const values = fc.record(
      {
        short: or(fc.string({ minLength: 2, maxLength: 4 })),
        counts: or(fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 })),
        strict: or(fc.constantFrom({ n: 1 }, { n: 1, extra: 2 })),
        stripped: or(fc.constantFrom({ n: 1 }, { n: 1, extra: 2 })),
        few: or(fc.array(fc.integer(), { maxLength: 3 })),
        defaulted: or(fc.string({ maxLength: 3 })),
        either: or(fc.constantFrom({ n: 2 }, { n: 'two' })),
        kind: or(fc.constantFrom('a', 'b', 'c', null)),
        exact: or(fc.constantFrom(3, 4)),
      },
      { requiredKeys: [] },
    );
    const outcomes = new Set<string>();
    fc.assert(
      fc.property(values, (value) => {
        outcomes.add(expectAgrees(schema, value));
      }),
      { numRuns: 1000 },
    );
    expect([...outcomes].sort()).toEqual(['left to zod', 'parsed']);
  });
});
