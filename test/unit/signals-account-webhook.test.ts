import { describe, expect, it } from 'vitest';
import {
  AccountWebhookError,
  applyAccountWebhook,
  nowhereWarning,
  planAccountWebhook,
  type AccountSecret,
} from '../../src/signals/account-webhook.js';
import { problemsOf } from '../helpers/config.js';

const HOOK = 'https://hooks.example.com/webhooks';
const FALLBACK = 'https://hooks.example.com/fallback';
const account = (fields: { default_webhook_url?: string | null; fallback_webhook_url?: string | null }) => ({
  account_id: 'acct_1',
  ...fields,
});

const configWith = (webhooks: string) => `
api: { base_url: sandbox, api_key: svc_test_x }
destination: { type: duckdb, path: x.duckdb }
streams: {}
webhooks:
${webhooks}
`;

describe('webhooks.account_default in the config', () => {
  it('given a url and a fallback_url, when parsed, then it is accepted', () => {
    expect(problemsOf(configWith(`  account_default: { url: "${HOOK}", fallback_url: "${FALLBACK}" }`))).toEqual([]);
  });

  it('given a missing or malformed url, an unknown key or a bare string, when parsed, then each is named with what is expected', () => {
    const expected =
      'expected an absolute http(s) URL the service can reach, such as https://hooks.example.com/webhooks';
    expect(problemsOf(configWith('  account_default: { url: "hooks.example.com" }'))).toEqual([
      `webhooks.account_default.url: ${expected}`,
    ]);
    expect(problemsOf(configWith('  account_default: { url: "ftp://hooks.example.com/a" }'))).toEqual([
      `webhooks.account_default.url: ${expected}`,
    ]);
    expect(problemsOf(configWith(`  account_default: { fallback_url: "${FALLBACK}" }`))).toEqual([
      `webhooks.account_default.url: missing: ${expected}`,
    ]);
    expect(problemsOf(configWith(`  account_default: { url: "${HOOK}", secret: x }`))).toEqual([
      'webhooks.account_default: unknown key "secret"',
    ]);
    expect(problemsOf(configWith(`  account_default: "${HOOK}"`))).toEqual([
      'webhooks.account_default: expected { url: https://…, fallback_url: https://… } (fallback_url optional)',
    ]);
  });
});

describe('planAccountWebhook', () => {
  it('given nothing declared, when planned, then nothing is sent and the default after apply is the account’s', () => {
    expect(planAccountWebhook(undefined, account({ default_webhook_url: HOOK }))).toMatchObject({
      settings: [],
      patch: null,
      defaultAfter: HOOK,
      expectsSecret: false,
    });
  });

  it('given an account without a default webhook, when one is declared, then the PATCH sets it and expects the secret', () => {
    const plan = planAccountWebhook({ url: HOOK }, account({ default_webhook_url: null, fallback_webhook_url: null }));
    expect(plan.patch).toEqual({ default_webhook_url: HOOK });
    expect(plan.settings).toEqual([{ field: 'default_webhook_url', current: null, desired: HOOK, changed: true }]);
    expect(plan.expectsSecret).toBe(true);
  });

  it('given the declared default already set and another fallback, when planned, then only the fallback is sent and no secret is expected', () => {
    const plan = planAccountWebhook(
      { url: HOOK, fallback_url: FALLBACK },
      account({ default_webhook_url: HOOK, fallback_webhook_url: 'https://old.example.com/f' }),
    );
    expect(plan.patch).toEqual({ fallback_webhook_url: FALLBACK });
    expect(plan.expectsSecret).toBe(false);
    expect(plan.settings.map((s) => [s.field, s.changed])).toEqual([
      ['default_webhook_url', false],
      ['fallback_webhook_url', true],
    ]);
  });

  it('given an account that does not report its webhooks, when a default is declared, then it is sent (and may bring the secret)', () => {
    const plan = planAccountWebhook({ url: HOOK }, account({}));
    expect(plan.patch).toEqual({ default_webhook_url: HOOK });
    expect(plan.settings[0]?.current).toBeUndefined();
    expect(plan.expectsSecret).toBe(true);
  });
});

describe('nowhereWarning', () => {
  it('given Signals with notify, or a default webhook after apply, when checked, then there is no warning', () => {
    expect(nowhereWarning(HOOK, planAccountWebhook(undefined, account({ default_webhook_url: null })))).toBeUndefined();
    expect(
      nowhereWarning(null, planAccountWebhook({ url: HOOK }, account({ default_webhook_url: null }))),
    ).toBeUndefined();
  });

  it('given Signals without notify and no default webhook (or none reported), when checked, then it warns and says what to set', () => {
    expect(nowhereWarning(null, planAccountWebhook(undefined, account({ default_webhook_url: null })))).toMatch(
      /the account has no default webhook: the events of these Signals would be delivered nowhere; set webhooks\.account_default\.url/,
    );
    expect(nowhereWarning(null, planAccountWebhook(undefined, account({})))).toMatch(
      /does not report a default webhook: the events of these Signals may be delivered nowhere/,
    );
  });
});

describe('applyAccountWebhook', () => {
  const secretAnswer = { data: { account_id: 'acct_1', webhook_secret: 'whsec_never_printed' } };
  const fakeClient = (answer: unknown, sent: unknown[] = []) => ({
    updateAccount: async (body: unknown) => {
      sent.push(body);
      if (answer instanceof Error) throw answer;
      return answer as never;
    },
  });

  it('given nothing to change, when applied, then nothing is sent', async () => {
    const sent: unknown[] = [];
    const plan = planAccountWebhook({ url: HOOK }, account({ default_webhook_url: HOOK }));
    expect(await applyAccountWebhook(fakeClient(secretAnswer, sent), plan)).toEqual({ updated: false, secret: 'none' });
    expect(sent).toEqual([]);
  });

  it('given a first default webhook, when applied, then the secret goes to onSecret only, or is reported dropped without one', async () => {
    const plan = planAccountWebhook({ url: HOOK }, account({ default_webhook_url: null }));
    const kept: AccountSecret[] = [];
    const result = await applyAccountWebhook(fakeClient(secretAnswer), plan, async (secret) => void kept.push(secret));
    expect(result).toEqual({ updated: true, secret: 'kept' });
    expect(kept).toEqual([{ account_id: 'acct_1', webhook_secret: 'whsec_never_printed' }]);
    expect(JSON.stringify(result)).not.toContain('whsec_');
    expect(await applyAccountWebhook(fakeClient(secretAnswer), plan)).toEqual({ updated: true, secret: 'dropped' });
  });

  it('given the PATCH refused, when applied, then it fails saying no Signal was changed', async () => {
    const plan = planAccountWebhook({ url: HOOK }, account({ default_webhook_url: null }));
    const failing = applyAccountWebhook(fakeClient(new Error('400 invalid_request: bad url')), plan);
    await expect(failing).rejects.toThrow(AccountWebhookError);
    await expect(failing).rejects.toThrow(
      /PATCH \/v1\/account .* failed: 400 invalid_request: bad url; no Signal was changed/,
    );
  });
});
