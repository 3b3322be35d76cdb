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

/** `PGCOPY\n\377\r\n\0`, then the flags field and the header-extension length (both 0). */
const BINARY_HEADER = Buffer.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]);
/** Microseconds from 1970-01-01 to 2000-01-01, the epoch of binary timestamps. */
const POSTGRES_EPOCH_MS = 946_684_800_000;
const TWO_32 = 4_294_967_296;
/** Beyond this many milliseconds from 2000, microseconds no longer fit a double exactly. */
const EXACT_MS = 9_000_000_000_000;

/**
 * Encodes rows given column by column as Postgres binary COPY (`COPY … FROM STDIN (FORMAT
 * binary)`): the header, then per row a 16-bit field count and per field a 32-bit byte length (-1
 * for NULL) and the value in the type's binary form (int8, float8, bool, text as UTF-8,
 * timestamptz as microseconds since 2000, jsonb as version byte 1 + JSON text), then the trailer.
 * The column types must be exactly those of `postgresTypeMapper`: a binary value is not converted
 * to another column type the way text is. Yields buffers of about `chunkSize` bytes.
 */
export function* encodeCopyBinary(
  types: readonly LogicalType[],
  columns: readonly (readonly CellValue[])[],
  length: number,
  constant: readonly boolean[] = [],
  chunkSize = 1 << 20,
): Generator<Buffer> {
  const width = types.length;
  const fixed = types.map((type, c) => (constant[c] && length > 0 ? binaryCell(type, columns[c]![0] ?? null) : null));
  const varying = types.map((_, c) => c).filter((c) => fixed[c] === null);
  let fixedSize = 2;
  for (const encoded of fixed) if (encoded) fixedSize += encoded.length;
  let buffer = Buffer.allocUnsafe(chunkSize);
  BINARY_HEADER.copy(buffer, 0);
  let at = BINARY_HEADER.length;
  for (let row = 0; row < length; row++) {
    // Room for the row at worst (3 UTF-8 bytes per UTF-16 unit): a chunk ends before a row that might not fit.
    let need = fixedSize;
    for (const c of varying) {
      const value = columns[c]![row];
      need += typeof value === 'string' ? 5 + value.length * 3 : 12;
    }
    if (at + need > buffer.length) {
      if (at > 0) yield buffer.subarray(0, at);
      buffer = Buffer.allocUnsafe(Math.max(chunkSize, need));
      at = 0;
    }
    buffer.writeInt16BE(width, at);
    at += 2;
    for (let c = 0; c < width; c++) {
      const encoded = fixed[c];
      if (encoded) {
        encoded.copy(buffer, at);
        at += encoded.length;
      } else at = writeCell(buffer, at, types[c]!, columns[c]![row] ?? null);
    }
  }
  if (at + 2 > buffer.length) {
    yield buffer.subarray(0, at);
    buffer = Buffer.allocUnsafe(2);
    at = 0;
  }
  buffer.writeInt16BE(-1, at);
  yield buffer.subarray(0, at + 2);
}

/** One field (length and value) encoded on its own, for constant columns. */
function binaryCell(type: LogicalType, value: CellValue): Buffer {
  const buffer = Buffer.allocUnsafe(12 + (typeof value === 'string' ? value.length * 3 : 0));
  return buffer.subarray(0, writeCell(buffer, 0, type, value));
}

/** Writes one field at `at` (room checked by the caller); returns the offset after it. */
function writeCell(buffer: Buffer, at: number, type: LogicalType, value: CellValue): number {
  if (value === null) {
    buffer.writeInt32BE(-1, at);
    return at + 4;
  }
  switch (type) {
    case 'text': {
      const bytes = writeUtf8(buffer, at + 4, value as string);
      buffer.writeInt32BE(bytes, at);
      return at + 4 + bytes;
    }
    case 'json': {
      buffer[at + 4] = 1;
      const bytes = writeUtf8(buffer, at + 5, value as string);
      buffer.writeInt32BE(bytes + 1, at);
      return at + 5 + bytes;
    }
    case 'bigint':
      buffer.writeInt32BE(8, at);
      if (typeof value === 'bigint') buffer.writeBigInt64BE(value, at + 4);
      else writeInt64(buffer, at + 4, value as number);
      return at + 12;
    case 'double':
      buffer.writeInt32BE(8, at);
      buffer.writeDoubleBE(value as number, at + 4);
      return at + 12;
    case 'boolean':
      buffer.writeInt32BE(1, at);
      buffer[at + 4] = value ? 1 : 0;
      return at + 5;
    case 'timestamp': {
      buffer.writeInt32BE(8, at);
      const ms = (value as number) - POSTGRES_EPOCH_MS;
      if (Math.abs(ms) < EXACT_MS) writeInt64(buffer, at + 4, ms * 1000);
      else buffer.writeBigInt64BE(BigInt(ms) * 1000n, at + 4);
      return at + 12;
    }
  }
}

/** Writes a safe integer as a big-endian int64. */
function writeInt64(buffer: Buffer, at: number, value: number): void {
  const high = Math.floor(value / TWO_32);
  buffer.writeInt32BE(high, at);
  buffer.writeUInt32BE(value - high * TWO_32, at + 4);
}

/** Writes a string as UTF-8; returns its byte length. Short ASCII strings are copied in JS, cheaper than a native call each. */
function writeUtf8(buffer: Buffer, at: number, value: string): number {
  const length = value.length;
  if (length > 64) return buffer.write(value, at, 'utf8');
  for (let i = 0; i < length; i++) {
    const code = value.charCodeAt(i);
    if (code > 0x7f) return buffer.write(value, at, 'utf8');
    buffer[at + i] = code;
  }
  return length;
}
