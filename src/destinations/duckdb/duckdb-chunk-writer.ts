import { endianness } from 'node:os';
import duckdb from '@duckdb/node-bindings';
import { DuckDBDataChunk, DuckDBTypeId, DuckDBVector } from '@duckdb/node-api';
import type { DuckDBAppender, DuckDBType } from '@duckdb/node-api';
import type { CellValue } from '../../normalize/record-shaper.js';

/** Bytes of one value in the vector of each type the writer fills (VARCHAR: a 16-byte `duckdb_string_t`). */
const WIDTH: Partial<Record<DuckDBTypeId, number>> = {
  [DuckDBTypeId.VARCHAR]: 16,
  [DuckDBTypeId.BIGINT]: 8,
  [DuckDBTypeId.DOUBLE]: 8,
  [DuckDBTypeId.TIMESTAMP_TZ]: 8,
  [DuckDBTypeId.BOOLEAN]: 1,
};

const TWO_32 = 4_294_967_296;
/** Values are laid out in JS memory the way the vectors hold them: little-endian. */
const LITTLE_ENDIAN = endianness() === 'LE';
// Microseconds as a double are exact up to 2^53 (year ~2255): beyond that, bigint arithmetic.
const EXACT_MICROS_MS = 9_000_000_000_000;
/** A `duckdb_string_t` holds up to 12 bytes inline, after its 4-byte length. */
const INLINE = 12;
/** Bytes of longer strings copied into a vector per native call: a chunk of 1 MB strings goes in several. */
const HEAP_SEGMENT = 16 << 20;

/** One column of the chunk: its vector and the JS memory its values are written to before one copy into the vector. */
interface Column {
  type: DuckDBTypeId;
  vector: duckdb.Vector;
  buffer: ArrayBuffer;
  bytes: Uint8Array;
  int32: Int32Array;
  uint32: Uint32Array;
  float64: Float64Array;
  int64: BigInt64Array;
  width: number;
}

/**
 * Fills a DuckDB data chunk from shaped columns in JS memory and appends it: each vector gets its
 * values in one copy (numbers, timestamps, booleans, strings of up to 12 ASCII bytes, which a
 * `duckdb_string_t` holds inline). Longer strings are encoded as UTF-8 into one buffer per column
 * that a single native call copies into the vector's string heap; their `duckdb_string_t`s then
 * point into that copy, which lives until the chunk is reset (the appender copies it). A string
 * equal to the row before's (a child row's parent key) reuses its `duckdb_string_t`. Columns of
 * other types are not supported (`supports`). A writer is reused: append one chunk at a time.
 */
export class DuckDbChunkWriter {
  private readonly chunk: DuckDBDataChunk;
  private readonly columns: Column[];
  private readonly size = DuckDBVector.standardSize();
  private readonly validityBuffer = new ArrayBuffer(Math.ceil(DuckDBVector.standardSize() / 64) * 8);
  private readonly validity = new Uint8Array(this.validityBuffer);
  /** Pairs (row, earlier row with the same string) of a string column. */
  private readonly repeats: number[] = [];
  /** UTF-8 of the column's longer strings, `heapBytes` of it used; `heapRows` wait for their address, at `heapOffsets`. */
  private heap = Buffer.allocUnsafe(1 << 16);
  private heapBytes = 0;
  private readonly heapRows: number[] = [];
  private readonly heapOffsets: number[] = [];

  /** True when every type is one the writer fills. */
  static supports(types: readonly DuckDBType[]): boolean {
    return LITTLE_ENDIAN && types.every((type) => WIDTH[type.typeId] !== undefined);
  }

  constructor(types: readonly DuckDBType[]) {
    this.chunk = DuckDBDataChunk.create(types);
    this.columns = types.map((type, c) => {
      const width = WIDTH[type.typeId]!;
      const buffer = new ArrayBuffer(width * this.size + 8);
      return {
        type: type.typeId,
        vector: duckdb.data_chunk_get_vector(this.chunk.chunk, c),
        buffer,
        bytes: new Uint8Array(buffer),
        int32: new Int32Array(buffer),
        uint32: new Uint32Array(buffer),
        float64: new Float64Array(buffer),
        int64: new BigInt64Array(buffer),
        width,
      };
    });
  }

