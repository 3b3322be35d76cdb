import { z } from 'zod';
import { Id, Int, Location, PartialDate, Timestamp, UntypedText } from './common.js';

const text = z.string().nullable().optional();
/** Fields of the optional groups: the spec lists their names, not their types. */
const untyped = UntypedText.nullable().optional();

/** The profile's current company. */
export const CurrentCompany = z.looseObject({
  name: text,
  url: text,
  network_id: Id.nullable().optional(),
  title: text,
  started_at: PartialDate.nullable().optional(),
  logo_url: text,
  industry: text,
  headcount: Int.nullable().optional(),
});

/** One entry of `positions`. */
export const Position = z.looseObject({
  title: text,
  company: text,
  company_url: text,
  network_id: Id.nullable().optional(),
  position_id: Id.nullable().optional(),
  started_at: PartialDate.nullable().optional(),
  ended_at: PartialDate.nullable().optional(),
  description: text,
  skills: z.array(z.string()).nullable().optional(),
  company_industry: text,
  company_headcount: Int.nullable().optional(),
  company_logo_url: text,
});
export type Position = z.infer<typeof Position>;

/** One entry of `education`. */
export const Education = z.looseObject({
  school: text,
  degree: text,
  field: text,
  activities: text,
  education_id: Id.nullable().optional(),
  school_logo_url: text,
});
export type Education = z.infer<typeof Education>;

/** Optional groups returned when publicly visible. */
export const Certification = z.looseObject({
  name: untyped,
  authority: untyped,
  issued_at: untyped,
  expires_at: untyped,
  url: untyped,
});
export const Publication = z.looseObject({ title: untyped, publisher: untyped, published_at: untyped, url: untyped });
export const Patent = z.looseObject({ title: untyped, number: untyped, issued_at: untyped });
export const Honor = z.looseObject({ title: untyped, issuer: untyped, issued_at: untyped });
export const Project = z.looseObject({
  name: untyped,
  title: untyped,
  description: untyped,
  url: untyped,
  started_at: untyped,
  ended_at: untyped,
});
export const OpenToWork = z.looseObject({
  titles: z.array(z.string()).optional(),
  locations: z.array(z.string()).optional(),
  workplace_types: z.array(z.string()).optional(),
  start_timing: untyped,
});

/** Profile: data of POST /v1/profiles/enrich. Unknown fields (names the spec does not show) are kept. */
export const Profile = z.looseObject({
  url: z.string(),
  public_identifier: z.string(),
  urn: Id,
  full_name: text,
  headline: text,
  location: Location.nullable().optional(),
  current_company: CurrentCompany.nullable().optional(),
  positions: z.array(Position).optional(),
  education: z.array(Education).optional(),
  skills: z.array(z.string()).optional(),
  languages: z.array(z.string()).optional(),
  connections_count: Int.nullable().optional(),
  followers_count: Int.nullable().optional(),
  scraped_at: Timestamp,
  certifications: z.array(Certification).optional(),
  publications: z.array(Publication).optional(),
  patents: z.array(Patent).optional(),
  honors: z.array(Honor).optional(),
  interests: z.array(z.string()).optional(),
  projects: z.array(Project).optional(),
  recommendations: z.array(z.unknown()).optional(),
  locale: text,
  headshot_url: text,
  open_to_work: OpenToWork.nullable().optional(),
});
export type Profile = z.infer<typeof Profile>;
