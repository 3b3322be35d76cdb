import type { CellValue } from '../record-shaper.js';
import type { LogicalType } from '../table-layout.js';

const SPECIAL = /[\\\n\r\t\b\f\v]/;
const SPECIAL_GLOBAL = /[\\\n\r\t\b\f\v]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f', '\v': '\\v' };

/**
 * Escapes a string for Postgres `COPY … FROM STDIN` text format: backslash, and the characters
 * that would end a field or a line, become backslash sequences. (U+0000 cannot be stored at all
 * and is refused before this point.)
 */
export function escapeCopyText(value: string): string {
  return SPECIAL.test(value) ? value.replace(SPECIAL_GLOBAL, (c) => ESCAPES[c]!) : value;
}

/** Encoder of one column's cells into COPY text. */
export type CopyCellEncoder = (value: NonNullable<CellValue>) => string;

const encoders: Record<LogicalType, CopyCellEncoder> = {
  text: (v) => escapeCopyText(v as string),
  json: (v) => escapeCopyText(v as string),
  bigint: (v) => String(v),
  double: (v) => String(v),
  boolean: (v) => (v ? 't' : 'f'),
  timestamp: (v) => new Date(v as number).toISOString(),
};

/**
 * Encodes rows given column by column (`columns[c][row]`) as COPY text, yielding chunks of about
 * `chunkSize` characters so a large batch streams instead of building one huge string. Columns
 * flagged in `constant` are encoded once.
 */
export function* encodeCopyRows(
  types: readonly LogicalType[],
  columns: readonly (readonly CellValue[])[],
  length: number,
  constant: readonly boolean[] = [],
  chunkSize = 1 << 20,
): Generator<string> {
  const width = types.length;
  const encode = types.map((type) => encoders[type]);
  const fixed = types.map((_, c) => (constant[c] && length > 0 ? encodeCell(encode[c]!, columns[c]![0]) : null));
  const fields = new Array<string>(width);
  let lines: string[] = [];
  let size = 0;
  for (let row = 0; row < length; row++) {
    for (let c = 0; c < width; c++) fields[c] = fixed[c] ?? encodeCell(encode[c]!, columns[c]![row]);
    const line = fields.join('\t');
    lines.push(line);
    size += line.length;
    if (size >= chunkSize) {
      yield `${lines.join('\n')}\n`;
      lines = [];
      size = 0;
    }
  }
  if (lines.length > 0) yield `${lines.join('\n')}\n`;
}

function encodeCell(encode: CopyCellEncoder, value: CellValue | undefined): string {
  return value === null || value === undefined ? '\\N' : encode(value);
}
