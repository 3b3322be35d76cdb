import type { z } from 'zod';
import { ManifestError } from './load-manifests.js';
import {
  Account,
  ActivityComment,
  ActivityReaction,
  ActivityRepost,
  Company,
  CompanyStub,
  HeadcountResult,
  JobPosting,
  PeopleSearchStub,
  Post,
  Profile,
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
} satisfies Record<string, z.ZodType>;

/** A schema name known to the registry. */
export type SchemaName = keyof typeof schemaRegistry;

/** Looks a schema up by name; throws naming the known ones. */
export function schemaByName(name: string): z.ZodType {
  const schema = (schemaRegistry as Record<string, z.ZodType>)[name];
  if (!schema) throw new ManifestError(`unknown schema "${name}": known schemas are ${Object.keys(schemaRegistry).join(', ')}`);
  return schema;
}
