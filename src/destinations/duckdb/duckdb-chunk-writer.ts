import { endianness } from 'node:os';
import duckdb from '@duckdb/node-bindings';
import { DuckDBDataChunk, DuckDBTypeId, DuckDBVector } from '@duckdb/node-api';
import type { DuckDBAppender, DuckDBType } from '@duckdb/node-api';
import type { CellValue } from '../record-shaper.js';

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
 * `duckdb_string_t` holds inline) plus one native call per distinct longer string of the chunk
 * (a repeated one, such as a child row's parent key, reuses the first one's `duckdb_string_t`,
 * whose bytes live in that vector until the chunk is reset; the appender copies them). Columns of
 * other types are not supported (`supports`). A writer is reused: append one chunk at a time.
 */
export class DuckDbChunkWriter {
  private readonly chunk: DuckDBDataChunk;
  private readonly columns: Column[];
  private readonly size = DuckDBVector.standardSize();
  private readonly validityBuffer = new ArrayBuffer(Math.ceil(DuckDBVector.standardSize() / 64) * 8);
  private readonly validity = new Uint8Array(this.validityBuffer);
  /** Rows of a string column waiting for a native call, and their strings. */
  private readonly pendingRows: number[] = [];
  private readonly pendingValues: string[] = [];
  /** Pairs (row, row it repeats) of a string column whose first occurrence is native. */
  private readonly repeats: number[] = [];
  private readonly seen = new Map<string, number>();

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
  append(appender: DuckDBAppender, values: readonly (readonly CellValue[] | null)[], start: number, count: number): void {
    const raw = this.chunk.chunk;
    duckdb.data_chunk_reset(raw);
    duckdb.data_chunk_set_size(raw, count);
    for (let c = 0; c < this.columns.length; c++) {
      const column = this.columns[c]!;
      const source = values[c] ?? null;
      const nulls = column.type === DuckDBTypeId.VARCHAR ? this.fillStrings(column, source, start, count) : this.fillFixed(column, source, start, count);
      if (nulls) {
        duckdb.vector_ensure_validity_writable(column.vector);
        duckdb.copy_data_to_vector_validity(column.vector, 0, this.validityBuffer, 0, Math.ceil(count / 64) * 8);
      }
    }
    appender.appendDataChunk(this.chunk);
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
    const pendingRows = this.pendingRows;
    const pendingValues = this.pendingValues;
    const repeats = this.repeats;
    const seen = this.seen;
    pendingRows.length = 0;
    pendingValues.length = 0;
    repeats.length = 0;
    seen.clear();
    let previous: string | null = null;
    let previousRow = -1;
    let previousNative = false;
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
        if (previousNative) repeats.push(i, previousRow);
        else {
          const from = previousRow << 2;
          int32[at] = int32[from]!;
          int32[at + 1] = int32[from + 1]!;
          int32[at + 2] = int32[from + 2]!;
          int32[at + 3] = int32[from + 3]!;
        }
        continue;
      }
      previous = text;
      previousRow = i;
      previousNative = false;
      if (text.length <= INLINE && writeInline(bytes, int32, i, text)) continue;
      const first = seen.get(text);
      if (first !== undefined) {
        repeats.push(i, first);
        previousRow = first;
      } else {
        seen.set(text, i);
        pendingRows.push(i);
        pendingValues.push(text);
      }
      previousNative = true;
    }
    const vector = column.vector;
    duckdb.copy_data_to_vector(vector, 0, column.buffer, 0, count << 4);
    for (let k = 0; k < pendingRows.length; k++) duckdb.vector_assign_string_element(vector, pendingRows[k]!, pendingValues[k]!);
    if (repeats.length > 0) {
      // The first occurrences now hold pointers into the vector's own string heap: copy those 16 bytes to the repeats.
      const data = duckdb.vector_get_data(vector, count << 4);
      const words = new Int32Array(data.buffer, data.byteOffset, count << 2);
      for (let k = 0; k < repeats.length; k += 2) {
        const to = repeats[k]! << 2;
        const from = repeats[k + 1]! << 2;
        words[to] = words[from]!;
        words[to + 1] = words[from + 1]!;
        words[to + 2] = words[from + 2]!;
        words[to + 3] = words[from + 3]!;
      }
      duckdb.copy_data_to_vector(vector, 0, data.buffer as ArrayBuffer, data.byteOffset, count << 4);
    }
    return nulls;
  }
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
