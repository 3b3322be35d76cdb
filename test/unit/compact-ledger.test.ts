import { describe, expect, it } from 'vitest';
import { CompactLedgerBuilder, readCompactLedger, type CompactLedger } from '../../src/airbyte/compact-ledger.js';
import { keyHash } from '../../src/airbyte/set-sketch.js';

const hashesOf = (keys: readonly string[]) => Float64Array.from(keys, keyHash);

const DAY = 86_400_000;
const start = Date.parse('2026-11-01T00:00:00Z');
const keys = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

/** A ledger of `list`: every 10th seed failed for good, the others fetched on one of `days` days, at some second of it. */
function ledgerOf(
  list: readonly string[],
  days: number,
  maxRoundingMs?: number,
): { ledger: CompactLedger; at: number[] } {
  const builder = new CompactLedgerBuilder();
  const at = list.map((_, i) => start + (i % days) * DAY + ((i * 7919) % 3600) * 1000);
  list.forEach((key, i) =>
    builder.add(
      key,
      i % 10 === 3
        ? { status: 'failed', error: 'not_found', at: new Date(at[i]!) }
        : { status: 'fetched', error: null, at: new Date(at[i]!) },
    ),
  );
  return { ledger: builder.build(maxRoundingMs), at };
}

describe('compact seed ledger', () => {
  it('given the same list, when read back, then every seed has its status, error type and a time at most the rounding earlier', () => {
    const list = keys('seed', 5000);
    const { ledger, at } = ledgerOf(list, 7);
    const reading = readCompactLedger(ledger, hashesOf([...list].reverse()));
    expect(reading).toMatchObject({ unresolved: 0, added: 0, removed: 0 });
    [...list].reverse().forEach((key, i) => {
      const mark = ledger.marks[reading.marks[i]! - 1]!;
      const index = list.length - 1 - i;
      expect(mark.status).toBe(index % 10 === 3 ? 'failed' : 'fetched');
      expect(mark.error).toBe(index % 10 === 3 ? 'not_found' : null);
      const recorded = Date.parse(mark.at);
      expect(recorded).toBeLessThanOrEqual(at[index]!);
      expect(at[index]! - recorded).toBeLessThan(ledger.granularity_ms);
    });
  });

  it('given seeds added and removed since, when read, then kept seeds keep their marks and added ones are due', () => {
    const list = keys('seed', 20_000);
    const { ledger } = ledgerOf(list, 3);
    const now = [...list.slice(300), ...keys('new', 400)];
    const reading = readCompactLedger(ledger, hashesOf(now));
    expect(reading).toMatchObject({ unresolved: 0, added: 400, removed: 300 });
    now.forEach((key, i) => expect(reading.marks[i] === 0).toBe(key.startsWith('new-')));
  });

  it('given a list changed past what the sketch recovers, when read, then the seeds it cannot place are due, none of the new ones marked', () => {
    const list = keys('seed', 3000);
    const { ledger } = ledgerOf(list, 1);
    const now = [...list.slice(2500), ...keys('new', 6000)];
    const reading = readCompactLedger(ledger, hashesOf(now));
    expect(reading.unresolved).toBeGreaterThan(0);
    now.forEach((key, i) => {
      if (key.startsWith('new-')) expect(reading.marks[i]).toBe(0);
    });
  });

  it('given a seed with nothing to keep, when read back, then it is due', () => {
    const builder = new CompactLedgerBuilder();
    builder.add('pending-one', undefined);
    builder.add('fetched-one', { status: 'fetched', error: null, at: new Date(start) });
    const reading = readCompactLedger(builder.build(), hashesOf(['pending-one', 'fetched-one']));
    expect([...reading.marks]).toEqual([0, 1]);
  });

  it('given 200,000 seeds fetched over 30 days, when built, then it stays under a megabyte with times rounded within the cap', () => {
    const { ledger } = ledgerOf(keys('https://www.network.example/in/person', 200_000), 30, DAY);
    expect(JSON.stringify(ledger).length).toBeLessThan(1_000_000);
    expect(ledger.granularity_ms).toBeLessThanOrEqual(DAY);
  });
});
