import { describe, expect, it } from 'vitest';
import type { BatchRow } from '../../src/destinations/destination.js';
import type { RoundKeyRow, WorkItem } from '../../src/destinations/fleet-store.js';
import { resumable } from '../../src/engine/fleet/item-scope.js';
import { inShard } from '../../src/engine/fleet/shard.js';
import { chooseKey, grantToUsableKey, keyOfShard, type WorkerKey } from '../../src/engine/fleet/worker-key.js';
import type { ServiceClient } from '../../src/engine/service-calls.js';
import type { StreamContext } from '../../src/engine/stream-context.js';

const key = (keyId: string, weight = 1, primary = false): WorkerKey => ({
  keyId,
  client: {} as ServiceClient,
  primary,
  weight,
  maxCredits: undefined,
  keepBalance: undefined,
  balance: undefined,
  jobSlots: 2,
});
const row = (keyId: string, left: number, refusal: string | null = null, spent = 0): RoundKeyRow => ({
  keyId,
  creditLimit: left + spent,
  weight: 1,
  reserved: 0,
  spent,
  refusal,
});
const item = (shard: number, keyId: string | null = null): WorkItem => ({
  roundId: 'r',
  item: `s#${shard + 1}/4`,
  stream: 's',
  phase: 0,
  shard,
  shards: 4,
  attempts: 1,
  takenOverRun: null,
  keyId,
});

describe('how a fleet spreads items over its keys', () => {
  const keys = [key('key_a', 1, true), key('key_b', 1)];

  it('given equal weights, when shards fall to keys, then half go to each, the same every time', () => {
    expect([0, 1, 2, 3].map((s) => keyOfShard({ shard: s, shards: 4 }, keys)?.keyId)).toEqual([
      'key_a',
      'key_a',
      'key_b',
      'key_b',
    ]);
  });

  it('given weights 1 and 3, when four shards fall to keys, then the heavier key takes three', () => {
    const weighted = [key('key_a', 1), key('key_b', 3)];
    expect([0, 1, 2, 3].map((s) => keyOfShard({ shard: s, shards: 4 }, weighted)?.keyId)).toEqual([
      'key_a',
      'key_b',
      'key_b',
      'key_b',
    ]);
  });

  it('given an item an earlier attempt ran with key B, when its shard falls to A, then it keeps B (its jobs are B’s)', () => {
    expect(chooseKey(item(0, 'key_b'), keys, [row('key_a', 10), row('key_b', 10)])?.keyId).toBe('key_b');
  });

  it('given the shard’s key refused or spent, when a key is chosen, then the other takes the item; none left, none', () => {
    expect(chooseKey(item(0), keys, [row('key_a', 10, '401'), row('key_b', 10)])?.keyId).toBe('key_b');
    expect(chooseKey(item(0), keys, [row('key_a', 0, null, 50), row('key_b', 10)])?.keyId).toBe('key_b');
    expect(chooseKey(item(0), keys, [row('key_a', 0, '402'), row('key_b', 0, '401')])).toBeUndefined();
  });

  it('given jobs recorded with a key or none, when a run of key B looks at them, then it may read only B’s (and unmarked ones only as the primary)', () => {
    const ctx = (keyId: string, primary: boolean) => ({ apiKey: { keyId, primary } }) as StreamContext;
    const batch = (keyId: string | null) => ({ keyId }) as BatchRow;
    expect(resumable(ctx('key_b', false), batch('key_b'))).toBe(true);
    expect(resumable(ctx('key_b', false), batch('key_a'))).toBe(false);
    expect(resumable(ctx('key_b', false), batch(null))).toBe(false);
    expect(resumable(ctx('key_a', true), batch(null))).toBe(true);
    expect(resumable({} as StreamContext, batch('key_a'))).toBe(true);
  });

  it('given the chosen key refused by another worker before its grant, when the item takes its grant, then the other key grants it', async () => {
    // The round as the store sees it: key A is refused between the choice (first read) and the grant.
    let rows = [row('key_a', 100), row('key_b', 100)];
    const grants: string[] = [];
    const fleet = {
      roundKeys: async () => rows,
      grant: async (_round: string, _item: string, _worker: string, credits: number, run: { keyId: string }) => {
        grants.push(run.keyId);
        if (run.keyId === 'key_a') {
          rows = [row('key_a', 100, 'the service refused the key (401)'), row('key_b', 100)];
          return 0;
        }
        return credits;
      },
    };
    const chosen = await grantToUsableKey(fleet, item(0), [key('key_a'), key('key_b')], 'w-1', 30, 'run_1');
    expect(grants).toEqual(['key_a', 'key_b']);
    expect(chosen?.key.keyId).toBe('key_b');
    expect(chosen?.granted).toBe(30);
  });

  it('given a usable key that grants nothing (the round is spent) or nothing to pay for, when the item takes its grant, then it keeps that key with 0', async () => {
    const fleet = { roundKeys: async () => [row('key_a', 100), row('key_b', 100)], grant: async () => 0 };
    const keys = [key('key_a'), key('key_b')];
    expect((await grantToUsableKey(fleet, item(0), keys, 'w-1', 30, 'run_1'))?.key.keyId).toBe('key_a');
    expect((await grantToUsableKey(fleet, item(0), keys, 'w-1', 0, 'run_1'))?.granted).toBe(0);
    const none = { roundKeys: async () => [row('key_a', 0), row('key_b', 100, 'refused')], grant: async () => 0 };
    expect(await grantToUsableKey(none, item(0), keys, 'w-1', 30, 'run_1')).toBeUndefined();
  });

  it('given a thousand keys, when cut into 8 shards, then each key is in exactly one shard', () => {
    const keysOf = Array.from({ length: 1000 }, (_, i) => `https://www.network.example/in/p-${i}`);
    for (const k of keysOf)
      expect(Array.from({ length: 8 }, (_, index) => inShard(k, { index, of: 8 })).filter(Boolean)).toHaveLength(1);
    const sizes = Array.from({ length: 8 }, (_, index) => keysOf.filter((k) => inShard(k, { index, of: 8 })).length);
    expect(Math.min(...sizes)).toBeGreaterThan(80);
  });
});
