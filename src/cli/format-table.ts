/**
 * Renders rows as an aligned text table (numbers right-aligned), header from the first row's keys.
 * Each cell is one line: runs of whitespace (newlines, tabs) become one space, then cells over 60
 * characters are cut with `...`.
 */
export function formatTable(
  rows: readonly Record<string, unknown>[],
  columns: readonly string[] = Object.keys(rows[0] ?? {}),
): string {
  if (columns.length === 0) return '(no rows)';
  const cells = rows.map((row) => columns.map((column) => cellText(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((row) => row[i]!.length)));
  const numeric = columns.map(
    (column) =>
      rows.length > 0 &&
      rows.every((row) => typeof row[column] === 'number' || row[column] === null || row[column] === undefined),
  );
  const line = (values: string[]) =>
    values
      .map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line([...columns]), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** Renders rows as RFC 4180 CSV. */
export function formatCsv(rows: readonly Record<string, unknown>[]): string {
  const columns = Object.keys(rows[0] ?? {});
  const escape = (value: unknown) => {
    const text =
      value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return [columns.map(escape).join(','), ...rows.map((row) => columns.map((c) => escape(row[c])).join(','))].join('\n');
}

/** Widest cell before it is cut (with `...`). */
const MAX_CELL = 60;

/** One line of at most {@link MAX_CELL} characters: newlines and tabs would break the table's rows and columns. */
function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = (typeof value === 'object' ? JSON.stringify(value) : String(value)).replace(/\s+/g, ' ').trim();
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 3)}...` : text;
}
