import { describe, expect, it } from 'vitest';
import type { WriteShaping } from '../../src/destinations/destination.js';
import { tableLayout } from '../../src/destinations/table-layout.js';
import { PageShapingPool, type PageToShape } from '../../src/engine/page-shaping-pool.js';
import { decodeResultsPage, valuesLookup } from '../../src/engine/results-page-shaping.js';
import { TableShaper } from '../../src/engine/table-shaper.js';
import { manifestsSync } from '../../src/manifest/load-manifests.js';
import { profileRecord } from '../helpers/destinations.js';

const spec = { table: manifestsSync().get('profiles')!.table, context: { options: { write_mode: 'merge' }, run: { id: 'run_1', started_at: '2026-11-26T00:00:00.000Z' } } };
const shaper = new TableShaper(spec.table, spec.context);
const shaping: WriteShaping = { table: 'profiles', layout: tableLayout(shaper.definitionFor({})), rejectNul: false };

/** Page `p` of 50 entries, as the service sends it, with its items' partition values. */
function page(p: number): PageToShape {
  const items: [string, Record<string, unknown>][] = [];
  const data = Array.from({ length: 50 }, (_, i) => {
    const n = p * 50 + i;
    items.push([`r${n}`, { url: `https://network.example/in/person-${n}`, seed: `person-${n}`, key: `r${n}` }]);
    return { ref: `r${n}`, index: i, operation: 'profiles.enrich', status: 'succeeded', credits_used: 1, data: profileRecord(n) };
  });
  return { stream: 'profiles', spec, text: JSON.stringify({ data, meta: { nextCursor: `c${p + 1}` } }), items, shapings: [shaping], runId: 'run_1' };
}

describe('PageShapingPool: results pages shaped in worker threads', () => {
  it('given pages sent to two workers at once, when they answer, then each is what the main thread makes of it', async () => {
    const failures: string[] = [];
    const pool = new PageShapingPool(2, (message) => failures.push(message));
    try {
      const pages = Array.from({ length: 6 }, (_, p) => page(p));
      const answers = await Promise.all(pages.map((p) => pool.shape(p)));
      expect(failures).toEqual([]);
      answers.forEach((answer, p) => {
        const here = decodeResultsPage(pages[p]!.text, valuesLookup(pages[p]!.items), shaper, new Map([['profiles', shaping]]), 'run_1');
        expect(answer).toEqual(structuredClone(here));
      });
    } finally {
      await pool.close();
    }
  });

  it('given a stream a worker cannot shape, when a page is sent, then it answers null, says why once, and leaves every later page to the main thread', async () => {
    const failures: string[] = [];
    const pool = new PageShapingPool(2, (message) => failures.push(message));
    try {
      const unknown = { ...page(0), stream: 'custom', spec: { ...spec, table: { ...spec.table, schema: 'no_such_schema' } } };
      expect(await pool.shape(unknown)).toBeNull();
      expect(failures).toEqual([expect.stringContaining('no_such_schema')]);
      expect(await pool.shape(page(1))).toBeNull();
      expect(failures).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });

  it('given no workers, when a page is sent, then it answers null without starting a thread', async () => {
    const pool = new PageShapingPool(0);
    expect(await pool.shape(page(0))).toBeNull();
    await pool.close();
  });
});
