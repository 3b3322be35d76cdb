import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll } from 'vitest';
import type { Destination, DestinationConfig, DestinationKind, SeedRow } from '../../src/destinations/destination.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { dropPostgresSchema, postgresAvailable, testPostgresUrl } from './postgres.js';

/** A fresh, empty place to load into: a temp DuckDB file, or a fresh Postgres schema. */
export interface TestTarget {
  kind: DestinationKind;
  /** DuckDB file path, or the Postgres schema. */
  where: string;
  /** A new destination on this target (each call is a separate writer). */
  open(): Promise<Destination>;
  /** Closes what `open` returned and removes the target. */
  dispose(): Promise<void>;
}

/** The backends every contract test runs against. */
export const destinationKinds: readonly DestinationKind[] = ['duckdb', 'postgres'];

/** Whether a backend can run here (Postgres: the server answers; see test/helpers/postgres.ts). */
export async function backendAvailable(kind: DestinationKind): Promise<boolean> {
  return kind === 'duckdb' ? true : postgresAvailable();
}

/** A backend for the tests of one `describe`: whether it runs here, and a fresh target per test. */
export interface BackendUnderTest {
  /** Whether the backend runs here (known once the describe's `beforeAll` ran). */
  readonly available: boolean;
  /** The test's destination on a fresh target (one per test, removed after it), system tables made. */
  open(): Promise<Destination>;
  /** Another writer on the test's target, as it is. */
  another(): Promise<Destination>;
}

/** Registers the `beforeAll`/`afterEach` that give each test of the calling `describe` a fresh target of `kind`. */
export function useBackend(kind: DestinationKind): BackendUnderTest {
  let available = false;
  let target: TestTarget | null = null;
  beforeAll(async () => {
    available = await backendAvailable(kind);
  });
  afterEach(async () => {
    await target?.dispose();
    target = null;
  });
  return {
    get available() {
      return available;
    },
    async open() {
      target ??= makeTestTarget(kind);
      const destination = await target.open();
      await destination.ensureSystemTables();
      return destination;
    },
    another() {
      target ??= makeTestTarget(kind);
      return target.open();
    },
  };
}

/** Makes a fresh target of a backend. */
export function makeTestTarget(kind: DestinationKind): TestTarget {
  const opened: Destination[] = [];
  if (kind === 'duckdb') {
    const dir = mkdtempSync(join(tmpdir(), 'seedline-dest-'));
    const path = join(dir, 'warehouse.duckdb');
    return {
      kind,
      where: path,
      async open() {
        const destination = await createDestination({ type: 'duckdb', path });
        opened.push(destination);
        return destination;
      },
      async dispose() {
        for (const destination of opened) await destination.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  return {
    kind,
    where: schema,
    async open() {
      const destination = await createDestination({ type: 'postgres', url: testPostgresUrl, schema });
      opened.push(destination);
      return destination;
    },
    async dispose() {
      for (const destination of opened) await destination.close();
      await dropPostgresSchema(schema);
    },
  };
}

/** A small, realistic profile record (with positions and education). */
export function profileRecord(n: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: `https://network.example/in/person-${n}`,
    public_identifier: `person-${n}`,
    urn: 1000 + n,
    full_name: `Person ${n}`,
    headline: `Engineer #${n}`,
    location: { city: 'Lyon', region: 'ARA', country: 'FR' },
    current_company: { name: 'Acme', url: 'https://network.example/company/acme', title: 'Engineer', headcount: 120 },
    positions: [
      { title: 'Engineer', company: 'Acme', started_at: '2021-03', skills: ['ts', 'sql'] },
      { title: 'Intern', company: 'Initech', started_at: '2019', ended_at: '2020-08' },
    ],
    education: [{ school: 'INSA', degree: 'MSc', field: 'CS' }],
    skills: ['typescript', 'postgres'],
    connections_count: 500 + n,
    followers_count: 10 * n,
    scraped_at: '2024-05-01T12:00:00.000Z',
    ...overrides,
  };
}

/** Runs one query on a destination opened for it and closed after (e2e tests read what a CLI run wrote). */
export async function queryDestination(config: DestinationConfig, sql: string): Promise<Record<string, unknown>[]> {
  const destination = await createDestination(config);
  try {
    return await destination.query(sql);
  } finally {
    await destination.close();
  }
}

/** The backends an e2e test runs the CLI against: a DuckDB file in `dir`, or a fresh Postgres schema named after `id` (undefined when no server answers). */
export const e2eBackends: readonly {
  name: DestinationKind;
  make: (dir: string, id: string) => Promise<DestinationConfig | undefined>;
}[] = [
  { name: 'duckdb', make: async (dir) => ({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' }) },
  {
    name: 'postgres',
    make: async (_dir, id) => {
      if (!(await postgresAvailable())) return undefined;
      const schema = `e2e_${id}_${process.pid}`;
      await dropPostgresSchema(schema);
      return { type: 'postgres', url: testPostgresUrl, schema };
    },
  },
];

/** A pending ledger row of the profiles stream for seed `n`, with `over` applied. */
export function seedRow(n: number, over: Partial<SeedRow> = {}): SeedRow {
  return {
    stream: 'profiles',
    seedKey: `person-${n}`,
    seed: `https://www.network.example/in/person-${n}`,
    status: 'pending',
    canonicalUrl: null,
    jobId: null,
    credits: 0,
    fetchedAt: null,
    error: null,
    ...over,
  };
}
