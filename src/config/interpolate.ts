const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** A `${VAR}` with no value and no default, with the config key where it stands. */
export interface MissingVariable {
  key: string;
  variable: string;
}

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed YAML document.
 * Works on values, not on the raw text, so a value can never break the YAML structure.
 */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, missing: MissingVariable[], key = ''): unknown {
  if (typeof value === 'string') {
    return value.replace(PLACEHOLDER, (_match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      missing.push({ key: key || '(root)', variable: name });
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => interpolate(item, env, missing, `${key}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolate(v, env, missing, key ? `${key}.${k}` : k)]),
    );
  }
  return value;
}
