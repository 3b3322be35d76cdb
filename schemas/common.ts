import { z } from 'zod';

/**
 * Transforms that give their value's text, `String(value)`: src/normalize/compiled-parse.ts runs
 * them in the code it generates rather than through zod.
 */
export const AS_TEXT = new WeakSet<z.ZodType>();

function asText<T extends z.ZodType>(schema: T): T {
  AS_TEXT.add(schema);
  return schema;
}

/** A number as its text. */
export const numberAsText = () => asText(z.number().transform((value) => String(value)));

/**
 * Identifiers (`network_id`, `urn`, ids) may arrive as digits or numbers; they are always stored as text.
 * Only the number is transformed: a transform around the whole union doubled the cost of checking
 * a profile (~13 ids in each), which strings, the common case, now pass without.
 */
export const Id = z.union([z.string(), numberAsText()]).meta({ sqlType: 'text' });

/**
 * A field the spec names without giving its type (the profile's optional groups): text, or a number or boolean
 * kept as text, so an answer typing it either way loads.
 */
export const UntypedText = z
  .union([z.string(), numberAsText(), asText(z.boolean().transform((value) => String(value)))])
  .meta({ sqlType: 'text' });

/** An ISO 8601 timestamp as sent by the service (kept verbatim; typed TIMESTAMPTZ in the warehouse). */
export const Timestamp = z.string().meta({ sqlType: 'timestamp' });

/** A possibly partial date (`2019`, `2019-04`, `2019-04-01`) or a full timestamp: kept as text. */
export const PartialDate = z.string();

/** Integer counts. */
export const Int = z.number().int();

/** `meta` of every success response; fields present as applicable. Unknown fields kept. */
export const Meta = z.looseObject({
  creditsUsed: Int.optional(),
  creditsRemaining: Int.optional(),
  billed: z.boolean().optional(),
  reason: z.string().optional(),
  requestId: z.string().optional(),
  latencyMs: Int.optional(),
  resolved_search_url: z.string().optional(),
  nextCursor: z.string().nullable().optional(),
});
export type Meta = z.infer<typeof Meta>;

/** Success envelope `{ data, meta }` around a payload schema. */
export function envelope<T extends z.ZodType>(data: T) {
  return z.looseObject({ data, meta: Meta });
}

/** Error envelope `{ error: { type, message, requestId } }`. */
export const ErrorEnvelope = z.looseObject({
  error: z.looseObject({
    type: z.string(),
    message: z.string(),
    requestId: z.string().optional(),
  }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

/** Every error type the spec and docs/service-assumptions.md ("Errors the description leaves open") name. */
export const ErrorType = z.enum([
  'invalid_request',
  'invalid_api_key',
  'insufficient_credits',
  'not_found',
  'unprocessable_target',
  'rate_limited',
  'internal_error',
  'upstream_timeout',
  'upstream_error',
  'idempotency_conflict',
]);
export type ErrorType = z.infer<typeof ErrorType>;

/** Pagination object of search, activity and company-post responses. */
export const Pagination = z.looseObject({
  returned: Int.optional(),
  max_results: Int.optional(),
  pages_scraped: Int.optional(),
  page: Int.optional(),
  per_page: Int.optional(),
  has_more: z.boolean(),
  total_estimate: Int.nullable().optional(),
});
export type Pagination = z.infer<typeof Pagination>;

/** Location object of a profile. */
export const Location = z.looseObject({
  city: z.string().nullable().optional(),
  region: z.string().nullable().optional(),
  country: z.string().nullable().optional(),
});

/** Outcome of a lenient parse: the record, or the reason it does not fit its schema. */
export type ParseOutcome<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Parses leniently: unknown fields are kept; a record that does not fit is reported with a
 * readable reason (path: message; …) instead of throwing.
 */
export function parseRecord<T extends z.ZodType>(schema: T, value: unknown): ParseOutcome<z.infer<T>> {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, reason: describeIssues(result.error) };
}

/** Formats zod issues as `path: message; path: message`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}
