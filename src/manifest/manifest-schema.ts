import { z } from 'zod';
import { isDuration } from '../util/duration.js';

// The stream-manifest language: every node carries a `type`, mapped by a registry in the engine
// (`satisfies Record<Type, Factory>`), as in Airbyte's declarative manifests.

/** A template: any YAML value whose strings may hold `{{ path }}` placeholders. */
const Template = z.unknown();

/** How rows are written to a table. */
export const WriteModeNode = z.enum(['merge', 'append', 'replace', 'history']);

/** A destination table of a stream. */
export const TableNode = z.strictObject({
  /** Table name; may be a template (`activity_{{ partition.kind }}`). */
  name: z.string(),
  /**
   * The record schema: a name in the schema registry (may be a template), or `{ file }`, a JSON
   * Schema file beside the manifest.
   */
  schema: z.union([
    z.string(),
    z.strictObject({ file: z.string().regex(/\.json$/, 'expected a .json file beside the manifest') }),
  ]),
  /** Primary-key fields (merge and history). */
  primary_key: z.array(z.string()).default([]),
  /** Write mode; may be a template resolving to one of the modes. */
  write_mode: z.string().default('merge'),
  /** Columns added to every record, as templates over `partition`, `record`, `run`. */
  columns: z.record(z.string(), Template).default({}),
});
export type TableNode = z.infer<typeof TableNode>;

const when = { when: Template.optional() };

/** Where a stream's partitions come from. */
export type PartitionNode =
  | { type: 'seeds'; seeds: string; as: string; seed_kind: 'profile' | 'company' | 'post' | 'raw'; when?: unknown }
  | { type: 'parent'; table: string; columns: string[]; key: string; when?: unknown; expand?: Record<string, unknown> }
  | { type: 'list'; values: unknown; key: string; when?: unknown }
  | { type: 'months'; count: unknown; when?: unknown }
  | { type: 'single'; values?: Record<string, unknown>; when?: unknown }
  | { type: 'union'; of: PartitionNode[] };

export const PartitionNode: z.ZodType<PartitionNode> = z.lazy(() =>
  z.discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('seeds'),
      seeds: z.string(),
      as: z.string().default('url'),
      seed_kind: z.enum(['profile', 'company', 'post', 'raw']).default('raw'),
      ...when,
    }),
    z.strictObject({
      type: z.literal('parent'),
      table: z.string(),
      columns: z.array(z.string()).min(1),
      key: z.string(),
      expand: z.record(z.string(), Template).optional(),
      ...when,
    }),
    z.strictObject({ type: z.literal('list'), values: Template, key: z.string(), ...when }),
    z.strictObject({ type: z.literal('months'), count: Template, ...when }),
    z.strictObject({ type: z.literal('single'), values: z.record(z.string(), Template).optional(), ...when }),
    z.strictObject({ type: z.literal('union'), of: z.array(PartitionNode).min(1) }),
  ]),
) as z.ZodType<PartitionNode>;

/** How a partition pages. */
export const PaginatorNode = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  /** Body `page` + `pagination_token`; stops when `pagination.has_more` is false or the token is null. */
  z.strictObject({ type: z.literal('page_token'), max_pages: Template.default(10) }),
  /** `cursor` argument from `meta.nextCursor`; stops when it is null. */
  z.strictObject({ type: z.literal('cursor'), limit: z.number().int().min(1).default(100) }),
]);
export type PaginatorNode = z.infer<typeof PaginatorNode>;

/** One field name or several (the first present in a record wins). */
const FieldList = z.union([z.string(), z.array(z.string()).min(1)]).transform((f) => (Array.isArray(f) ? f : [f]));

/**
 * Fields chosen by a partition value: `by` is a template over `partition` (`{{ partition.kind }}`),
 * `cases` the field (or fields) of each value. A value with no case is a stream definition error.
 */
const FieldSwitch = z.strictObject({ by: z.string(), cases: z.record(z.string(), FieldList) });

/** The field a record's incremental stamp is read from: one, several (first present wins), or one per partition value. */
const StampField = z.union([FieldList, FieldSwitch]);
export type StampField = z.infer<typeof StampField>;

/** What makes a re-run cheap. */
export const IncrementalNode = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  /** Stop paging at records not newer than the newest `field` saved by the last complete pass; a record without it never stops paging. */
  z.strictObject({ type: z.literal('newest'), field: StampField }),
  /** Pass the newest saved `field` as the request's `since`. */
  z.strictObject({ type: z.literal('since'), field: StampField }),
]);
export type IncrementalNode = z.infer<typeof IncrementalNode>;

/**
 * What an answer holding as many records as the service returns at most means: records beyond it
 * were cut off and no page leads to them. `at` is a template over `args` (the call's rendered
 * argument) and `options`; `notice` a template over `partition`, `args` and `count` (records that came).
 */
