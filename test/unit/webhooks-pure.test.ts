import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-errors.js';
import { parseConfig } from '../../src/config/load-config.js';
import { fileNameOf } from '../../src/webhooks/delivery-spool.js';
import { eventNotice } from '../../src/webhooks/event-notice.js';
import { deliveryKey, parseEvent } from '../../src/webhooks/parse-event.js';
import { claimedSignalId, parseSecretsFile } from '../../src/webhooks/webhook-secrets.js';

const trigger = {
  trigger_id: 'trg_1',
  signal_id: 'sig_1',
  check_number: 3,
  checked_at: '2026-01-01T00:00:00.000Z',
  diff: {},
  criteria_matched: [],
};
const base = `
api: { base_url: sandbox, api_key: svc_test_x }
destination: { type: duckdb, path: w.duckdb }
streams: {}
`;

function webhooksProblems(section: string): readonly string[] {
  try {
    parseConfig(`${base}webhooks: ${section}\n`, 'test.yaml', {});
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('delivery keys', () => {
  it('given a Trigger delivered twice with different bodies and signatures, when keyed, then both carry the trigger_id key (the service dedupes on it)', () => {
    const first = JSON.stringify({ event: 'signal.triggered', trigger });
    const retry = JSON.stringify({ event: 'signal.triggered', trigger: { ...trigger, metadata: { n: 1 } } });
    expect(deliveryKey(parseEvent(first), first, 100)).toBe('trigger:trg_1');
    expect(deliveryKey(parseEvent(retry), retry, 160)).toBe('trigger:trg_1');
  });

  it('given a batch.completed, when keyed, then the key is its job_id', () => {
    const body = JSON.stringify({ event: 'batch.completed', job: { job_id: 'job_9', status: 'completed', total: 1 } });
    expect(deliveryKey(parseEvent(body), body, 100)).toBe('job:job_9');
  });

  it('given events without an id, when keyed, then only the same body under the same signature time gives the same key', () => {
    const paused = (reason: string) =>
      JSON.stringify({ event: 'signal.paused', signal: { id: 'sig_1', status: 'paused', paused_reason: reason } });
    const a = deliveryKey(parseEvent(paused('webhook_gone')), paused('webhook_gone'), 100);
    expect(a).toMatch(/^signal\.paused:100:[0-9a-f]{64}$/);
    expect(deliveryKey(parseEvent(paused('webhook_gone')), paused('webhook_gone'), 100)).toBe(a);
    // The same Signal paused again weeks later for the same reason is another event.
    expect(deliveryKey(parseEvent(paused('webhook_gone')), paused('webhook_gone'), 100 + 86_400 * 21)).not.toBe(a);
    expect(deliveryKey(parseEvent(paused('insufficient_credits')), paused('insufficient_credits'), 100)).not.toBe(a);
    expect(deliveryKey(parseEvent('nope'), 'nope', 100)).toMatch(/^unreadable:100:/);
  });

  it('given keys, when turned into spool file names, then they are safe fixed-length names that collide only for equal keys', () => {
    expect(fileNameOf('trigger:../../etc/passwd')).toMatch(/^[0-9a-f]{40}\.json$/);
    expect(fileNameOf('trigger:trg_1')).toBe(fileNameOf('trigger:trg_1'));
    expect(fileNameOf('trigger:trg_1')).not.toBe(fileNameOf('trigger:trg_2'));
  });
});

describe('parseEvent', () => {
  it('given a body that is not JSON, when parsed, then the reason does not quote the body', () => {
    expect(parseEvent('{"secret":"whsec_leak"')).toEqual({
      ok: false,
      table: 'webhooks',
      reason: 'the body is not valid JSON',
    });
  });

  it('given a Trigger missing fields, when parsed, then it is filed against triggers naming the fields', () => {
    const parsed = parseEvent('{"event":"signal.triggered","trigger":{"trigger_id":"t"}}');
    expect(parsed).toMatchObject({
      ok: false,
      table: 'triggers',
      reason: expect.stringContaining('trigger.check_number'),
    });
  });
});

describe('secrets file and notices', () => {
  it('given JSON lines from signals apply with a bad line, when parsed, then each webhook_secret is read and the bad line reported by number only', () => {
    const lines: string[] = [];
    const text = `${JSON.stringify({ id: 'sig_1', site_url: 'a', webhook_secret: 'whsec_1' })}\n{"id":"sig_2","webhook_secret":"whsec_half"\n\n${JSON.stringify({ id: 'sig_3', webhook_secret: 'whsec_3' })}\n`;
    expect(parseSecretsFile(text, 'secrets.jsonl', (l) => lines.push(l))).toEqual([
      { id: 'sig_1', secret: 'whsec_1' },
      { id: 'sig_3', secret: 'whsec_3' },
    ]);
    expect(lines).toEqual(['warning: secrets.jsonl line 2 is not {"id", "webhook_secret"} JSON: skipped']);
  });

  it('given bodies naming a Signal in each event shape, or none, when read unverified, then the claimed Signal id picks the candidates', () => {
    expect(claimedSignalId(JSON.stringify({ event: 'signal.triggered', trigger }))).toBe('sig_1');
    expect(claimedSignalId(JSON.stringify({ event: 'signal.test', test: true, signal_id: 'sig_2', diff: {} }))).toBe(
      'sig_2',
    );
    expect(claimedSignalId(JSON.stringify({ event: 'signal.paused', signal: { id: 'sig_3' } }))).toBe('sig_3');
    expect(claimedSignalId(JSON.stringify({ event: 'batch.completed', job: { job_id: 'job_1' } }))).toBeUndefined();
    expect(claimedSignalId('{"trigger":null,"signal":7}')).toBeUndefined();
    expect(claimedSignalId('not json')).toBeUndefined();
  });

  it('given signal.paused, when described, then the line is a warning naming the Signal, the reason and the fix', () => {
    const line = eventNotice({
      event: 'signal.paused',
      signal: { id: 'sig_1', status: 'paused', paused_reason: 'insufficient_credits' },
    });
    expect(line).toBe(
      'warning: signal.paused: Signal sig_1 was paused by the service (reason: insufficient_credits): the balance could not pay for a check: top up, then resume it (POST /v1/signals/sig_1/resume)',
    );
  });
});

describe('webhooks config', () => {
  it('given neither secrets nor secrets_file, when validated, then the config loads: only serve needs a secret (test/e2e/serve.test.ts)', () => {
    expect(webhooksProblems('{ port: 0 }')).toEqual([]);
  });

  it('given only a secrets_file, when validated, then it is accepted with the default spool folder', () => {
    expect(webhooksProblems('{ secrets_file: s.jsonl }')).toEqual([]);
    expect(parseConfig(`${base}webhooks: { secrets: [whsec_x] }\n`, 'test.yaml', {}).webhooks).toMatchObject({
      spool_dir: '.seedline/spool',
      secrets: ['whsec_x'],
      path: '/webhooks',
      port: 8788,
    });
  });
});
