import { describe, expect, it } from 'vitest';
import { Company, Profile } from '../../schemas/index.js';
import { buildActivityPage } from '../../src/sandbox/fixtures/activity.js';
import {
  canonicalCompany,
  canonicalPost,
  canonicalProfile,
  companyFromDomain,
  profileFromUrn,
  profileUrn,
} from '../../src/sandbox/fixtures/canonical.js';
import { buildCompany } from '../../src/sandbox/fixtures/company.js';
import { activityUrn, postedAtOfUrn } from '../../src/sandbox/fixtures/post.js';
import { buildProfile } from '../../src/sandbox/fixtures/profile.js';
import { SandboxError } from '../../src/sandbox/errors.js';

const NOW = Date.UTC(2026, 10, 1);
const DAY = 86_400_000;

describe('canonicalisation', () => {
  it('given profile URLs on any host with slash, query and escapes, when canonicalised, then they share one canonical URL', () => {
    const inputs = [
      'https://www.network.example/in/jos%C3%A9-diaz/',
      'http://linkedin.com/in/JOSÉ-DIAZ?trk=public',
      'network.example/in/jos%C3%A9-diaz',
      'josé-diaz',
    ];
    const urls = inputs.map((input) => canonicalProfile(input).url);
    expect(new Set(urls)).toEqual(new Set(['https://www.network.example/in/josé-diaz']));
  });

  it('given malformed inputs, when canonicalised, then a 400 invalid_request is thrown', () => {
    for (const input of ['https://x.example/company/acme', 'https://x.example/in/%E0%A4%A', '', 'two words']) {
      expect(() => canonicalProfile(input)).toThrowError(SandboxError);
    }
  });

  it('given a slug, when turned into a URN and back, then the same profile is found', () => {
    const urn = profileUrn('ada-lovelace');
    expect(urn).toMatch(/^ACoAA/);
    expect(profileFromUrn(urn).slug).toBe('ada-lovelace');
  });

  it('given company inputs, when canonicalised, then page URLs and domains map to /company/<slug>', () => {
    expect(canonicalCompany('https://x.example/company/Acme/about/').url).toBe(
      'https://www.network.example/company/acme',
    );
    expect(companyFromDomain('https://www.acme.com/').slug).toBe('acme');
  });

  it('given post URLs and URNs, when canonicalised, then the URN and author are extracted', () => {
    const urn = activityUrn(NOW - DAY, 42);
    const post = canonicalPost({ url: `https://x.example/posts/ada-lovelace_activity-${urn}-abcd/` }, () => 'unused');
    expect(post).toMatchObject({
      urn,
      author: 'ada-lovelace',
      url: `https://www.network.example/posts/ada-lovelace_activity-${urn}`,
    });
    expect(canonicalPost({ urn: `urn:li:activity:${urn}` }, () => 'unused').urn).toBe(urn);
    expect(postedAtOfUrn(urn, NOW)).toBe(NOW - DAY);
  });
});

describe('profile fixtures', () => {
  it('given the same slug, seed and time, when built twice, then the records are equal; another seed differs', () => {
    const ref = canonicalProfile('grace-hopper');
    expect(buildProfile(1, ref, NOW)).toEqual(buildProfile(1, ref, NOW));
    expect(buildProfile(2, ref, NOW)).not.toEqual(buildProfile(1, ref, NOW));
  });

  it('given many profiles, when built, then they validate, average ~5 positions and ~2 schools, and some have none', () => {
    const profiles = Array.from({ length: 400 }, (_, i) => buildProfile(1, canonicalProfile(`person-${i}`), NOW));
    for (const profile of profiles) Profile.parse(profile);
    const positions = profiles.map((p) => (p.positions as unknown[]).length);
    const schools = profiles.map((p) => (p.education as unknown[]).length);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(positions)).toBeGreaterThan(3.5);
    expect(mean(positions)).toBeLessThan(6.5);
    expect(mean(schools)).toBeGreaterThan(1.4);
    expect(mean(schools)).toBeLessThan(2.6);
    expect(positions.filter((n) => n === 0).length).toBeGreaterThan(0);
    expect(schools.filter((n) => n === 0).length).toBeGreaterThan(0);
  });

  it('given virtual time passing, when a profile is rebuilt, then its headline drifts within 61 days and is stable within a day', () => {
    const ref = canonicalProfile('grace-hopper');
    const headline = (ms: number) => buildProfile(1, ref, ms).headline;
    const changes = Array.from({ length: 61 }, (_, d) => headline(NOW + (d + 1) * DAY)).filter(
      (h) => h !== headline(NOW),
    );
    expect(changes.length).toBeGreaterThan(0);
    expect(headline(NOW + 1000)).toBe(headline(NOW));
  });

  it('given fields, when built, then only those remain', () => {
    const record = buildProfile(1, canonicalProfile('grace-hopper'), NOW, { fields: ['skills'] });
    expect(Object.keys(record)).toEqual(['skills']);
  });
});

describe('company and activity fixtures', () => {
  it('given a company, when built, then it validates and is deterministic', () => {
    const ref = canonicalCompany('globex');
    expect(Company.parse(buildCompany(1, ref, NOW)).name).toBe('Globex');
    expect(buildCompany(1, ref, NOW)).toEqual(buildCompany(1, ref, NOW));
  });

  it('given posts_within windows, when activity is built, then narrower windows return fewer posts, newest first', () => {
    const ref = canonicalProfile('ada-lovelace');
    const all = buildActivityPage(1, ref, 'posts', {}, NOW);
    const week = buildActivityPage(1, ref, 'posts', { posted_within: 'week' }, NOW);
    const total = (page: Record<string, unknown>) => (page.pagination as { total_estimate: number }).total_estimate;
    expect(total(week)).toBeLessThanOrEqual(total(all));
    const dates = (all.posts as Array<{ posted_at: string }>).map((p) => p.posted_at);
    expect([...dates].sort().reverse()).toEqual(dates);
  });
});