export const CapNode = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  /**
   * The pass ends without moving its window: the state keeps the last complete pass's
   * `completed_at` and `newest` (so `state.days_since_last` still reaches back over what was cut),
   * freshness counts from this pass, and `notice` is reported.
   */
  z.strictObject({ type: z.literal('hold_window'), at: Template, notice: z.string() }),
  /**
   * The window (the args named `from` and `to`, ISO instants) is read again in halves, down to
   * `min_days` (default 1), each half only split again when it too is cut; the pieces' records are
   * merged by `key`, adding up the `sum` fields. A piece of `min_days` still cut is loaded as it
   * came, `notice` is reported, and a closed window is not marked final.
   */
  z.strictObject({
    type: z.literal('split_window'),
    at: Template,
    from: z.string(),
    to: z.string(),
    min_days: z.number().int().min(1).default(1),
    key: z.array(z.string()).min(1),
    sum: z.array(z.string()).default([]),
    notice: z.string(),
  }),
]);
export type CapNode = z.infer<typeof CapNode>;

/**
 * What one call costs, as the spec's credit table says: `credits` per `call` (a successful one),
 * per `page` (of up to `page_size` items), per `result` returned, or `free`. `results` (a template
 * over `args`) sizes a call that pages internally (a search asks up to `max_results`): it is priced
 * at that many results, or pages of them; without it a page-priced call is one page. The service's
 * own `x-credits` for the path, when it serves an OpenAPI document, can only raise a reservation.
 */
export const CostNode = z
  .strictObject({
    credits: z.number().min(0).default(0),
    per: z.enum(['call', 'page', 'result', 'free']),
    page_size: z.number().int().min(1).default(25),
    results: Template.optional(),
  })
  .refine((cost) => cost.per === 'free' || cost.credits > 0, {
    path: ['credits'],
    message: 'expected credits above 0 (or per: free)',
  });
export type CostNode = z.infer<typeof CostNode>;

/**
 * A stream's options (its keys under `streams.<name>` in the config), as JSON Schema properties:
 * `type`, `enum`, `default`, `minimum`, `items`, … and `format: duration`. `schema_contract` is
 * added to every stream.
 */
export const OptionsNode = z
  .record(
    z.string().regex(/^[a-z][a-z0-9_]*$/, 'expected an option name of a-z, 0-9 and _'),
    z.record(z.string(), z.unknown()),
  )
  .default({});

/**
 * A seed source a stream reads (the config's `seeds.<name>`): a list of seeds given inline, as a
 * CSV column or as a query, or, with `entries`, a list of objects of that record schema written
 * in the config (a company and its filters).
 */
export const SeedDeclaration = z.strictObject({
  description: z.string().optional(),
  /** The record schema each entry fits (a name in the schema registry); absent: a seed list. */
  entries: z.string().optional(),
});
export type SeedDeclaration = z.infer<typeof SeedDeclaration>;

/** Fields every stream has. */
const streamBase = {
  /** Stream name: equals its file name and (usually) its table; an identifier, as a table name is. */
  name: z
    .string()
    .regex(
      /^[a-z_][a-z0-9_]{0,62}$/,
      'expected a stream name of lower-case letters, digits and _ (at most 63, not starting with a digit), as a table name',
    ),
  description: z.string().optional(),
  /** Streams whose tables this one reads (run first when both are selected). */
  depends_on: z.array(z.string()).default([]),
  /** Units fetched within this duration are skipped (a template, e.g. `{{ options.refresh_after }}`); none: always fetched. */
  refresh_after: Template.optional(),
  /** The stream's options (the config's `streams.<name>` keys). */
  options: OptionsNode,
  /**
   * Seed sources it reads by `{{ seeds.<name> }}`, and what a seed of each looks like; a `seeds`
   * partition node's source needs no entry here. Default: none.
   */
  seeds: z
    .record(z.string().regex(/^[a-z][a-z0-9_]*$/, 'expected a seed source name of a-z, 0-9 and _'), SeedDeclaration)
    .default({}),
  /** What a call (a request stream's page, a batch item) costs. */
  cost: CostNode,
  table: TableNode,
};

/**
 * Refresh on change: a seed watched by an active Signal is due again when a Trigger of that Signal
 * names one of `fields` in its diff (checked after the seed was fetched), whatever its age, and
 * otherwise after `refresh_after` (longer than the stream's own). Signals are read from the
 * `signals` table, Triggers from the `triggers` table (their streams, or `serve`).
 */
