import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';

describe('DuckDB default settings', () => {
  const opened: { destination: Destination; dir: string }[] = [];
  afterEach(async () => {
    for (const { destination, dir } of opened.splice(0)) {
      await destination.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  async function settingsOf(settings?: Record<string, string>): Promise<Record<string, unknown>> {
    const dir = mkdtempSync(join(tmpdir(), 'seedline-settings-'));
    const destination = await createDestination({
      type: 'duckdb',
      path: join(dir, 'w.duckdb'),
      ...(settings ? { settings } : {}),
    });
    opened.push({ destination, dir });
    const [row] = await destination.query(
      "select current_setting('memory_limit') as memory_limit, current_setting('threads') as threads",
    );
    return row!;
  }

  it('given a destination config without settings, when the file opens, then DuckDB has a memory limit of 128 MB', async () => {
    expect(String((await settingsOf()).memory_limit)).toMatch(/^122\.\d+ MiB$/);
  });

  it('given destination.settings naming other settings, when the file opens, then they apply and the default memory limit stays', async () => {
    const row = await settingsOf({ threads: '1' });
    expect(Number(row.threads)).toBe(1);
    expect(String(row.memory_limit)).toMatch(/^122\.\d+ MiB$/);
  });

  it("given destination.settings with a memory limit, when the file opens, then the user's limit wins", async () => {
    expect(String((await settingsOf({ memory_limit: '96MB' })).memory_limit)).toMatch(/^91\.\d+ MiB$/);
  });
});
