/** `a, b,,c` → `['a', 'b', 'c']`; undefined stays undefined. */
export function splitList(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
