import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/client/index.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import type { FleetStore } from '../../src/destinations/fleet-store.js';
import type { TableDefinition } from '../../src/normalize/table-definition.js';
import { sleep } from '../../src/util/sleep.js';
import { dropPostgresSchema, postgresAvailable, testPostgresUrl } from '../helpers/postgres.js';
import { z } from 'zod';

// What workers share through Postgres, with several destinations standing for several processes.
const pg = await postgresAvailable();
const schema = `fleet_store_${process.pid}`;

describe.runIf(pg)('the fleet tables of a Postgres warehouse', () => {
  const opened: Destination[] = [];
  const open = async () => {
    const destination = await createDestination({ type: 'postgres', url: testPostgresUrl, schema });
    opened.push(destination);
    return destination;
  };
  let fleets: FleetStore[];
  beforeAll(async () => {
    await dropPostgresSchema(schema);
    fleets = await Promise.all([open(), open(), open()].map(async (d) => (await d).fleetStore!()));
    await Promise.all(fleets.map((fleet) => fleet.ensureTables()));
  });
  afterAll(async () => {
    for (const destination of opened) await destination.close();
    await dropPostgresSchema(schema);
  });

  it('given three limiters sharing a key window of 10 starts a second, when they make 36 attempts at once, then no second of database time holds more than 10 starts', async () => {
    const limiters = fleets.map(
      (fleet) =>
        new RateLimiter({
          requestsPerMinute: 10,
          intervalMs: 1000,
          shared: {
            take: async (limit, windowMs) => {
              for (;;) {
                const wait = await fleet.takeRequest('key_window', limit, windowMs);
                if (wait === 0) return;
                await sleep(wait);
              }
            },
          },
        }),
    );
    await Promise.all(
      limiters.flatMap((limiter) => Array.from({ length: 12 }, () => limiter.schedule(async () => undefined))),
    );
    const starts = (
      await opened[0]!.query<{ at: string }>(
        `select to_char(started_at, 'YYYY-MM-DD HH24:MI:SS.US') as at from "${schema}"._seedline_rate_window where key_id = 'key_window' order by started_at`,
      )
    ).map((row) => Date.parse(`${row.at.replace(' ', 'T')}Z`));
    expect(starts).toHaveLength(36);
    // Any 11 starts in a row span at least the window: no window holds 11.
    for (let i = 10; i < starts.length; i++) expect(starts[i]! - starts[i - 10]!).toBeGreaterThanOrEqual(1000);
  });

  it('given two job slots for a key, when three workers ask for one each, then two get a slot and the third only once one is freed', async () => {
    const [a, b, c] = fleets as [FleetStore, FleetStore, FleetStore];
    const first = await a.takeJobSlot('key_slots', 'w-a', 2, 30_000);
    const second = await b.takeJobSlot('key_slots', 'w-b', 2, 30_000);
    expect([first, second].sort()).toEqual([0, 1]);
    expect(await c.takeJobSlot('key_slots', 'w-c', 2, 30_000)).toBeNull();
    await a.releaseJobSlot('key_slots', first!, 'w-a');
    expect(await c.takeJobSlot('key_slots', 'w-c', 2, 30_000)).toBe(first);
  });

  it('given a round with a credit limit, when items of three workers ask for grants, then they never add up past the limit and what an item spent is counted once', async () => {
    const [a, b, c] = fleets as [FleetStore, FleetStore, FleetStore];
    const items = ['s#1/3', 's#2/3', 's#3/3'].map((item, shard) => ({ item, stream: 's', phase: 0, shard, shards: 3 }));
    const round = await a.openRound(
      { roundId: 'round_grants', creditLimit: 100, items, keys: [{ keyId: 'key_g', creditLimit: 1000, weight: 1 }] },
      { minGapMs: 0 },
    );
    expect(round?.roundId).toBe('round_grants');
    // A second opener gets the same round.
    expect(
      (await b.openRound({ roundId: 'other', creditLimit: 5, items: [], keys: [] }, { minGapMs: 0 }))?.roundId,
    ).toBe('round_grants');
    const claimed = await Promise.all([a, b, c].map((fleet, i) => fleet.claim('round_grants', `w-${i}`, 30_000)));
    expect(new Set(claimed.map((item) => (typeof item === 'string' ? item : item.item))).size).toBe(3);
    const grants = await Promise.all(
      [a, b, c].map((fleet, i) => {
        const item = claimed[i] as { item: string };
        return fleet.grant('round_grants', item.item, `w-${i}`, 60, { runId: `run_${i}`, keyId: 'key_g' });
      }),
    );
    expect(grants.reduce((n, g) => n + g, 0)).toBe(100);
    const done = claimed[0] as { item: string };
    expect(
      await a.finish('round_grants', done.item, 'w-0', { status: 'done', runId: 'run_0', spent: 7, error: null }),
    ).toBe(true);
    const [key] = await a.roundKeys('round_grants');
    expect(key).toMatchObject({ keyId: 'key_g', spent: 7, reserved: 100 - grants[0]! });
    // Finished by another worker than its holder: refused, nothing counted again.
    expect(
      await b.finish('round_grants', done.item, 'w-1', { status: 'done', runId: null, spent: 7, error: null }),
    ).toBe(false);
  });

  it('given two workers, when both evolve one table with different new columns at once, then both succeed and the table has every column', async () => {
    const [first, second] = [await open(), await open()];
    const table = (extra: string): TableDefinition => ({
      name: 'evolving',
      schema: z.object({ id: z.string(), [extra]: z.string().optional() }),
      primaryKey: ['id'],
      writeMode: 'merge',
    });
    await first.ensureTable(table('base'));
    await Promise.all([first.ensureTable(table('from_first')), second.ensureTable(table('from_second'))]);
    const columns = await first.query<{ column_name: string }>(
      `select column_name from information_schema.columns where table_schema = '${schema}' and table_name = 'evolving'`,
    );
    expect(columns.map((c) => c.column_name)).toEqual(
      expect.arrayContaining(['id', 'base', 'from_first', 'from_second']),
    );
  });
});
