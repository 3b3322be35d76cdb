import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CsvRows, parseCsv } from '../../src/util/csv-rows.js';

/** RFC 4180 text of `rows`: a field with a quote, comma or line break is quoted, its quotes doubled. */
function toCsv(rows: string[][], lineBreak: string): string {
  const field = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);
  return rows.map((row) => row.map(field).join(',')).join(lineBreak) + lineBreak;
}

/** Rows parsed from `text` fed in pieces cut at `cuts`. */
function parseInPieces(text: string, cuts: number[]): string[][] {
  const rows = new CsvRows();
  const at = [0, ...[...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b), text.length];
  const parsed: string[][] = [];
  for (let i = 1; i < at.length; i++) parsed.push(...rows.push(text.slice(at[i - 1], at[i])));
  return [...parsed, ...rows.end()];
}

const fieldText = fc.string({ unit: fc.constantFrom('a', 'b', ' ', ',', '"', '\r', '\n', 'é', '/'), maxLength: 12 });
// A row of one empty field is a blank line, which the parser drops: rows hold a non-empty first field.
const csvRows = fc.array(
  fc
    .tuple(
      fieldText.filter((f) => f.length > 0),
      fc.array(fieldText, { maxLength: 4 }),
    )
    .map(([first, rest]) => [first, ...rest]),
  { maxLength: 8 },
);

describe('CsvRows', () => {
  it('given any rows written as CSV and read in pieces cut anywhere, when parsed, then the rows come back as written', () => {
    fc.assert(
      fc.property(
        csvRows,
        fc.constantFrom('\n', '\r\n'),
        fc.array(fc.nat(), { maxLength: 6 }),
        (rows, lineBreak, cuts) => {
          const text = toCsv(rows, lineBreak);
          expect(parseInPieces(text, cuts)).toEqual(rows);
          expect(parseCsv(text)).toEqual(rows);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('given a last line without a line break and a quote inside a plain field, when parsed, then both are read as before', () => {
    expect(parseCsv('a,b"c,d"\ne,f')).toEqual([
      ['a', 'bc,d'],
      ['e', 'f'],
    ]);
  });
});
