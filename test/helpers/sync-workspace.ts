import { join } from 'node:path';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { tempWorkspace } from './cli.js';
import { queryDestination as query } from './destinations.js';

/** Profile seeds the sandbox serves (a quarter with a trailing slash, which the seed key ignores). */
export const PROFILES = Array.from(
  { length: 16 },
  (_, i) => `https://www.network.example/in/person-${i}${i % 4 === 0 ? '/' : ''}`,
);
/** Profile seeds the sandbox refuses (private, deleted). */
export const PRIVATE = ['https://www.network.example/in/private-hidden-one', 'deleted-gone-two'];
/** Company seeds the sandbox serves. */
export const COMPANIES = ['acme-analytics', 'globex', 'initech', 'hooli'].map(
  (c) => `https://www.network.example/company/${c}`,
);

/** What a sync test's config is made of. */
export interface SyncConfigOptions {
  sandbox: Sandbox;
  destination: Record<string, unknown>;
  key?: string;
  /** Default: profiles (7d), companies, jobs and activity. */
  streams?: Record<string, unknown>;
  batch?: Record<string, unknown>;
  /** `budget.max_credits_per_run`. Default: none. */
  budget?: number;
}

/** A config of the seeds above on a sandbox (write it with `writeConfig`). */
export function syncConfig(o: SyncConfigOptions) {
  return {
    api: { base_url: o.sandbox.url, api_key: o.key ?? 'svc_live_e2e' },
    destination: o.destination,
    seeds: { profiles: [...PROFILES, ...PRIVATE], companies: COMPANIES },
    streams: o.streams ?? {
      profiles: { refresh_after: '7d' },
      companies: {},
      jobs: { keywords: ['data engineer'], max_results: 5 },
      activity: { kinds: ['posts', 'comments'], max_pages: 2 },
    },
    batch: { chunk_size: 5, poll_interval_ms: 20, ...o.batch },
    ...(o.budget === undefined ? {} : { budget: { max_credits_per_run: o.budget } }),
  };
}

/** Rows in one table of the destination's schema. */
export async function countRows(config: DestinationConfig, table: string): Promise<number> {
  const rows = await query(config, `select count(*) as n from "${config.schema}"."${table}"`);
  return Number(rows[0]?.n);
}

/** Runs `body` with a fresh sandbox, a temp folder and a DuckDB destination in it; closes the sandbox after. */
export async function inSyncWorkspace<T>(
  options: SandboxOptions,
  body: (w: { sandbox: Sandbox; dir: string; dest: DestinationConfig }) => Promise<T>,
): Promise<T> {
  const sandbox = await startSandbox(options);
  try {
    const dir = await tempWorkspace();
    return await body({ sandbox, dir, dest: { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' } });
  } finally {
    await sandbox.close();
  }
}
