import { describe, expect, it } from 'vitest';
import { canonicalPost, canonicalProfile } from '../../src/sandbox/fixtures/canonical.js';
import { buildPostCommentsPage, buildPostReactionsPage } from '../../src/sandbox/fixtures/engagement.js';
import { feedVisibility } from '../../src/sandbox/fixtures/list-feed.js';
import { activityUrn } from '../../src/sandbox/fixtures/post.js';
import { profileName } from '../../src/sandbox/fixtures/profile.js';
import { buildInterestsPage, buildRecommendationsPage } from '../../src/sandbox/fixtures/profile-sections.js';

const NOW = Date.UTC(2026, 10, 1);
const DAY = 86_400_000;
const post = (author: string, ageDays: number) =>
  canonicalPost(
    { url: `https://www.network.example/posts/${author}_activity-${activityUrn(NOW - ageDays * DAY, 5)}` },
    () => 'unused',
  );
const total = (data: Record<string, unknown>) => (data.pagination as { total_estimate: number | null }).total_estimate;

describe('engagement and profile-section fixtures', () => {
  it('given one seed and instant, when built twice, then the pages are equal; another seed gives other records', () => {
    const ref = post('ada-lovelace', 40);
    expect(buildPostCommentsPage(1, ref, {}, NOW).data).toEqual(buildPostCommentsPage(1, ref, {}, NOW).data);
    expect(buildPostCommentsPage(2, ref, {}, NOW).data).not.toEqual(buildPostCommentsPage(1, ref, {}, NOW).data);
  });

  it('given ordinary slugs, when built, then every feed holds more than one page of 25', () => {
    for (const slug of ['ada-lovelace', 'acme', 'x', 'grace-hopper-42']) {
      const profile = canonicalProfile(slug);
      const feeds = [
        buildPostCommentsPage(1, post(slug, 40), {}, NOW).data,
        buildPostReactionsPage(1, post(slug, 40), {}, NOW).data,
        buildRecommendationsPage(1, profile, 'received', {}, NOW).data,
        buildRecommendationsPage(1, profile, 'given', {}, NOW).data,
        ...['companies', 'groups', 'schools', 'newsletters', 'top_voices'].map(
          (kind) => buildInterestsPage(1, profile, kind, {}, NOW).data,
        ),
      ];
      for (const data of feeds) expect(total(data)).toBeGreaterThan(25);
    }
  });

  it('given a post one hour old, when built, then only the engagement that has arrived is listed', () => {
    const young = total(buildPostCommentsPage(1, post('ada-lovelace', 1 / 24), {}, NOW).data) as number;
    const grown = total(buildPostCommentsPage(1, post('ada-lovelace', 1 / 24), {}, NOW + 14 * DAY).data) as number;
    expect(young).toBeLessThan(grown);
  });

  it('given quiet-* and hidden-* slugs, when classified, then they are empty and hidden feeds, and the prefix stays out of names', () => {
    expect(feedVisibility('quiet-ann')).toBe('quiet');
    expect(feedVisibility('hidden-ann')).toBe('hidden');
    expect(feedVisibility('ann-hidden')).toBe('visible');
    expect(buildInterestsPage(1, canonicalProfile('hidden-ann'), 'companies', {}, NOW).page.hidden).toBe(true);
    expect(profileName(1, 'hidden-ann-lee')).toBe('Ann Lee');
  });
});
