const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Throws unless `name` is a safe SQL identifier (`^[a-z_][a-z0-9_]{0,62}$`), so it may be quoted into SQL. */
export function assertIdentifier(name: string): void {
  if (!IDENTIFIER.test(name)) {
    throw new Error(`"${name}" is not a valid identifier: use lower-case letters, digits and _ (at most 63, not starting with a digit)`);
  }
}
