import type { FleetStore, RoundKeyRow, WorkItem } from '../../destinations/fleet-store.js';
import { errorType, type ServiceClient } from '../service-calls.js';

/** One API key a worker calls with, connected. */
export interface WorkerKey {
  /** A fingerprint of the key (`key_…`), never the key. */
  keyId: string;
  /** The client calling with it (its rate limiter shares the key's window with the fleet). */
  client: ServiceClient;
  /** Jobs recorded without a key are this key's (the config's first key: what `sync` calls with). */
  primary: boolean;
  /** Its share of the work. */
  weight: number;
  /** Credits a round may spend on it; undefined: no limit of its own. */
  maxCredits: number | undefined;
  /** Credits its account keeps; undefined: no floor. */
  keepBalance: number | undefined;
  /** `credits_remaining` when it connected; undefined: unknown. */
  balance: number | undefined;
  /** Batch jobs its account may run at once (GET /v1/account). */
  jobSlots: number;
}

/** Error types after which a key takes no more work in the round: refused, or out of credits. */
const KEY_REFUSALS: ReadonlyMap<string, string> = new Map([
  ['invalid_api_key', 'the service refused the key (401)'],
  ['insufficient_credits', 'the account is out of credits (402)'],
]);

/**
 * The key an item runs with: the key an earlier attempt called with (its jobs are that key's),
 * else the key the item's shard falls to by weight (so a shard keeps its key from round to round),
 * else the key with the least spent for its weight; only keys not refused with credits left.
 * Undefined when no key has any left.
 */
export function chooseKey(
  item: WorkItem,
  keys: readonly WorkerKey[],
  rows: readonly RoundKeyRow[],
): WorkerKey | undefined {
  const usable = keys.filter((key) => {
    const row = rows.find((r) => r.keyId === key.keyId);
    return row !== undefined && row.refusal === null && row.creditLimit - row.reserved - row.spent > 0;
  });
  const byId = (id: string | null) => usable.find((key) => key.keyId === id);
  const used = (key: WorkerKey) => {
    const row = rows.find((r) => r.keyId === key.keyId)!;
    return (row.reserved + row.spent) / key.weight;
  };
  return (
    byId(item.keyId) ?? byId(keyOfShard(item, keys)?.keyId ?? null) ?? [...usable].sort((a, b) => used(a) - used(b))[0]
  );
}

/**
 * Chooses the item's key (`chooseKey`) and takes a grant of up to `credits` with it. Another
 * worker may refuse the key or spend its credits between the choice and the grant: that key then
 * grants nothing, and the next usable key is chosen, so the item's seeds are not left pending
 * under a grant of 0 while another key could buy them. Undefined when no key is usable; a grant
 * of 0 from a key still usable means the round itself is spent.
 */
export async function grantToUsableKey(
  fleet: Pick<FleetStore, 'roundKeys' | 'grant'>,
  item: WorkItem,
  keys: readonly WorkerKey[],
  workerId: string,
  credits: number,
  runId: string,
): Promise<{ key: WorkerKey; granted: number } | undefined> {
  let rows = await fleet.roundKeys(item.roundId);
  // Each pass passes over a key that became unusable, which it stays for the round: at most one pass a key.
  for (let pass = 0; pass <= keys.length; pass++) {
    const key = chooseKey(item, keys, rows);
    if (!key) return undefined;
    const granted = await fleet.grant(item.roundId, item.item, workerId, credits, { runId, keyId: key.keyId });
    if (granted > 0 || credits === 0) return { key, granted };
    rows = await fleet.roundKeys(item.roundId);
    if (chooseKey({ ...item, keyId: key.keyId }, [key], rows)) return { key, granted };
  }
  return undefined;
}

/** The key a shard falls to when keys share the work by weight: the same on every worker, round after round. */
export function keyOfShard(
  item: Pick<WorkItem, 'shard' | 'shards'>,
  keys: readonly WorkerKey[],
): WorkerKey | undefined {
  const total = keys.reduce((n, key) => n + key.weight, 0);
  const at = ((item.shard + 0.5) / Math.max(1, item.shards)) * total;
  let sum = 0;
  for (const key of keys) {
    sum += key.weight;
    if (at < sum) return key;
  }
  return keys[keys.length - 1];
}

/**
 * The client of `key`, noting the first refusal any call meets (401, 402), so the worker can take
 * the key out of the round once the item's run ends.
 */
export function watchedClient(key: WorkerKey): { client: ServiceClient; refusal: () => string | null } {
  let refusal: string | null = null;
  const client = new Proxy(key.client, {
    get(target, name) {
      // Read on the client itself: its getters use private fields, which a proxy does not have.
      const value = Reflect.get(target, name) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const answer = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(answer instanceof Promise)) return answer;
        return answer.catch((error: unknown) => {
          refusal ??= KEY_REFUSALS.get(errorType(error) ?? '') ?? null;
          throw error;
        });
      };
    },
  });
  return { client, refusal: () => refusal };
}
