import type { z } from 'zod';
import { ManifestError } from './manifest-error.js';
import {
  Account,
  ActivityComment,
  ActivityReaction,
  ActivityRepost,
  Company,
  CompanyStub,
  HeadcountResult,
  HeadcountSeed,
  JobPosting,
  PeopleSearchStub,
  Post,
  PostComment,
  PostReaction,
  Profile,
  ProfileInterest,
  ProfileRecommendation,
  Signal,
  SignalUsageRow,
  Trigger,
} from '../../schemas/index.js';

/** Record schemas a manifest may name in `table.schema`. */
export const schemaRegistry = {
  profile: Profile,
  company: Company,
  post: Post,
  headcount: HeadcountResult,
  headcount_entry: HeadcountSeed,
  job_posting: JobPosting,
  activity_posts: Post,
  activity_comments: ActivityComment,
  activity_reactions: ActivityReaction,
  activity_reposts: ActivityRepost,
  people_search_stub: PeopleSearchStub,
  company_stub: CompanyStub,
  trigger: Trigger,
  signal: Signal,
  signal_usage_row: SignalUsageRow,
  account: Account,
  post_comment: PostComment,
  post_reaction: PostReaction,
  profile_recommendation: ProfileRecommendation,
  profile_interest: ProfileInterest,
} satisfies Record<string, z.ZodType>;

/** A schema name known to the registry. */
export type SchemaName = keyof typeof schemaRegistry;

/** Record schemas of user manifests (a JSON Schema file beside the manifest), by the name {@link defineSchema} gave. */
const defined = new Map<string, z.ZodType>();

/** Adds a user manifest's record schema under `name` (its stream and file, so never a built-in name); returns the name. */
export function defineSchema(name: string, schema: z.ZodType): string {
  defined.set(name, schema);
  return name;
}

/** Whether a schema of this name is known (built in, or defined by a user manifest). */
export function isSchemaName(name: string): boolean {
  return Object.hasOwn(schemaRegistry, name) || defined.has(name);
}

/** Looks a schema up by name; throws naming the known ones. */
export function schemaByName(name: string): z.ZodType {
  const schema = (schemaRegistry as Record<string, z.ZodType>)[name] ?? defined.get(name);
  if (!schema)
    throw new ManifestError(
      `unknown schema "${name}": known schemas are ${Object.keys(schemaRegistry).join(', ')} (or a JSON Schema file: schema: { file: x.schema.json })`,
    );
  return schema;
}
