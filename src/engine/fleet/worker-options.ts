import type { SeedlineConfig } from '../../config/config-schema.js';
import type { Destination } from '../../destinations/destination.js';
import type { FleetStore, WorkItem } from '../../destinations/fleet-store.js';
import type { ManifestsByName } from '../../manifest/compile-stream.js';
import type { CostModel } from '../books/cost-model.js';
import type { RunResult } from '../pipeline.js';
import type { Reporter } from '../stream-context.js';
import type { WorkerKey } from './worker-key.js';

/** What a worker works with and how. */
export interface WorkerOptions {
  /** This worker's id in `_seedline_workers` (unique in the fleet). */
  workerId: string;
  host: string;
  config: SeedlineConfig;
  baseDir: string;
  manifests: ManifestsByName;
  /** The Postgres destination, locked in shared mode. */
  destination: Destination;
  fleet: FleetStore;
  /** The API keys it calls with, connected, the primary first. */
  keys: readonly WorkerKey[];
  costs: CostModel;
  reporter: Reporter;
  /** How long a lease lasts without a heartbeat (the worker renews it every third of that). */
  leaseMs: number;
  /** Parts each stream of seeds or parent rows is cut into, so workers share it. */
  shards: number;
  /** Exit once no round is open and the round this worker joined is done (for cron and orchestrators). */
  untilIdle: boolean;
  /** A new round opens at most this often; and how often an idle worker looks for one. */
  roundEveryMs: number;
  /** How often a worker waiting for items held by others looks again. */
  claimPollMs: number;
  /** Aborted to stop: the item under way stops after its page commits and is left due for another worker. */
  stop: AbortSignal;
  /** Told of each item's run once it ended, with the key it called with (metrics). Default: none. */
  onRun?: (result: RunResult, item: WorkItem, keyId: string) => void;
}
