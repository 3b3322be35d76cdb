import { homedir } from 'node:os';
import { join } from 'node:path';
import { validate as validateCron } from 'node-cron';
import { z } from 'zod';
import { ProfileWatchedField, SignalInterval } from '../../schemas/signal.js';
import { isDuration, parseDuration } from '../util/duration.js';
import { manifestsSync, type Manifests } from '../manifest/load-manifests.js';
import { streamOptionsSchema, type StreamOptions } from '../manifest/stream-options.js';
import { schemaByName } from '../manifest/schema-registry.js';
import { seedSources } from '../manifest/seed-sources.js';

export { SchemaContractConfig, type StreamOptions } from '../manifest/stream-options.js';

const LOOPBACK = /^http:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?(\/|$)/;
const SchemaName = z
  .string()
  .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'expected lower-case letters, digits and _ (at most 63, not starting with a digit)')
  .default('seedline');
const Duration = z.string().refine(isDuration, { message: 'expected a duration such as 12h, 7d or 0s' });

/** A file or folder path: `~/…` is in the home folder, as in a shell (other relative paths resolve against the config file's folder). */
const FilePath = z
  .string()
  .min(1)
  .refine(
    (path) => !/^~[^/]/.test(path),
    'expected ~/… for a path in your home folder (~user is not expanded), or a path relative to the config file',
  )
  .transform((path) => (path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path));

/** A seed list: inline values, a CSV file column, or a SQL query on the warehouse. */
export const SeedSource = z.union(
  [
    z.array(z.string().min(1)),
    z.strictObject({ file: FilePath, column: z.string().min(1).default('url') }),
    z.strictObject({ sql: z.string().min(1) }),
  ],
  {
    error:
      'expected a list of seeds ([jane-doe, …]), a CSV column ({ file: seeds.csv, column: url }) or a query on the warehouse ({ sql: "select url from …" })',
  },
);
export type SeedSource = z.infer<typeof SeedSource>;

/** The config's value of a seed source: a seed list, or (`entries` declared) a list of objects of that record schema. */
export type SeedsValue = SeedSource | Record<string, unknown>[];

/** Whether a seed source's value is a seed list (inline values, a CSV column or a query), not entries written in the config. */
export function isSeedList(value: SeedsValue | undefined): value is SeedSource {
  return value !== undefined && !(Array.isArray(value) && value.some((item) => typeof item !== 'string'));
}

/**
 * `seeds:`: one optional key per seed source a stream manifest reads (`seeds: profiles` in its
 * partitions, or `{{ seeds.headcount }}` with `seeds: { headcount: { entries: … } }`); any other
 * key is refused. What a source holds comes from the manifests, not from this file.
 */
export function seedsConfigFor(manifests: Manifests): z.ZodType<Record<string, SeedsValue | undefined>> {
  const shape = Object.fromEntries(
    [...seedSources(manifests.values()).values()].map((source) => {
      const value = source.entries === undefined ? SeedSource : z.array(schemaByName(source.entries));
      return [source.name, (source.description ? value.describe(source.description) : value).optional()];
    }),
  );
  return z.strictObject(shape).prefault({}) as unknown as z.ZodType<Record<string, SeedsValue | undefined>>;
}

/** A configured people or company search. */
export const SearchDefinition = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9_-]{1,64}$/, 'expected a short id of a-z, 0-9, _ or -'),
    filters: z.record(z.string(), z.unknown()).optional(),
    search_url: z.string().optional(),
    max_results: z.number().int().min(1).max(1000).default(25),
    variant: z.enum(['default', 'sales-nav', 'standard']).default('default'),
  })
  .refine((s) => (s.filters === undefined) !== (s.search_url === undefined), {
    path: ['filters'],
    message: 'give exactly one of filters or search_url',
  });

/** A bare `profiles:` (YAML null) is present, so it runs with its defaults, like `profiles: {}`. */
const bareKeysAsEmpty = (streams: unknown) =>
  streams !== null && typeof streams === 'object' && !Array.isArray(streams)
    ? Object.fromEntries(Object.entries(streams).map(([name, options]) => [name, options ?? {}]))
    : streams;

