/**
 * RFC 4180 CSV parsed piece by piece (or whole, by {@link parseCsv}): quoted fields,
 * doubled quotes, CRLF or LF, blank lines dropped. A file is read in pieces of any size (a quote
 * or a CRLF may be split between two), and only the rows of the piece at hand are held.
 *
 * @example
 * ```ts
 * const rows = new CsvRows();
 * for await (const piece of createReadStream(path, 'utf8')) handle(rows.push(piece));
 * handle(rows.end());
 * ```
 */
export class CsvRows {
  private row: string[] = [];
  private field = '';
  private quoted = false;
  /** A `"` or `\r` that ended the last piece: what it means depends on the next character. */
  private held = '';

  /** Parses the next piece; answers the rows it completed. */
  push(piece: string): string[][] {
    const text = this.held + piece;
    const last = text.at(-1);
    // A quote or a CR that ends a piece is read once the next character is known.
    const end = last === '"' || last === '\r' ? text.length - 1 : text.length;
    const { rows, next } = this.parse(text, end);
    this.held = text.slice(next);
    return rows;
  }

  /** Ends the input; answers the last row, if the text did not end with a line break. */
  end(): string[][] {
    const rows = this.held === '' ? [] : this.parse(this.held, this.held.length).rows;
    this.held = '';
    if (this.field !== '' || this.row.length > 0) {
      this.row.push(this.field);
      rows.push(this.row);
    }
    this.row = [];
    this.field = '';
    return rows.filter(notBlank);
  }

  /**
   * Parses `text` up to `end` (a doubled quote may read one character past it); answers the rows and where it stopped.
   * A field is cut out of the text in runs, not built a character at a time: V8 keeps such a field as a chain of one
   * node per character (~1.4 KB for a 45-character URL) for as long as it lives.
   */
  private parse(text: string, end: number): { rows: string[][]; next: number } {
    const rows: string[][] = [];
    let { field, quoted } = this;
    /** Where the run of plain characters not yet added to `field` starts. */
    let from = 0;
    let i = 0;
    for (; i < end; i++) {
      const char = text.charCodeAt(i);
      if (quoted) {
        if (char !== QUOTE) continue;
        field += text.slice(from, i);
        if (text.charCodeAt(i + 1) === QUOTE) {
          field += '"';
          i++;
        } else quoted = false;
        from = i + 1;
      } else if (char === QUOTE) {
        field += text.slice(from, i);
        quoted = true;
        from = i + 1;
      } else if (char === COMMA) {
        this.row.push(field + text.slice(from, i));
        field = '';
        from = i + 1;
      } else if (char === LF || char === CR) {
        this.row.push(field + text.slice(from, i));
        if (char === CR && text.charCodeAt(i + 1) === LF) i++;
        rows.push(this.row);
        this.row = [];
        field = '';
        from = i + 1;
      }
    }
    this.field = field + text.slice(from, Math.max(from, i));
    this.quoted = quoted;
    return { rows: rows.filter(notBlank), next: i };
  }
}

const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;

function notBlank(row: string[]): boolean {
  return row.length > 1 || row[0] !== '';
}

/** Parses a whole RFC 4180 CSV text into rows of fields (blank lines dropped). */
export function parseCsv(text: string): string[][] {
  const rows = new CsvRows();
  return [...rows.push(text), ...rows.end()];
}
