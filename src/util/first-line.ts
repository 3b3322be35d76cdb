/** The first line of an error's message (or of any value as text): what a one-line log or answer may show. */
export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] || 'unknown error';
}
