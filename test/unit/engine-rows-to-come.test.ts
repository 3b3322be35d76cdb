import { describe, expect, it } from 'vitest';
import { compileTable } from '../../src/manifest/components/table.js';
import { TableNode } from '../../src/manifest/manifest-schema.js';
import { ANY_TABLE, plannedRows } from '../../src/engine/partitions/rows-to-come.js';
import type { StreamPlan } from '../../src/engine/stream-context.js';

const plan = (rows: StreamPlan['rows']): StreamPlan => ({
  stream: 's',
  units: 0,
  resumed: 0,
  skipped: 0,
  calls: 0,
  worstCaseCredits: 0,
  estimatedCredits: 0,
  next: [],
  rows,
});

describe('rows the streams before a child may load into its parent table', () => {
  it('given rows planned for the table, for its child table and for a table not named before the run, then each bounds as it may', () => {
    expect(plannedRows([plan({ profiles: { worst: 30, expected: 12 } })], 'profiles')).toEqual({
      worst: 30,
      expected: 12,
    });
    expect(plannedRows([plan({ profiles: { worst: 30, expected: 12 } })], 'profiles__positions')).toEqual({
      worst: Infinity,
      expected: 12,
    });
    expect(plannedRows([plan({ [ANY_TABLE]: { worst: 5, expected: 5 } })], 'anything')).toEqual({
      worst: Infinity,
      expected: 5,
    });
    expect(plannedRows([plan({ companies: { worst: 3, expected: 3 } })], 'profiles')).toEqual({
      worst: 0,
      expected: 0,
    });
  });

  it('given table names reading nothing, the options only, or the partition, then only the last has no fixed name', () => {
    const table = (name: string) => compileTable(TableNode.parse({ name, schema: 'profile' }), { suffix: 'eu' });
    expect(table('found').fixedName).toBe('found');
    expect(table('found_{{ options.suffix }}').fixedName).toBe('found_eu');
    expect(table('found_{{ partition.kind }}').fixedName).toBeNull();
  });
});
