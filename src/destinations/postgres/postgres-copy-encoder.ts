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
 * Encodes rows as COPY text, yielding chunks of about `chunkSize` characters so a large batch
 * streams instead of building one huge string.
 */
export function* encodeCopyRows(types: readonly LogicalType[], rows: readonly CellValue[][], chunkSize = 256 * 1024): Generator<string> {
  const encode = types.map((type) => encoders[type]);
  const width = encode.length;
  let chunk = '';
  for (const row of rows) {
    let line = '';
    for (let i = 0; i < width; i++) {
      const value = row[i];
      if (i > 0) line += '\t';
      line += value === null || value === undefined ? '\\N' : encode[i]!(value);
    }
    chunk += `${line}\n`;
    if (chunk.length >= chunkSize) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk.length > 0) yield chunk;
}
