/** Fault rates in [0, 1] per scrape or batch-submit request. */
export interface FaultRates {
  /** Share of requests answered 429 `rate_limited`. Default 0. */
  '429'?: number;
  /** Share answered 500 `internal_error`. Default 0. */
  '500'?: number;
  /** Share answered 504 `upstream_timeout`. Default 0. */
  '504'?: number;
  /** Share answered 502 `upstream_error`. Default 0. */
  upstream_error?: number;
}

/** Options of `startSandbox`; every field is optional. */
export interface SandboxOptions {
  /** TCP port; 0 picks a free one. Default 0. */
  port?: number;
  /** Interface to listen on. Default '127.0.0.1'. */
  host?: string;
  /** Seed of fixtures, fault draws and latency draws. Default 1. */
  seed?: number;
  /** Simulated scrape latency range [min, max] in ms, before `timeScale`. Default [0, 0]. */
  latencyMs?: [number, number];
  /** Factor applied to simulated latency (e.g. 0.01 turns 2–8 s into 20–80 ms). Default 1. */
  timeScale?: number;
  /** Seeded fault injection rates. Default: none. */
  faults?: FaultRates;
  /** Requests per minute per key (sliding 60 s of real time). Default 600. */
  rpm?: number;
  /** Running batch jobs per account before 429. Default 5. */
  concurrentBatchJobs?: number;
  /** Starting balance of each `svc_live_*` account, in credits. Default 100000. */
  balance?: number;
  /** Batch items of one job that resolve in parallel, each taking the configured latency. Default 10. */
  batchItemConcurrency?: number;
  /** Start of the virtual clock. Default 2026-11-01T00:00:00Z. */
  startTime?: Date | string;
  /**
   * For tests: awaited before each batch item resolves, with the item's `ref` and operation, so a
   * test can hold an item unresolved until it says so instead of relying on latency. Release every
   * held item before closing the sandbox. Default: none.
   */
  beforeBatchItem?: (item: { ref: string; operation: string }) => Promise<void>;
  /** How repost entries of profile activity look, a choice the spec leaves open. Default: see {@link RepostShape}. */
  reposts?: RepostShape;
}

/**
 * Repost entries carry "metadata of the original post (field names not listed)" (spec): these pick
 * one of the shapes that allows.
 */
export interface RepostShape {
  /** `nested`: the original post under `original_post`; `flat`: its fields (`posted_at`, `text`, `author`, …) beside the repost's own `url`, `urn`. Default 'nested'. */
  original?: 'nested' | 'flat';
  /** Whether an entry carries `reposted_at`. Default true. */
  reposted_at?: boolean;
  /** How long before the repost the original was posted, in days [min, max], drawn per entry. Default [0, 0] (1 to 72 hours). */
  original_age_days?: [number, number];
}

/** Options with every default applied. */
export interface ResolvedOptions {
  port: number;
  host: string;
  seed: number;
  latencyMs: [number, number];
  timeScale: number;
  faults: Required<FaultRates>;
  rpm: number;
  concurrentBatchJobs: number;
  balance: number;
  batchItemConcurrency: number;
  startTime: Date;
  beforeBatchItem: ((item: { ref: string; operation: string }) => Promise<void>) | null;
  reposts: Required<RepostShape>;
}

/** Applies the documented defaults. */
export function resolveOptions(options: SandboxOptions = {}): ResolvedOptions {
  return {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    seed: options.seed ?? 1,
    latencyMs: options.latencyMs ?? [0, 0],
    timeScale: options.timeScale ?? 1,
    faults: resolveFaults(options.faults),
    rpm: options.rpm ?? 600,
    concurrentBatchJobs: options.concurrentBatchJobs ?? 5,
    balance: options.balance ?? 100_000,
    batchItemConcurrency: Math.max(1, options.batchItemConcurrency ?? 10),
    startTime: new Date(options.startTime ?? '2026-11-01T00:00:00Z'),
    beforeBatchItem: options.beforeBatchItem ?? null,
    reposts: {
      original: options.reposts?.original ?? 'nested',
      reposted_at: options.reposts?.reposted_at ?? true,
      original_age_days: options.reposts?.original_age_days ?? [0, 0],
    },
  };
}

/** Fault rates with absent ones set to 0. */
export function resolveFaults(faults: FaultRates = {}): Required<FaultRates> {
  return {
    '429': faults['429'] ?? 0,
    '500': faults['500'] ?? 0,
    '504': faults['504'] ?? 0,
    upstream_error: faults.upstream_error ?? 0,
  };
}
