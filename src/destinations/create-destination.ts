import type { Destination, DestinationConfig } from './destination.js';

/**
 * Builds the destination of a config. Nothing is opened yet: the DuckDB file opens on `lock` or
 * the first statement, Postgres connects on first use. The schema defaults to `seedline`. Only the
 * configured backend's module is loaded: a DuckDB run never loads pg, a Postgres run never loads
 * libduckdb.
 *
 * @example
 * ```ts
 * const dest = await createDestination({ type: 'duckdb', path: 'data/warehouse.duckdb' });
 * await dest.lock({ holder: `seedline sync (pid ${process.pid})` });
 * await dest.ensureSystemTables();
 * ```
 */
export async function createDestination(config: DestinationConfig): Promise<Destination> {
  switch (config.type) {
    case 'duckdb': {
      const { DuckDbDestination } = await import('./duckdb/duckdb-destination.js');
      return new DuckDbDestination({
        path: config.path,
        schema: config.schema ?? 'seedline',
        ...(config.settings ? { settings: config.settings } : {}),
      });
    }
    case 'postgres': {
      const { PostgresDestination } = await import('./postgres/postgres-destination.js');
      return new PostgresDestination({
        url: config.url,
        schema: config.schema ?? 'seedline',
        ...(config.idleInTransactionTimeoutMs ? { idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs } : {}),
      });
    }
  }
}
