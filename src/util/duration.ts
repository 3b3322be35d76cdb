const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/;

/** True when `text` is a duration such as `90s`, `15m`, `12h`, `7d`, `2w` or `0s`. */
export function isDuration(text: string): boolean {
  return DURATION.test(text.trim());
}

/** Parses a duration such as `7d` into milliseconds; throws on anything else. */
export function parseDuration(text: string): number {
  const match = DURATION.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a duration: use a number followed by ms, s, m, h, d or w (e.g. 7d)`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}