  /** Appends rows `start … start + count - 1` (at most one vector size): `values[c]` feeds column c, null for all-NULL. */
  append(
    appender: DuckDBAppender,
    values: readonly (readonly CellValue[] | null)[],
    start: number,
    count: number,
  ): void {
    const raw = this.chunk.chunk;
    duckdb.data_chunk_reset(raw);
    duckdb.data_chunk_set_size(raw, count);
    for (let c = 0; c < this.columns.length; c++) {
      const column = this.columns[c]!;
      const source = values[c] ?? null;
      const nulls =
        column.type === DuckDBTypeId.VARCHAR
          ? this.fillStrings(column, source, start, count)
          : this.fillFixed(column, source, start, count);
      if (nulls) {
        duckdb.vector_ensure_validity_writable(column.vector);
        duckdb.copy_data_to_vector_validity(column.vector, 0, this.validityBuffer, 0, Math.ceil(count / 64) * 8);
      }
    }
    appender.appendDataChunk(this.chunk);
    // The writer lives as long as its destination: a chunk of very long strings does not keep its buffer.
    if (this.heap.length > 2 * HEAP_SEGMENT) this.heap = Buffer.allocUnsafe(1 << 16);
  }

  /** Starts a validity mask with every row valid. */
  private clearValidity(count: number): void {
    this.validity.fill(0xff, 0, Math.ceil(count / 64) * 8);
  }

  private setNull(row: number): void {
    this.validity[row >> 3]! &= ~(1 << (row & 7));
  }

  /** Numbers, timestamps and booleans; returns true when a value is NULL. */
  private fillFixed(column: Column, values: readonly CellValue[] | null, start: number, count: number): boolean {
    let nulls = false;
    this.clearValidity(count);
    const { int32, uint32, float64, int64, bytes } = column;
    for (let i = 0; i < count; i++) {
      const value = values === null ? null : values[start + i];
      if (value === null || value === undefined) {
        if (!nulls) nulls = true;
        this.setNull(i);
        continue;
      }
      switch (column.type) {
        case DuckDBTypeId.BIGINT:
          if (typeof value === 'number') {
            const high = Math.floor(value / TWO_32);
            uint32[2 * i] = value - high * TWO_32;
            int32[2 * i + 1] = high;
          } else int64[i] = BigInt(value);
          break;
        case DuckDBTypeId.TIMESTAMP_TZ: {
          const ms = Number(value);
          if (Math.abs(ms) < EXACT_MICROS_MS) {
            const micros = ms * 1000;
            const high = Math.floor(micros / TWO_32);
            uint32[2 * i] = micros - high * TWO_32;
            int32[2 * i + 1] = high;
          } else int64[i] = BigInt(ms) * 1000n;
          break;
        }
        case DuckDBTypeId.DOUBLE:
          float64[i] = Number(value);
          break;
        default:
          bytes[i] = value ? 1 : 0;
      }
    }
    duckdb.copy_data_to_vector(column.vector, 0, column.buffer, 0, count * column.width);
    return nulls;
  }

  /** Strings (see the class comment); returns true when a value is NULL. */
  private fillStrings(column: Column, values: readonly CellValue[] | null, start: number, count: number): boolean {
    let nulls = false;
    this.clearValidity(count);
    const { bytes, int32 } = column;
    const repeats = this.repeats;
    repeats.length = 0;
    this.heapRows.length = 0;
    this.heapOffsets.length = 0;
    this.heapBytes = 0;
    let previous: string | null = null;
    let previousRow = -1;
    for (let i = 0; i < count; i++) {
      const value = values === null ? null : values[start + i];
      const at = i << 2;
      if (value === null || value === undefined) {
        if (!nulls) nulls = true;
        this.setNull(i);
        int32[at] = int32[at + 1] = int32[at + 2] = int32[at + 3] = 0;
        continue;
      }
      const text = typeof value === 'string' ? value : String(value);
      if (text === previous) {
        repeats.push(i, previousRow);
        continue;
      }
      previous = text;
      previousRow = i;
      if (text.length > INLINE || !writeInline(bytes, int32, i, text)) this.encode(column, i, text);
    }
    this.placeHeap(column);
    for (let k = 0; k < repeats.length; k += 2) {
      const to = repeats[k]! << 2;
      const from = repeats[k + 1]! << 2;
      int32[to] = int32[from]!;
      int32[to + 1] = int32[from + 1]!;
      int32[to + 2] = int32[from + 2]!;
      int32[to + 3] = int32[from + 3]!;
    }
    duckdb.copy_data_to_vector(column.vector, 0, column.buffer, 0, count << 4);
    return nulls;
  }

