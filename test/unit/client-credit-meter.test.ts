import { describe, expect, it } from 'vitest';
import { CreditMeter } from '../../src/client/credit-meter.js';

describe('CreditMeter', () => {
  it('given billed and unbilled answers, when recorded, then only billed credits are summed and the last balance is kept', () => {
    const meter = new CreditMeter();
    meter.record('enrichProfile', { creditsUsed: 1, billed: true, creditsRemaining: 99 });
    meter.record('enrichProfile', { creditsUsed: 1, billed: false });
    meter.record('searchPeople', { creditsUsed: 4, billed: true, creditsRemaining: 95 });
    meter.record('getAccount', { creditsUsed: 0, billed: false });
    expect(meter.creditsUsed).toBe(5);
    expect(meter.unbilledCredits).toBe(1);
    expect(meter.creditsRemaining).toBe(95);
    expect(meter.byOperation()).toEqual({
      enrichProfile: { calls: 2, billedCalls: 1, creditsUsed: 1, unbilledCredits: 1 },
      searchPeople: { calls: 1, billedCalls: 1, creditsUsed: 4, unbilledCredits: 0 },
      getAccount: { calls: 1, billedCalls: 0, creditsUsed: 0, unbilledCredits: 0 },
    });
  });

  it('given an answer without creditsRemaining, when recorded, then the previous balance stays', () => {
    const meter = new CreditMeter();
    meter.observeBalance(500);
    meter.record('enrichPost', { creditsUsed: 1, billed: true });
    expect(meter.creditsRemaining).toBe(500);
    meter.reset();
    expect(meter.creditsUsed).toBe(0);
    expect(meter.creditsRemaining).toBeUndefined();
  });
});
