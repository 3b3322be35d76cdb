import { describe, expect, it } from 'vitest';
import { Account, Profile, parseRecord, ProfileEnrichBody, ErrorEnvelope } from '../../schemas/index.js';
import { tableLayout } from '../../src/normalize/table-layout.js';

const profile = {
  url: 'https://network.example/in/jane-doe',
  public_identifier: 'jane-doe',
  urn: 12345,
  full_name: 'Jane Doe',
  scraped_at: '2026-11-01T00:00:00Z',
  positions: [{ title: 'Engineer', network_id: 987, brand_new_field: 'kept' }],
  open_profile_messaging: true,
};

describe('schemas', () => {
  it('given unknown fields, when a profile is parsed, then they are kept and ids become text', () => {
    const outcome = parseRecord(Profile, profile);
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.value.urn).toBe('12345');
    expect(outcome.value.positions?.[0]?.network_id).toBe('987');
    expect((outcome.value as Record<string, unknown>).open_profile_messaging).toBe(true);
    expect((outcome.value.positions?.[0] as Record<string, unknown>).brand_new_field).toBe('kept');
  });

  it('given the optional groups typed as numbers (a patent number, a year), when a profile is parsed, then it loads with them as text columns', () => {
    const groups = {
      patents: [{ title: 'Widget', number: 10234567, issued_at: 2019 }],
      certifications: [{ name: 'CKA', issued_at: 2021, expires_at: null }],
      open_to_work: { start_timing: 30 },
    };
    const outcome = parseRecord(Profile, { ...profile, ...groups });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.value.patents?.[0]).toMatchObject({ number: '10234567', issued_at: '2019' });
    expect(outcome.value.certifications?.[0]).toMatchObject({ issued_at: '2021', expires_at: null });
    const patents = tableLayout({
      name: 'profiles',
      schema: Profile,
      primaryKey: ['url'],
      writeMode: 'merge',
    }).children.find((c) => c.name === 'profiles__patents');
    expect(patents?.columns.filter((c) => ['number', 'issued_at'].includes(c.name)).map((c) => c.type)).toEqual([
      'text',
      'text',
    ]);
  });

  it('given an account whose account_id is a number, when parsed, then it is accepted as text', () => {
    const account = {
      account_id: 48213,
      credits_remaining: 10,
      credits_used_this_month: 0,
      price_per_1k_credits_usd: 2.5,
      rate_limit: { requests_per_minute: 600, concurrent_batch_jobs: 5 },
      signals: { active: 0, paused: 0, estimated_monthly_credits: 0 },
    };
    expect(Account.parse(account).account_id).toBe('48213');
  });

  it('given a record missing a required field, when parsed, then the reason names the path', () => {
    const outcome = parseRecord(Profile, { ...profile, scraped_at: undefined, positions: [{ title: 5 }] });
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.reason).toContain('scraped_at');
    expect(outcome.reason).toContain('positions.0.title');
  });

  it('given an unknown body field, when a request body is validated, then it is refused', () => {
    expect(ProfileEnrichBody.safeParse({ url: 'jane-doe', colour: 'blue' }).success).toBe(false);
    expect(ProfileEnrichBody.safeParse({ url: 'jane-doe' }).success).toBe(true);
    expect(ProfileEnrichBody.safeParse({}).success).toBe(false);
  });

  it('given an error envelope with extra fields, when parsed, then it validates', () => {
    const parsed = ErrorEnvelope.parse({
      error: { type: 'rate_limited', message: 'slow down', requestId: 'req_1', hint: 'x' },
    });
    expect(parsed.error.type).toBe('rate_limited');
  });
});
