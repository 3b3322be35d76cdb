import { z } from 'zod';
import { Id, Int, Timestamp } from './common.js';

const text = z.string().nullable().optional();

/** Company sizes of search filters and `headcount_range`. */
export const CompanySize = z.enum([
  'self-employed',
  '1-10',
  '11-50',
  '51-200',
  '201-500',
  '501-1000',
  '1001-5000',
  '5001-10000',
  '10001+',
]);
/** Company types of search filters and `company_type`. */
export const CompanyType = z.enum([
  'public',
  'educational',
  'government',
  'nonprofit',
  'private',
  'self_employed',
  'self_owned',
]);

/** Headquarters address. */
export const Hq = z.looseObject({ city: text, region: text, country: text, postal_code: text });

/** One office location. */
export const CompanyLocation = z.looseObject({
  city: text,
  region: text,
  country: text,
  is_hq: z.boolean().optional(),
});

/** Optional funding group. */
export const Funding = z.looseObject({
  last_round_type: text,
  last_round_date: text,
  total_raised_usd: z.number().nullable().optional(),
});

/** Company: data of POST /v1/companies/enrich (docs/service-assumptions.md, "Company record"). */
export const Company = z.looseObject({
  url: z.string(),
  name: text,
  network_id: Id,
  universal_name: text,
  website: text,
  domain: text,
  industry: text,
  description: text,
  tagline: text,
  headcount: Int.nullable().optional(),
  headcount_range: z.string().nullable().optional(),
  hq: Hq.nullable().optional(),
  locations: z.array(CompanyLocation).optional(),
  founded_year: Int.nullable().optional(),
  company_type: z.string().nullable().optional(),
  specialties: z.array(z.string()).optional(),
  follower_count: Int.nullable().optional(),
  logo_url: text,
  scraped_at: Timestamp,
  funding: Funding.nullable().optional(),
});
export type Company = z.infer<typeof Company>;

/** Company stub of company search results. */
export const CompanyStub = z.looseObject({
  url: z.string(),
  name: text,
  network_id: Id.nullable().optional(),
  industry: text,
  headcount: Int.nullable().optional(),
  hq: z.union([Hq, z.string()]).nullable().optional(),
});
export type CompanyStub = z.infer<typeof CompanyStub>;

/** Headcount result: data of POST /v1/companies/headcount. */
export const HeadcountResult = z.looseObject({
  company_url: z.string(),
  count: Int,
  filters_applied: z.record(z.string(), z.unknown()),
  scraped_at: Timestamp,
});
export type HeadcountResult = z.infer<typeof HeadcountResult>;