/** Each configured stream's options, by stream name; a stream runs when its key is present. */
export type StreamsConfig = Record<string, StreamOptions | undefined>;

/**
 * `streams:`: one optional key per stream manifest, with the options that manifest declares
 * (a stream runs when its key is present, a bare key included); any other key is refused.
 */
export function streamsConfigFor(manifests: Manifests): z.ZodType<StreamsConfig> {
  const shape = Object.fromEntries(
    [...manifests].map(([name, manifest]) => [name, streamOptionsSchema(manifest).optional()]),
  );
  return z.preprocess(bareKeysAsEmpty, z.strictObject(shape)) as unknown as z.ZodType<StreamsConfig>;
}

/** Options of the embedded sandbox (`api.base_url: sandbox`). */
export const EmbeddedSandboxConfig = z.strictObject({
  seed: z.number().int().default(1),
  latency_ms: z.tuple([z.number().min(0), z.number().min(0)]).default([0, 0]),
  rpm: z.number().int().min(1).default(6000),
  faults: z.partialRecord(z.enum(['429', '500', '504', 'upstream_error']), z.number().min(0).max(1)).default({}),
});

const WEBHOOK_URL =
  'expected an absolute http(s) URL the service can reach, such as https://hooks.example.com/webhooks';
/** A webhook URL: missing and malformed are told apart. */
const webhookUrl = () =>
  z.url({
    protocol: /^https?$/,
    error: (issue) => (issue.input === undefined ? `missing: ${WEBHOOK_URL}` : WEBHOOK_URL),
  });

/** The account's webhooks as `seedline signals apply` keeps them (PATCH /v1/account). */
export const AccountDefaultWebhook = z
  .strictObject(
    {
      /** Default webhook URL: where the service delivers the events of Signals without `notify`. Required. */
      url: webhookUrl().describe(
        "The account's default webhook URL: where the service delivers the events of every Signal created without notify (signals.notify unset).",
      ),
      /** Fallback URL the service sends `signal.paused` events to. Default: none, so the account's is left alone. */
      fallback_url: webhookUrl()
        .optional()
        .describe(
          "The account's fallback webhook URL, where the service sends signal.paused events. Optional: when left out, the account's current one is left alone.",
        ),
    },
    {
      error: (issue) =>
        issue.code === 'invalid_type'
          ? 'expected { url: https://…, fallback_url: https://… } (fallback_url optional)'
          : undefined,
    },
  )
  .describe(
    "The account's default webhook, kept in step by `seedline signals plan|apply` (PATCH /v1/account, free; sent only when it differs from GET /v1/account). " +
      'Signals declared without signals.notify deliver there. The service shows the account webhook secret (it signs batch.completed and signal.paused) once, ' +
      'when a default webhook is first set: apply appends it to the --secrets-out file (or webhooks.secrets_file), never to the output.',
  );
export type AccountDefaultWebhook = z.infer<typeof AccountDefaultWebhook>;

