import { userInfo } from 'node:os';
import type { ClientConfig } from 'pg';

/**
 * Connection settings of a URL, with libpq's default user (the OS user) when neither the URL
 * nor PGUSER/USER names one: node-postgres would otherwise send no user at all.
 */
export function postgresConnection(url: string): ClientConfig {
  if (process.env.PGUSER || process.env.USER) return { connectionString: url };
  try {
    const parsed = new URL(url);
    if (parsed.username === '' && (parsed.protocol === 'postgres:' || parsed.protocol === 'postgresql:')) {
      parsed.username = encodeURIComponent(userInfo().username);
      return { connectionString: parsed.toString() };
    }
  } catch {
    // Not a URL (e.g. key=value settings): pg parses it as it is.
  }
  return { connectionString: url };
}