export const RefreshOnChangeNode = z.strictObject({
  /** How long a watched seed stays fresh without a Trigger; off when it renders empty (a template over `options`). */
  refresh_after: Template,
  /** The target type of the Signals that watch this stream's seeds (`profile`). */
  signal_target: z.string(),
  /** The target's field holding the seed (`site_url`). */
  target_field: z.string(),
  /** The seed kind whose key the target's value is read as (`profile`). */
  seed_kind: z.string(),
  /** Trigger diff fields that make a watched seed due. */
  fields: z.array(z.string()).min(1),
  /**
   * Trigger diff fields whose `after` is written into a column of the stream's table at no cost
   * (diff field → column), until the full enrichment replaces the row.
   */
  apply: z.record(z.string(), z.string()).default({}),
});
export type RefreshOnChangeNode = z.infer<typeof RefreshOnChangeNode>;

/** A stream fed by batch jobs (`POST /v1/batch`), one item per seed. */
export const BatchStreamNode = z.strictObject({
  type: z.literal('batch'),
  ...streamBase,
  operation: z.string(),
  /** The endpoint an item is asked through alone (a retry of an item whose failure was billed; billed only on success). */
  single: z.strictObject({ path: z.string().regex(/^\//, 'expected a path such as /v1/profiles/enrich') }).optional(),
  /** Whether a failed item is billed all the same (the spec's batch rule 1 for enrichments). Default: false. */
  failed_items_billed: z.boolean().default(false),
  partitions: PartitionNode,
  /** Item params as a template over `partition` and `options`. */
  params: z.record(z.string(), Template),
  /** Refresh watched seeds when a Trigger says they changed. Default: by age only. */
  refresh_on_change: RefreshOnChangeNode.optional(),
});
export type BatchStreamNode = z.infer<typeof BatchStreamNode>;

/**
 * One call of a request stream. `path` may be a template (or a `$switch` over the partition);
 * `body` (POST) or `query` (GET) is a template over `partition`, `options`, `state`, `page`: the
 * call's `args`, which `cost.results`, `cap` and the batch item's params read.
 */
export const RequestNode = z
  .strictObject({
    method: z.enum(['GET', 'POST']).default('POST'),
    path: Template,
    body: Template.optional(),
    query: Template.optional(),
  })
  .refine((request) => !(request.method === 'GET' && request.body !== undefined), {
    path: ['body'],
    message: 'a GET request has no body: use query',
  })
  .refine((request) => !(request.method === 'POST' && request.query !== undefined), {
    path: ['query'],
    message: 'a POST request sends its arguments as body',
  });
export type RequestNode = z.infer<typeof RequestNode>;

/**
 * The batch operation a request stream's call can go as: `operation` (a template; rendering to
 * nothing means this partition's call has none and goes as single calls), and whether a failed
 * item is billed all the same (rendered too). The item's params are the call's `args`.
 */
export const BatchOperationNode = z.strictObject({ operation: Template, failed_items_billed: Template.default(false) });
export type BatchOperationNode = z.infer<typeof BatchOperationNode>;

/**
 * How many records one partition usually holds on the service (a template over the options and
 * the partition: a number, or a `$switch` on a partition field), as the stream's author knows the
 * service. The plan's expected case pays for reading that many in a first pass (pages of the
 * paginator's size, up to its page limit; a search's results, up to `max_results`). Without it, a
 * first pass is expected to read half a page.
 */
export const TypicalNode = z.strictObject({ records: Template });
export type TypicalNode = z.infer<typeof TypicalNode>;

/** A stream fed by direct calls, per partition, page by page. */
export const RequestStreamNode = z.strictObject({
  type: z.literal('request'),
  ...streamBase,
  /** The call: its method and path, and its `body` (POST) or `query` (GET), the call's `args`. */
  request: RequestNode,
  /** The batch operation its pages can go as (`via: batch`): pages then are items of batch jobs. */
  batch: BatchOperationNode.optional(),
  partitions: PartitionNode.default({ type: 'single' }),
  paginator: PaginatorNode.default({ type: 'none' }),
  /** Path to the records in the response (`data.posts`); a single object is one record. */
  records: z.string(),
  incremental: IncrementalNode.default({ type: 'none' }),
  /** What a capped answer (as many records as the service returns, no page further) means. Default: none (taken as complete). */
  cap: CapNode.default({ type: 'none' }),
  /** What one partition usually holds on the service: what the plan expects a first pass to read. Default: none. */
  typical: TypicalNode.optional(),
  /**
   * How long the service keeps these records (`90d`): a pass that finds the last one completed
   * longer ago than that says which stretch may be gone for good. Default: none (kept forever).
   */
  retention: z.string().refine(isDuration, 'expected a duration such as 90d').optional(),
});
export type RequestStreamNode = z.infer<typeof RequestStreamNode>;

/** One stream manifest (`streams/<name>.stream.yaml`). */
export const StreamManifest = z.discriminatedUnion('type', [BatchStreamNode, RequestStreamNode]);
export type StreamManifest = z.infer<typeof StreamManifest>;