/** The webhook receiver of `seedline serve` (push delivery of Signal Triggers), and the account's default webhook. */
export const WebhooksConfig = z.strictObject({
  /**
   * Secrets that may sign a delivery: each Signal's one-time `webhook_secret`, the account's secret
   * (batch and `signal.paused` events), and during a rotation the old and the new one. Any may
   * match. Write them as `${ENV}` rather than in the file; one that comes out empty
   * (`${ACCOUNT_WEBHOOK_SECRET:-}` where it is not set) does not stop commands other than `serve`,
   * which leaves it out with a warning naming it, and refuses to start with no secret at all.
   */
  secrets: z.array(z.string()).default([]),
  /**
   * The JSON-lines file `seedline signals apply --secrets-out` appends each created Signal's
   * secret to, and the account's secret when `account_default` first sets a default webhook
   * (relative to the config file); re-read when it changes. Default: none.
   */
  secrets_file: FilePath.optional(),
  /**
   * Folder of the durable spool: each accepted delivery is a file there before it is answered,
   * until loaded (relative to the config file). Default: `.seedline/spool`.
   */
  spool_dir: FilePath.default('.seedline/spool'),
  /** Path the receiver answers on. Default: `/webhooks`. */
  path: z
    .string()
    .regex(/^\/[A-Za-z0-9._~\/-]*$/, 'expected a path starting with /, e.g. /webhooks')
    .default('/webhooks'),
  /** Port to listen on (`--port` overrides; 0 picks a free one). Default: 8788. */
  port: z.number().int().min(0).max(65535).default(8788),
  /** Requests `serve` handles at once; more are answered 503 (the service delivers them again later). Connections are capped at 4× this. Default: 256. */
  max_in_flight: z.number().int().min(1).max(100_000).default(256),
  /**
   * The account's default (and fallback) webhook, set by `seedline signals apply` when it differs
   * from the account's. Default: none, so the account's webhooks are left alone.
   */
  account_default: AccountDefaultWebhook.optional(),
});
export type WebhooksConfig = z.infer<typeof WebhooksConfig>;

/** The seed source whose seeds Signals may watch (`signals.targets: { from_seeds: profiles }`). */
export const SIGNALS_SEED_SOURCE = 'profiles';

/** The profiles declared Signals watch: a seed source (as `seeds.*`), or every `seeds.profiles` seed. */
export const SignalTargets = z.union([SeedSource, z.strictObject({ from_seeds: z.literal(SIGNALS_SEED_SOURCE) })], {
  error:
    'expected a list of profiles ([jane-doe, …]), a CSV column ({ file: seeds.csv, column: url }), a query on the warehouse ({ sql: "select url from …" }) or every seeds.profiles seed ({ from_seeds: profiles })',
});
export type SignalTargets = z.infer<typeof SignalTargets>;

const isTimeZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

/** A per-target text template: `{key}` and `{seed}` are its only placeholders. */
const TargetTemplate = z
  .string()
  .min(1)
  .refine(
    (text) => [...text.matchAll(/\{([^{}]*)\}/g)].every((m) => m[1] === 'key' || m[1] === 'seed'),
    'expected only {key} and {seed} as placeholders',
  );

/** Signals as config (`seedline signals plan|apply`): one profile Signal per target, all carrying `tag`. */
export const SignalsConfig = z.strictObject({
  /** The management handle: only Signals carrying this tag are read, updated or pruned. Required. */
  tag: z.string().min(1, 'expected a tag that marks the Signals seedline manages'),
  /** How often each target is checked. Required. */
  schedule: z.strictObject({
    /** Check interval: 1d, 3d, 7d, 14d or 30d. Required. */
    interval: SignalInterval,
    /** IANA time zone of the schedule. Default: `UTC` (the service's default). */
    timezone: z.string().refine(isTimeZone, { message: 'expected an IANA time zone such as Europe/Berlin' }).optional(),
  }),
  /** What counts as a change. Required. */
  criteria: z.strictObject({
    /** Criteria mode; only `field_change` exists. Required. */
    mode: z.literal('field_change'),
    /** Watched profile fields (headline, position, company, location, skills, education); at least one. Required. */
    fields: z.array(ProfileWatchedField).min(1, 'expected at least one watched field'),
  }),
  /** Where Triggers are delivered. Default: none, so the account's default webhook is used (`webhooks.account_default` sets it). */
  notify: z
    .strictObject({
      /** Absolute http(s) URL the service POSTs Trigger events to. Required when `notify` is given. */
      webhook_url: z.url({ protocol: /^https?$/ }),
    })
    .optional(),
  /** Prefix of each created Signal's name (`{name_prefix} — {target url}`); a changed prefix renames by PATCH. Default: `seedline`. */
  name_prefix: z.string().min(1).default('seedline'),
  /** More tags on every managed Signal, besides `tag`. Default: none. */
  tags: z.array(z.string().min(1)).default([]),
  /**
   * Template of each Signal's `external_id` (usage attribution), with `{key}` (the profile's key,
   * e.g. `jane-doe`) and `{seed}` (the target as written). Default: none, so it is left alone.
   */
  external_id: TargetTemplate.max(256, 'expected at most 256 characters').optional(),
  /** Template of each Signal's `metadata` (copied onto its Triggers); string values take `{key}` and `{seed}`. Default: none, so it is left alone. */
  metadata: z
    .record(z.string(), z.unknown())
    .refine((bag) => Buffer.byteLength(JSON.stringify(bag)) <= 8192, 'expected at most 8192 bytes of JSON')
    .optional(),
  /** The profiles to watch: inline list, `{ file, column }`, `{ sql }`, or `{ from_seeds: profiles }`. Required. */
  targets: SignalTargets,
  /**
   * Most credits a month the tagged Signals may be estimated to spend after an apply (checks a
   * month × 1 credit per profile); `signals apply` refuses a plan above it before any call. Default: no limit.
   */
  max_monthly_credits: z.number().int().min(0).optional(),
});
export type SignalsConfig = z.infer<typeof SignalsConfig>;

