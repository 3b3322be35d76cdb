import { InvalidIdentifierError } from './destination-error.js';

/** What every table, column and schema name must match. */
export const IDENTIFIER_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Returns `name` when it is a valid identifier, throws `InvalidIdentifierError` otherwise.
 * @param what Kind of name, for the message (`table`, `column`, `schema`).
 */
export function assertIdentifier(name: string, what: string): string {
  if (typeof name !== 'string' || !IDENTIFIER_PATTERN.test(name)) throw new InvalidIdentifierError(String(name), what);
  return name;
}

/**
 * Turns a schema field name into a column name: camelCase becomes snake_case. The result is
 * validated, not sanitised: a field name that still does not fit is refused rather than guessed.
 */
export function columnNameOf(field: string): string {
  return field.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/** A double-quoted identifier, after validation (for the few statements kysely does not build). */
export function quoteIdentifier(name: string, what = 'identifier'): string {
  return `"${assertIdentifier(name, what)}"`;
}
