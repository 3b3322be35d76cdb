/** A config problem, reported before any call is made: names the file, the exact key and what was expected. */
export class ConfigError extends Error {
  /** Stable code for scripts. */
  readonly code = 'SEEDLINE_CONFIG_INVALID';
  /** Every problem found, each `key: message`. */
  readonly problems: readonly string[];

  constructor(file: string, problems: readonly string[]) {
    super(
      `${file} is not a valid seedline config:\n${problems.map((p) => `  - ${p}`).join('\n')}\nFix the keys above and run again; nothing was called.`,
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** A path into the config as written: keys and list indexes. */
export type KeyPath = readonly PropertyKey[];

/** The key a path names, as messages spell it: `streams.activity.kinds[0]`; `(root)` for the whole file. */
export function keyOf(path: KeyPath): string {
  const key = path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i ? '.' : ''}${String(part)}`))
    .join('');
  return key || '(root)';
}