/** One group of `schedule:`: streams synced together on a cron expression (`seedline schedule`). */
export const ScheduleGroup = z.strictObject({
  /** Cron expression: five fields, or six with seconds first (`0 *\/6 * * *`), checked by every command that reads the config. Required. */
  cron: z
    .string()
    .refine(
      (text) => validateCron(text),
      'expected a cron expression of five fields (six with seconds first), such as "0 */6 * * *"',
    ),
  /** Streams the group syncs (each configured under `streams:`). Required. */
  streams: z.array(z.string().min(1)).min(1, 'expected at least one stream name'),
  /** IANA time zone the expression is read in. Default: `UTC`. */
  timezone: z
    .string()
    .refine(isTimeZone, { message: 'expected an IANA time zone such as Europe/Berlin' })
    .default('UTC'),
  /** A tick missed while no scheduler ran is made up once at start. Default: false. */
  catch_up: z.boolean().default(false),
});
export type ScheduleGroup = z.infer<typeof ScheduleGroup>;

/** An https URL with a host (`https:api.example.com` parses, but names none), or plain http to this machine. */
function isServiceUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === 'https:' && /^https:\/\/[^/]/.test(text) && url.hostname !== '') || LOOPBACK.test(text);
}

const BASE_URL =
  'expected "sandbox" or an https URL (plain http only to localhost: the API key would travel in clear text)';

/** A Postgres connection URL with its scheme and a host (without them pg reads the text as a host name and fails far later). */
function isPostgresUrl(text: string): boolean {
  return /^postgres(ql)?:\/\/[^/]/.test(text) && URL.canParse(text);
}

/** One API key of `api.keys` (or `api.api_key` alone), as `seedline worker` spreads work across them. */
export interface ApiKeyConfig {
  api_key: string;
  max_credits_per_run?: number | undefined;
  keep_balance?: number | undefined;
  weight: number;
}

/** The config's API keys: `api.keys`, or `api.api_key` as the one key; the first is the one every other command calls with. */
export function apiKeysOf(config: Pick<SeedlineConfig, 'api'>): ApiKeyConfig[] {
  return config.api.keys ?? [{ api_key: config.api.api_key!, weight: 1 }];
}

/** The key every command but `worker` calls with: `api.api_key`, else the first of `api.keys`. */
export function primaryApiKey(config: Pick<SeedlineConfig, 'api'>): string {
  return config.api.api_key ?? apiKeysOf(config)[0]!.api_key;
}

