import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Profile } from '../../schemas/profile.js';
import type { Destination, SeedRowChange } from '../../src/destinations/destination.js';
import type { TableDefinition } from '../../src/normalize/table-definition.js';
import { destinationKinds, profileRecord, useBackend } from '../helpers/destinations.js';

/** A seed table as the profiles stream makes it: the record and the seed it was fetched for. */
const table = (writeMode: 'merge' | 'history'): TableDefinition => ({
  name: 'profiles',
  schema: Profile.extend({ seed: z.string() }),
  primaryKey: ['url'],
  writeMode,
});

async function load(dest: Destination, writeMode: 'merge' | 'history', records: Record<string, unknown>[]) {
  await dest.ensureTable(table(writeMode));
  const unit = await dest.beginUnit('run_load');
  await unit.write('profiles', records);
  await unit.commit();
}

const iso = (value: unknown) => new Date(value as string).toISOString();
const json = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as unknown;

/** Resolves once this machine's clock is past `at`: a change checked then is in the past. */
async function clockPast(at: Date): Promise<void> {
  while (Date.now() <= at.getTime() + 5) await new Promise((resolve) => setTimeout(resolve, 5));
}

for (const kind of destinationKinds) {
  describe(`${kind} destination: Triggers' changes written into rows`, () => {
    const backend = useBackend(kind);

    it('given a history table, when a Trigger checked after the load is applied, then a version starts at its check with its values and the child rows, once, and the next load starts another', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      await load(dest, 'history', [profileRecord(1, { seed: 's1' }), profileRecord(2, { seed: 's2' })]);
      const q = (sql: string) => dest.query<Record<string, unknown>>(sql.replaceAll('T.', `${dest.schema}.`));
      const [loaded] = await q(`select _valid_from from T.profiles where seed = 's1'`);
      const checkedAt = new Date(new Date(loaded!._valid_from as string).getTime() + 1);
      await clockPast(checkedAt);
      const change: SeedRowChange = {
        seed: 's1',
        triggerId: 'trg_1',
        checkedAt,
        values: { headline: 'Founder', current_company__title: 'CTO', skills: ['rust', 'sql'] },
      };

      expect(await dest.applyTriggerChanges('profiles', 'run_apply', [change])).toBe(1);
      const versions = await q(
        `select headline, current_company__title, current_company__name, skills, _valid_from, _valid_to, _trigger_id, _trigger_checked_at, _run_id from T.profiles where seed = 's1' order by _valid_from`,
      );
      expect(versions).toHaveLength(2);
      expect(iso(versions[0]!._valid_to)).toBe(checkedAt.toISOString());
      expect(iso(versions[1]!._valid_from)).toBe(checkedAt.toISOString());
      expect(versions[1]).toMatchObject({
        headline: 'Founder',
        current_company__title: 'CTO',
        current_company__name: 'Acme',
        _trigger_id: 'trg_1',
        _run_id: 'run_apply',
        _valid_to: null,
      });
      expect(json(versions[1]!.skills)).toEqual(['rust', 'sql']);
      expect(iso(versions[1]!._trigger_checked_at)).toBe(checkedAt.toISOString());
      for (const child of ['positions', 'education']) {
        const rows = await q(
          `select _parent_valid_from as at, count(*) as n from T.profiles__${child} where _parent_url = '${String(profileRecord(1).url)}' group by 1 order by 1`,
        );
        expect(
          rows.map((r) => [iso(r.at), Number(r.n)]),
          child,
        ).toEqual([
          [iso(versions[0]!._valid_from), child === 'positions' ? 2 : 1],
          [checkedAt.toISOString(), child === 'positions' ? 2 : 1],
        ]);
      }
      expect(Number((await q(`select count(*) as n from T.profiles where seed = 's2'`))[0]!.n)).toBe(1);

      // The same Trigger again adds nothing; a load of the whole profile starts a version of its own.
      expect(await dest.applyTriggerChanges('profiles', 'run_apply', [change])).toBe(0);
      await load(dest, 'history', [profileRecord(1, { seed: 's1' })]);
      const after = await q(`select _trigger_id, _valid_to from T.profiles where seed = 's1' order by _valid_from`);
      expect(after.map((v) => [v._trigger_id, v._valid_to === null])).toEqual([
        [null, false],
        ['trg_1', false],
        [null, true],
      ]);
    });

    it('given a merge table, when Triggers are applied in order by a destination that never wrote it, then the row holds the latest, an older or unknown one changes nothing, and a column the table lacks is refused with nothing written', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const loader = await backend.open();
      await load(loader, 'merge', [profileRecord(1, { seed: 's1' }), profileRecord(2, { seed: 's2' })]);
      await loader.close();
      // A new process: it knows nothing of the table until it reads the catalog.
      const dest = await backend.another();
      expect(
        await dest.applyTriggerChanges('no_such_table', 'run_apply', [
          { seed: 's1', triggerId: 'trg_0', checkedAt: new Date(), values: { headline: 'x' } },
        ]),
      ).toBe(0);
      const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);
      const first: SeedRowChange = { seed: 's1', triggerId: 'trg_1', checkedAt: at(1), values: { headline: 'A' } };
      const second: SeedRowChange = { seed: 's1', triggerId: 'trg_2', checkedAt: at(2), values: { headline: 'B' } };
      expect(await dest.applyTriggerChanges('profiles', 'run_apply', [first, second])).toBe(2);
      expect(await dest.applyTriggerChanges('profiles', 'run_apply', [first, { ...second, seed: 'nobody' }])).toBe(0);

      const typo: SeedRowChange = { ...second, triggerId: 'trg_3', checkedAt: at(3), values: { hedline: 'C' } };
      await expect(
        dest.applyTriggerChanges('profiles', 'run_apply', [{ ...first, checkedAt: at(3) }, typo]),
      ).rejects.toThrow(/no column hedline/);
      const rows = await dest.query<Record<string, unknown>>(
        `select seed, headline, _trigger_id from ${dest.schema}.profiles order by seed`,
      );
      expect(rows).toEqual([
        { seed: 's1', headline: 'B', _trigger_id: 'trg_2' },
        { seed: 's2', headline: 'Engineer #2', _trigger_id: null },
      ]);
      // A load after the columns were added (by this destination) still fits the table, and leaves them NULL.
      await load(dest, 'merge', [profileRecord(1, { seed: 's1' })]);
      await dest.settle();
      expect(await dest.query(`select headline, _trigger_id from ${dest.schema}.profiles where seed = 's1'`)).toEqual([
        { headline: 'Engineer #1', _trigger_id: null },
      ]);
    });
  });
}
