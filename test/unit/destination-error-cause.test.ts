import { describe, expect, it } from 'vitest';
import { describeCause } from '../../src/destinations/destination-error.js';

// DuckDB 1.5's own wording, as a sync at 64 MB and a unit past 32 MB met them (bench/README.md).
const ADVICE = [
  '',
  'Possible solutions:',
  '* Reducing the number of threads (SET threads=X)',
  '* Disabling insertion-order preservation (SET preserve_insertion_order=false)',
  "* Increasing the memory limit (SET memory_limit='...GB')",
  '',
  'See also https://duckdb.org/docs/stable/guides/performance/how_to_tune_workloads',
].join('\n');

describe('describeCause', () => {
  it("given DuckDB out of memory, when described, then DuckDB's SQL advice gives way to the config setting to raise", () => {
    const text = describeCause(
      new Error(`Out of Memory Error: failed to pin block of size 256.0 KiB (30.4 MiB/30.5 MiB used)${ADVICE}`),
    );
    expect(text).toBe(
      'Out of Memory Error: failed to pin block of size 256.0 KiB (30.4 MiB/30.5 MiB used). DuckDB ran out of its memory_limit: ' +
        'raise destination.settings.memory_limit in the config (default 64MB while a run loads new keys, 128MB once it works on stored rows; see docs/operations.md#memory-and-allocator-variables)',
    );
  });

  it('given a checkpoint that failed for memory, when described, then it says what was kept and how the file recovers, with no SQL to type', () => {
    const text = describeCause(
      new Error(
        'IO Error: Database "seedline_warehouse" has been invalidated because checkpointing failed. Detach and reattach it before using it again. ' +
          `Original error: failed to pin block of size 256.0 KiB (61.0 MiB/61.0 MiB used)${ADVICE}`,
      ),
    );
    expect(text).toContain('has been invalidated because checkpointing failed. Original error: failed to pin block');
    expect(text).toContain('the units committed before are kept, and opening the file again replays them');
    expect(text).toContain('raise destination.settings.memory_limit in the config');
    expect(text).not.toMatch(/SET |Detach|Possible solutions/);
  });

  it('given a rollback that failed for memory, when described, then its lines are one sentence and DuckDB is said to have closed the database', () => {
    const text = describeCause(
      new Error(
        `FATAL Error: Failed to rollback transaction. Cannot continue operation.\nOriginal Error: Out of Memory Error: failed to pin block of size 4.5 MiB (29.2 MiB/30.5 MiB used)${ADVICE}\nRollback Error: Out of Memory Error: failed to pin block of size 4.5 MiB`,
      ),
    );
    expect(text).toMatch(
      /^FATAL Error: Failed to rollback transaction\. Cannot continue operation\. Original Error: Out of Memory Error: failed to pin block of size 4\.5 MiB \(29\.2 MiB\/30\.5 MiB used\)\. DuckDB closed the database/,
    );
    expect(text).not.toContain('\n');
  });

  it('given any other error, when described, then its message is kept as it is', () => {
    expect(describeCause(new Error('relation "seedline.profiles" does not exist'))).toBe(
      'relation "seedline.profiles" does not exist',
    );
    expect(describeCause('plain text')).toBe('plain text');
  });
});
