import { describe, expect, it } from 'vitest';
import { duckDbMemoryModes } from '../../src/destinations/duckdb/duckdb-memory-modes.js';

const defaults = { preserve_insertion_order: 'false', memory_limit: '128MB', checkpoint_threshold: '64MB' };

describe('DuckDB memory modes', () => {
  it('given no settings, when the modes are made, then the file opens lean and widens to the defaults', () => {
    expect(duckDbMemoryModes(defaults)).toEqual({
      opening: { preserve_insertion_order: 'false', memory_limit: '64MB', checkpoint_threshold: '16MB' },
      widened: { memory_limit: '128MB', checkpoint_threshold: '64MB' },
    });
  });

  it('given settings that name no memory setting, when the modes are made, then they apply in both steps', () => {
    const modes = duckDbMemoryModes(defaults, { threads: '1' });
    expect(modes.opening).toMatchObject({ threads: '1', memory_limit: '64MB', checkpoint_threshold: '16MB' });
    expect(modes.widened).toEqual({ memory_limit: '128MB', checkpoint_threshold: '64MB' });
  });

  it.each<Record<string, string>>([{ memory_limit: '1GB' }, { checkpoint_threshold: '8MB' }])(
    'given %o, when the modes are made, then there is one mode: the settings as given over the defaults',
    (given) => {
      const modes = duckDbMemoryModes(defaults, given);
      expect(modes).toEqual({ opening: { ...defaults, ...given }, widened: null });
    },
  );
});