/** The whole seedline config file, its `streams:` as `streams` allows. */
const configSchema = (streams: z.ZodType<StreamsConfig>, seeds: z.ZodType<Record<string, SeedsValue | undefined>>) =>
  z.strictObject({
    api: z
      .strictObject({
        base_url: z.string().refine((url) => url === 'sandbox' || isServiceUrl(url), BASE_URL),
        /** The API key. With `keys`, optional: every command but `worker` then calls with the first key (see `apiKeysOf`). */
        api_key: z.string().min(1, 'expected an API key (set SEEDLINE_API_KEY or write it here)').optional(),
        /**
         * Several API keys (accounts) that `seedline worker` spreads work across, each with its own
         * budget and balance floor; a key refused (401) or out of credits stops taking work and the
         * others go on. Other commands call with the first. Default: `api_key` alone.
         */
        keys: z
          .array(
            z.strictObject({
              api_key: z.string().min(1, 'expected an API key (e.g. ${SEEDLINE_API_KEY_2})'),
              /** Credits a round of work may spend on this key. Default: no limit of its own (the run budget applies). */
              max_credits_per_run: z.number().int().min(0).optional(),
              /** Credits this key's account keeps: never spent below. Default: no floor. */
              keep_balance: z.number().int().min(0).optional(),
              /** Its share of the work against the other keys'. Default: 1. */
              weight: z.number().positive().max(1000).default(1),
            }),
          )
          .min(1, 'expected at least one key, or leave keys out and set api_key')
          .max(64)
          .optional(),
        auth: z.enum(['api-key', 'token']).default('api-key'),
        max_concurrency: z.number().int().min(1).max(256).default(16),
        /**
         * Billed single calls (searches, activity and company-post pages, single retries of batch
         * items) on the wire at once, across streams. Each answer is journaled as it arrives, so what a
         * crash (kill -9, power loss) can make a later run buy again is only the answers still on the
         * wire: at most this many calls' worst case, which `plan` prints. 1 keeps that to one call at
         * the price of speed. Default: `max_concurrency`.
         */
        max_billed_in_flight: z.number().int().min(1).max(256).optional(),
        /**
         * Most bytes one answer of the service may have: a longer body is cut off as it streams in
         * (never buffered whole) and the call fails with `SEEDLINE_ANSWER_TOO_LARGE`, after retries
         * when it is safe to repeat. At most 536870888, the longest text Node can parse. Default: 67108864 (64 MiB).
         */
        max_answer_bytes: z
          .number()
          .int()
          .min(1024, 'expected at least 1024 bytes (default 67108864, 64 MiB)')
          // buffer.constants.MAX_STRING_LENGTH: a longer body cannot become the text JSON.parse reads.
          .max(536_870_888, 'expected at most 536870888 bytes, the longest answer Node can parse')
          .default(64 * 1024 * 1024),
        /**
         * Time one attempt of a call may take, headers and body together: a hung or dripping answer
         * fails with `SEEDLINE_ANSWER_OVERDUE` at this deadline (after retries when it is safe to
         * repeat); each retry gets the whole deadline again. At most 24h. Default: 120s.
         */
        call_deadline: Duration.refine(
          // A text that is no duration at all is named once, by Duration's own message.
          (text) => !isDuration(text) || (parseDuration(text) > 0 && parseDuration(text) <= 86_400_000),
          'expected a duration above 0s and at most 24h, such as 120s',
        ).default('120s'),
        sandbox: EmbeddedSandboxConfig.prefault({}),
      })
      .refine((api) => api.api_key !== undefined || api.keys !== undefined, {
        message: 'expected an API key: set api_key (or SEEDLINE_API_KEY), or list keys',
        path: ['api_key'],
      }),
    destination: z.discriminatedUnion('type', [
      z.strictObject({
        type: z.literal('duckdb'),
        path: FilePath,
        schema: SchemaName,
        // DuckDB settings for the file (memory_limit, threads, checkpoint_threshold, …), over seedline's defaults.
        settings: z
          .record(
            z.string(),
            z
              .union([z.string(), z.number(), z.boolean()], {
                error: 'expected a setting value such as 128MB, 4 or true',
              })
              .transform(String),
          )
          .superRefine((settings, ctx) => {
            for (const name of Object.keys(settings)) {
              if (!/^[a-z_]{1,64}$/.test(name))
                ctx.addIssue({
                  code: 'custom',
                  path: [name],
                  message: 'expected a DuckDB setting name such as memory_limit',
                });
            }
          })
          .optional(),
      }),
      z.strictObject({
        type: z.literal('postgres'),
        url: z
          .string()
          .refine(
            isPostgresUrl,
            'expected a URL such as postgres://user@127.0.0.1:5432/db (postgres:// or postgresql://, then the host)',
          ),
        schema: SchemaName,
      }),
    ]),
    seeds,
    /**
     * Folder of your own stream manifests (`<name>.stream.yaml`, and `_definitions.yaml`), relative
     * to the config file: their streams are configured under `streams:` like the built-in ones.
     * Default: none (the built-in streams only).
     */
    streams_dir: FilePath.optional(),
    streams,
    budget: z
      .strictObject({
        /** Credits one run may spend at most. Default: 1000 (DEFAULT_MAX_CREDITS_PER_RUN; plan and sync say when it applies). */
        max_credits_per_run: z.number().int().min(0).optional(),
        /** Credits all runs of a calendar month (UTC) may spend, counted from `_seedline_runs`. Default: no limit. */
        max_credits_per_month: z.number().int().min(0).optional(),
        /** Credits the account keeps: a run never lets `credits_remaining` fall below this. Default: no floor. */
        keep_balance: z.number().int().min(0).optional(),
      })
      .prefault({}),
    batch: z
      .strictObject({
        chunk_size: z.number().int().min(1).max(1000).default(1000),
        poll_interval_ms: z.number().int().min(10).default(500),
        // Where the service posts `batch.completed` (e.g. the public URL of `seedline serve`); optional: results are polled anyway.
        webhook_url: z.url({ protocol: /^https?$/ }).optional(),
        /**
         * Times an item whose failure the service billed anyway (an enrichment item that failed with
         * 500, 504 or upstream_error bills at submission) is asked again alone in the same run,
         * through its single endpoint (billed only on success). Plan and budget count each retry at
         * the item's price; 0 leaves such items for the next run. Default: 1.
         */
        retry_billed_failures: z.number().int().min(0).max(3).default(1),
        /**
         * Worker threads that parse, validate and shape batch results pages for their writes, so the
         * main thread keeps to the HTTP calls, the ledger and the database: for backfills where
         * loading, not the service, is the bottleneck. They take a job's pages once the stream's table
         * is made in this process (by the unit of an earlier page), and end with the run. Each costs
         * ~45-70 MB of memory. Default: 0 (the main thread does it all): a sync waits on the service
         * far more than on its pages.
         */
        shaping_workers: z.number().int().min(0).max(16).default(0),
      })
      .prefault({}),
    /** Settings of `seedline serve`, and the account's default webhook of `signals apply`; optional, and required only by `serve`. */
    webhooks: WebhooksConfig.optional(),
    /** Declared Signals of `seedline signals plan|apply`; optional, and required only by that command. */
    signals: SignalsConfig.optional(),
    /** Named stream groups of `seedline schedule`; optional, and required only by that command without `--cron`. */
    schedule: z
      .record(
        z.string().regex(/^[a-z0-9_-]{1,64}$/, 'expected a group name of a-z, 0-9, _ or - (at most 64)'),
        ScheduleGroup,
      )
      .optional(),
  });
export type SeedlineConfig = z.infer<ReturnType<typeof configSchema>>;

/** The config schema with the streams of `manifests` (the built-in ones and a `streams_dir`'s). */
export function seedlineConfigFor(manifests: Manifests): ReturnType<typeof configSchema> {
  return configSchema(streamsConfigFor(manifests), seedsConfigFor(manifests));
}

/** The config schema with the built-in streams. */
export const SeedlineConfig = seedlineConfigFor(manifestsSync());
