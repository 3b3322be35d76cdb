import { describe, expect, it } from 'vitest';
import type { WriteShaping } from '../../src/normalize/record-shaper.js';
import { tableLayout } from '../../src/normalize/table-layout.js';
import { PageShapingPool, type PageToShape } from '../../src/engine/batch/page-shaping-pool.js';
import { decodeResultsPage, valuesLookup } from '../../src/engine/batch/results-page-shaping.js';
import { TableShaper } from '../../src/normalize/table-shaper.js';
import { manifestsSync } from '../../src/manifest/load-manifests.js';
import { profileRecord } from '../helpers/destinations.js';

const spec = {
  table: manifestsSync().get('profiles')!.table,
  options: { write_mode: 'merge' },
  run: { id: 'run_1', started_at: '2026-11-26T00:00:00.000Z' },
};
const shaper = TableShaper.of(spec.table, spec);
const shaping: WriteShaping = { table: 'profiles', layout: tableLayout(shaper.definitionFor({})), rejectNul: false };

/** Page `p` of 50 entries, as the service sends it, with its items' partition values. */
function page(p: number): PageToShape {
  const items: [string, Record<string, unknown>][] = [];
  const data = Array.from({ length: 50 }, (_, i) => {
    const n = p * 50 + i;
    items.push([`r${n}`, { url: `https://network.example/in/person-${n}`, seed: `person-${n}`, key: `r${n}` }]);
    return {
      ref: `r${n}`,
      index: i,
      operation: 'profiles.enrich',
      status: 'succeeded',
      credits_used: 1,
      data: profileRecord(n),
    };
  });
  return {
    stream: 'profiles',
    spec,
    text: JSON.stringify({ data, meta: { nextCursor: `c${p + 1}` } }),
    items,
    shapings: [shaping],
    runId: 'run_1',
  };
}

describe('PageShapingPool: results pages shaped in worker threads', () => {
  it('given pages sent to two workers at once, when they answer, then each is what the main thread makes of it', async () => {
    const failures: string[] = [];
    const pool = new PageShapingPool(2, (scope, reason) => failures.push(`${scope}: ${reason}`));
    try {
      const pages = Array.from({ length: 6 }, (_, p) => page(p));
      const answers = await Promise.all(pages.map((p) => pool.shape(p)));
      expect(failures).toEqual([]);
      answers.forEach((answer, p) => {
        const here = decodeResultsPage(
          pages[p]!.text,
          valuesLookup(pages[p]!.items),
          shaper,
          new Map([['profiles', shaping]]),
          'run_1',
        );
        expect(answer).toEqual(structuredClone(here));
      });
    } finally {
      await pool.close();
    }
  });

  it('given a stream a worker cannot shape, when its page is sent, then it answers null, says why once, leaves the later pages of that stream to the main thread, and shapes the other streams', async () => {
    const failures: string[] = [];
    const pool = new PageShapingPool(2, (scope, reason) => failures.push(`${scope}: ${reason}`));
    try {
      const unknown = (p: number) => ({
        ...page(p),
        stream: 'custom',
        spec: { ...spec, table: { ...spec.table, schema: 'no_such_schema' } },
      });
      expect(await pool.shape(unknown(0))).toBeNull();
      expect(failures).toEqual([
        expect.stringMatching(/^custom: a worker thread could not shape its page \(.*no_such_schema/),
      ]);
      expect(await pool.shape(unknown(1))).toBeNull();
      expect((await pool.shape(page(2)))?.data.entries).toHaveLength(50);
      expect(failures).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });

  it('given pages under way, when the pool closes, then they answer null and no failure is reported', async () => {
    const failures: string[] = [];
    const pool = new PageShapingPool(1, (scope, reason) => failures.push(`${scope}: ${reason}`));
    const underWay = [pool.shape(page(0)), pool.shape(page(1))];
    await pool.close();
    const answers = await Promise.all(underWay);
    expect(answers.every((a) => a === null || a.data.entries.length === 50)).toBe(true);
    expect(await pool.shape(page(2))).toBeNull();
    expect(failures).toEqual([]);
  });

  it('given no workers, when a page is sent, then it answers null without starting a thread', async () => {
    const pool = new PageShapingPool(0);
    expect(await pool.shape(page(0))).toBeNull();
    await pool.close();
  });
});
