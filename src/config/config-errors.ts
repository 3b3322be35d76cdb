/** A config problem, reported before any call is made: names the file, the exact key and what was expected. */
export class ConfigError extends Error {
  /** Stable code for scripts. */
  readonly code = 'SEEDLINE_CONFIG_INVALID';
  /** Every problem found, each `key: message`. */
  readonly problems: readonly string[];

  constructor(file: string, problems: readonly string[]) {
    super(`${file} is not a valid seedline config:\n${problems.map((p) => `  - ${p}`).join('\n')}\nFix the keys above and run again; nothing was called.`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
