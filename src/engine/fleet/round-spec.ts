import type { SeedlineConfig } from '../../config/config-schema.js';
import type { Destination } from '../../destinations/destination.js';
import type { RoundKeySpec, RoundSpec, WorkItemSpec } from '../../destinations/fleet-store.js';
import type { CompiledStream, ManifestsByName } from '../../manifest/compile-stream.js';
import { runId as newRunId } from '../../util/run-id.js';
import { budgetLimits } from '../books/run-limits.js';
import { selectStreams } from '../pipeline.js';
import type { WorkerKey } from './worker-key.js';

/** What a round is made from. */
export interface RoundInputs {
  config: SeedlineConfig;
  manifests: ManifestsByName;
  destination: Destination;
  /** The keys this worker connected with. */
  keys: readonly WorkerKey[];
  /** Parts each stream of seeds or parent rows is cut into. */
  shards: number;
}

/**
 * A new round: every configured stream, dependencies first, each a phase; a stream of seeds or
 * parent rows cut into `shards` items, any other one item. Its credit limit is the least of the
 * run budget and what the month has left; each key's, the least of its own budget and its
 * balance above its floor (its `keep_balance`, else `budget.keep_balance`).
 */
export async function roundSpec(inputs: RoundInputs): Promise<RoundSpec> {
  const streams = selectStreams({ config: inputs.config, manifests: inputs.manifests });
  const items: WorkItemSpec[] = streams.flatMap((stream, phase) => {
    const shards = shareable(stream) ? Math.max(1, inputs.shards) : 1;
    return Array.from({ length: shards }, (_, shard) => ({
      item: `${stream.name}#${shard + 1}/${shards}`,
      stream: stream.name,
      phase,
      shard,
      shards,
    }));
  });
  // The balance floor is each key's own (below): the round's limit counts the run and the month.
  const limits = await budgetLimits(inputs, undefined);
  const creditLimit = Math.min(limits.perRun ?? Infinity, limits.monthLeft ?? Infinity);
  return { roundId: newRunId('round'), creditLimit: credits(creditLimit), items, keys: inputs.keys.map(keySpec) };
}

function keySpec(key: WorkerKey): RoundKeySpec {
  const floor = key.keepBalance;
  // An unknown balance allows nothing under a floor: the floor cannot be proven.
  const aboveFloor = floor === undefined ? Infinity : key.balance === undefined ? 0 : key.balance - floor;
  return {
    keyId: key.keyId,
    creditLimit: credits(Math.min(key.maxCredits ?? Infinity, aboveFloor)),
    weight: key.weight,
  };
}

/** Credits as a table holds them: never below 0, never past what a bigint column and a JS number share. */
function credits(limit: number): number {
  return Math.max(0, Math.min(limit, Number.MAX_SAFE_INTEGER));
}

/** Streams whose partitions come from seed lists or parent rows: enough of them to share out. */
function shareable(stream: CompiledStream): boolean {
  return stream.partitions.parents.length > 0 || stream.partitions.origins.some((o) => o.seeds !== undefined);
}
