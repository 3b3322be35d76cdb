import type { CellValue } from '../../normalize/record-shaper.js';
import type { LogicalType } from '../../normalize/table-layout.js';

const SPECIAL = /[\\\n\r\t\b\f\v]/;
const SPECIAL_GLOBAL = /[\\\n\r\t\b\f\v]/g;
const ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
  '\v': '\\v',
};

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
  // String(-0) is "0": the sign would be lost on the way (staging tables, retyped columns) where binary keeps it.
  double: (v) => (Object.is(v, -0) ? '-0' : String(v)),
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
const BINARY_HEADER = Buffer.from([
  0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
]);
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
 * to another column type the way text is. Yields buffers of about `chunkSize` bytes; a row may
 * straddle two of them (COPY data need not break at rows).
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
  const out = new BinaryWriter(chunkSize);
  out.buffer.set(BINARY_HEADER, 0);
  out.at = BINARY_HEADER.length;
  for (let row = 0; row < length; row++) {
    if (out.at + 2 > out.buffer.length) yield out.next(2);
    out.view.setInt16(out.at, width);
    out.at += 2;
    for (let c = 0; c < width; c++) {
      const encoded = fixed[c];
      const value = encoded ? null : (columns[c]![row] ?? null);
      // Room for the field at worst (3 UTF-8 bytes per UTF-16 unit); otherwise this chunk ends here.
      const need = encoded ? encoded.length : typeof value === 'string' ? 5 + value.length * 3 : 12;
      if (out.at + need > out.buffer.length) yield out.next(need);
      if (encoded) {
        out.buffer.set(encoded, out.at);
        out.at += encoded.length;
      } else out.at = writeCell(out.buffer, out.view, out.at, types[c]!, value);
    }
  }
  if (out.at + 2 > out.buffer.length) yield out.next(2);
  out.view.setInt16(out.at, -1);
  out.at += 2;
  yield out.buffer.subarray(0, out.at);
}

/** The buffer binary COPY is encoded into, with a DataView on it (V8 inlines its big-endian writes). */
class BinaryWriter {
  buffer: Buffer;
  view: DataView;
  at = 0;

  constructor(private readonly chunkSize: number) {
    this.buffer = Buffer.allocUnsafe(chunkSize);
    this.view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.length);
  }

  /** Returns what was written and starts a new buffer with room for at least `need` bytes. */
  next(need: number): Buffer {
    const full = this.buffer.subarray(0, this.at);
    this.buffer = Buffer.allocUnsafe(Math.max(this.chunkSize, need));
    this.view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.length);
    this.at = 0;
    return full;
  }
}

/** One field (length and value) encoded on its own, for constant columns. */
function binaryCell(type: LogicalType, value: CellValue): Buffer {
  const buffer = Buffer.alloc(12 + (typeof value === 'string' ? value.length * 3 : 0));
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
  return buffer.subarray(0, writeCell(buffer, view, 0, type, value));
}

/** Writes one field at `at` (room checked by the caller); returns the offset after it. */
function writeCell(buffer: Buffer, view: DataView, at: number, type: LogicalType, value: CellValue): number {
  if (value === null) {
    view.setInt32(at, -1);
    return at + 4;
  }
  switch (type) {
    case 'text': {
      const bytes = writeUtf8(buffer, at + 4, value as string);
      view.setInt32(at, bytes);
      return at + 4 + bytes;
    }
    case 'json': {
      buffer[at + 4] = 1;
      const bytes = writeUtf8(buffer, at + 5, value as string);
      view.setInt32(at, bytes + 1);
      return at + 5 + bytes;
    }
    case 'bigint':
      view.setInt32(at, 8);
      if (typeof value === 'bigint') view.setBigInt64(at + 4, value);
      else writeInt64(view, at + 4, value as number);
      return at + 12;
    case 'double':
      view.setInt32(at, 8);
      view.setFloat64(at + 4, value as number);
      return at + 12;
    case 'boolean':
      view.setInt32(at, 1);
      buffer[at + 4] = value ? 1 : 0;
      return at + 5;
    case 'timestamp': {
      view.setInt32(at, 8);
      const ms = (value as number) - POSTGRES_EPOCH_MS;
      if (Math.abs(ms) < EXACT_MS) writeInt64(view, at + 4, ms * 1000);
      else view.setBigInt64(at + 4, BigInt(ms) * 1000n);
      return at + 12;
    }
  }
}

/** Writes a safe integer as a big-endian int64. */
function writeInt64(view: DataView, at: number, value: number): void {
  const high = Math.floor(value / TWO_32);
  view.setInt32(at, high);
  view.setUint32(at + 4, value - high * TWO_32);
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
