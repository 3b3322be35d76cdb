import { afterEach, describe, expect, it, vi } from 'vitest';
import { closingLine, followDelivery, parseWait, type DeliveryState } from '../../src/cli/follow-delivery.js';

const sent: DeliveryState = {
  id: 'wh_1',
  event: 'signal.test',
  url: 'https://hooks.example.com/webhooks',
  status: 'retrying',
  attempts: 0,
};

/** A client whose reads answer `states` in turn, the last one from then on. */
function readsOf(states: Partial<DeliveryState>[]) {
  let read = 0;
  return {
    reads: () => read,
    getWebhookDelivery: async (id: string) => {
      const state = states[Math.min(read++, states.length - 1)]!;
      return {
        data: { ...sent, id, created_at: '2026-01-01T00:00:00Z', delivered_at: null, last_error: null, ...state },
      } as never;
    },
  };
}

describe('followDelivery', () => {
  afterEach(() => void vi.useRealTimers());

  it('given a delivery that fails once then is delivered, when followed, then each state is printed once and it ends delivered', async () => {
    vi.useFakeTimers();
    const client = readsOf([
      { attempts: 1, last_error: 'receiver answered 503' },
      { attempts: 1, last_error: 'receiver answered 503' },
      { status: 'delivered', attempts: 2 },
    ]);
    const lines: string[] = [];
    const following = followDelivery(client, sent, 60, (line) => lines.push(line));
    await vi.runAllTimersAsync();
    const result = await following;
    expect(result.outcome).toBe('delivered');
    expect(client.reads()).toBe(3);
    expect(lines).toEqual([
      '  retrying: queued, not attempted yet',
      expect.stringMatching(
        /^ {2}retrying: attempt 1 failed \(receiver answered 503\); the service tries again in about 1 m \(/,
      ),
      '  delivered: the receiver answered 2xx on attempt 2',
    ]);
  });

  it('given a delivery still retrying, when the wait runs out, then it ends pending and the closing line says how to check later', async () => {
    vi.useFakeTimers();
    const client = readsOf([{ attempts: 1, last_error: 'delivery failed: fetch failed (ECONNREFUSED)' }]);
    const following = followDelivery(client, sent, 5, () => undefined);
    await vi.runAllTimersAsync();
    const result = await following;
    expect(result.outcome).toBe('pending');
    expect(closingLine(result, 5, 'seedline signals delivery wh_1 --config s.yaml')).toMatch(
      /^not delivered yet: wh_1 is still retrying after waiting 5 s \(1 attempt, last error: delivery failed: fetch failed \(ECONNREFUSED\)\)[^\n]*\ncheck it later with: seedline signals delivery wh_1 --config s.yaml \(free\)/,
    );
  });
});

describe('closingLine of a failed delivery', () => {
  it('given a 401, when closed, then the secret is the first thing to check; given a refused connection, whether serve runs', () => {
    const failed = (last_error: string) =>
      closingLine({ outcome: 'failed', delivery: { ...sent, status: 'failed', attempts: 6, last_error } }, 60, 'later');
    expect(failed('receiver answered 401').split('\n').slice(0, 3)).toEqual([
      'failed: signal.test wh_1 to https://hooks.example.com/webhooks failed after 6 attempts; last error: receiver answered 401',
      'check:',
      expect.stringMatching(/^ {2}- does the receiver verify with the Signal's webhook secret\?/),
    ]);
    expect(failed('delivery failed: fetch failed (ECONNREFUSED)').split('\n')[2]).toMatch(
      /^ {2}- is `seedline serve` \(or your receiver\) running and reachable from the service at https:\/\/hooks\.example\.com\/webhooks\?/,
    );
  });
});

describe('parseWait', () => {
  it('given no value, 0, 2.5 and bad values, when parsed, then 60, 0, 2.5, and a usage error naming the range', () => {
    expect([parseWait(undefined), parseWait('0'), parseWait('2.5')]).toEqual([60, 0, 2.5]);
    for (const bad of ['-1', 'soon', '', '100000'])
      expect(() => parseWait(bad)).toThrow(/--wait: expected seconds from 0 \(do not follow\) to 86400/);
  });
});