  /**
   * Writes `text` (longer than 12 bytes or not ASCII) at `row`: inline when its UTF-8 fits after
   * all, else into the string buffer, its length and prefix now and its address by `placeHeap`.
   */
  private encode(column: Column, row: number, text: string): void {
    const room = text.length * 3;
    if (this.heapBytes > 0 && this.heapBytes + room > HEAP_SEGMENT) this.placeHeap(column);
    if (this.heap.length - this.heapBytes < room) this.growHeap(this.heapBytes + room);
    const offset = this.heapBytes;
    const length = this.heap.write(text, offset, 'utf8');
    const at = row << 2;
    column.int32[at] = length;
    if (length <= INLINE) {
      column.int32[at + 1] = column.int32[at + 2] = column.int32[at + 3] = 0;
      for (let k = 0; k < length; k++) column.bytes[(row << 4) + 4 + k] = this.heap[offset + k]!;
      return;
    }
    column.int32[at + 1] = this.heap.readInt32LE(offset);
    this.heapRows.push(row);
    this.heapOffsets.push(offset);
    this.heapBytes += length;
  }

  /**
   * Copies the string buffer into the vector's string heap in one native call (as the value of
   * its first row) and points the rows waiting for an address into that copy, which lives until
   * the chunk is reset (the appender copies it).
   */
  private placeHeap(column: Column): void {
    const rows = this.heapRows;
    if (rows.length === 0) return;
    const first = rows[0]!;
    duckdb.vector_assign_string_element_len(column.vector, first, this.heap.subarray(0, this.heapBytes));
    const assigned = duckdb.vector_get_data(column.vector, (first + 1) << 4);
    // DuckDB refuses invalid UTF-8 by making the row NULL, silently: the address read back would then be stale.
    const stored = new DataView(assigned.buffer, assigned.byteOffset + (first << 4), 4).getUint32(0, true);
    if (stored !== this.heapBytes)
      throw new Error(`DuckDB did not take ${this.heapBytes} bytes of strings into the vector (it holds ${stored})`);
    const base = readAddress(assigned, first << 4);
    const int32 = column.int32;
    for (let k = 0; k < rows.length; k++) {
      const at = rows[k]! << 2;
      const address = base + this.heapOffsets[k]!;
      const high = Math.floor(address / TWO_32);
      int32[at + 2] = address - high * TWO_32;
      int32[at + 3] = high;
    }
    rows.length = 0;
    this.heapOffsets.length = 0;
    this.heapBytes = 0;
  }

  /** Grows the string buffer to at least `bytes`, keeping what it holds. */
  private growHeap(bytes: number): void {
    const grown = Buffer.allocUnsafe(Math.max(bytes, this.heap.length * 2));
    this.heap.copy(grown, 0, 0, this.heapBytes);
    this.heap = grown;
  }
}

/** The address in the `duckdb_string_t` at `at` of `data` (little-endian; user-space addresses are below 2^53). */
function readAddress(data: Uint8Array, at: number): number {
  const view = new DataView(data.buffer, data.byteOffset + at, 16);
  return view.getUint32(8, true) + view.getUint32(12, true) * TWO_32;
}

/** Writes `text` as an inlined `duckdb_string_t` at `row` when it is ASCII (bytes = UTF-16 units); false otherwise. */
function writeInline(bytes: Uint8Array, int32: Int32Array, row: number, text: string): boolean {
  const at = row << 4;
  const length = text.length;
  // Unused inline bytes must be zero: DuckDB compares inlined strings 16 bytes at a time.
  int32[(row << 2) + 1] = int32[(row << 2) + 2] = int32[(row << 2) + 3] = 0;
  for (let k = 0; k < length; k++) {
    const code = text.charCodeAt(k);
    if (code > 0x7f) return false;
    bytes[at + 4 + k] = code;
  }
  int32[row << 2] = length;
  return true;
}
