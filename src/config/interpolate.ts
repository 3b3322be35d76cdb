const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

/** A `${VAR}` with no value and no default, with the config key where it stands. */
export interface MissingVariable {
  /** Config key holding the placeholder (`api.api_key`). */
  key: string;
  /** The variable's name. */
  variable: string;
}

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed YAML document.
 * Works on values, not on the raw text, so a value can never break the YAML structure.
 */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, missing: MissingVariable[], key = ''): unknown {
  if (typeof value === 'string') {
    // A value that is one placeholder takes the type its text spells: `${BUDGET:-5000}` is a number.
    if (WHOLE.test(value)) return typed(substitute(value, env, missing, key));
    return substitute(value, env, missing, key);
  }
  if (Array.isArray(value)) return value.map((item, index) => interpolate(item, env, missing, `${key}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolate(v, env, missing, key ? `${key}.${k}` : k)]),
    );
  }
  return value;
}

function substitute(value: string, env: NodeJS.ProcessEnv, missing: MissingVariable[], key: string): string {
  return value.replace(PLACEHOLDER, (_match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      missing.push({ key: key || '(root)', variable: name });
      return '';
    });
}

function typed(text: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}
