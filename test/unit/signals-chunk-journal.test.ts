import { appendFile, mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SignalBulkBody } from '../../schemas/index.js';
import { ChunkJournal, JournalLockedError } from '../../src/signals/chunk-journal.js';

const body = (site: string): SignalBulkBody => ({
  template: { name_prefix: 'seedline', tags: ['t'], schedule: { interval: '7d' }, criteria: { mode: 'field_change', fields: ['headline'] } },
  targets: [{ type: 'profile', site_url: site }],
});

describe('signals chunk journal', () => {
  it('given chunks sent, one done and a last line cut short by a crash, when read, then only the unfinished whole chunk is pending', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'seedline-journal-')), 'secrets.jsonl.journal');
    const journal = new ChunkJournal(path);
    await journal.sending({ idempotencyKey: 'k1', body: body('a') });
    const sentAt = new Date('2026-11-22T10:00:00Z');
    await journal.sending({ idempotencyKey: 'k2', body: body('b') }, sentAt);
    await journal.done('k1');
    await appendFile(path, '{"sending":"k3","body":{"templ');
    expect(await journal.pending()).toEqual([{ idempotencyKey: 'k2', body: body('b'), sentAt }]);
    expect((await stat(path)).mode & 0o777).toBe(0o600);

    await journal.clearIfSettled();
    expect((await stat(path)).isFile()).toBe(true);
    await journal.done('k2');
    await journal.clearIfSettled();
    await expect(stat(path)).rejects.toThrow(/ENOENT/);
    expect(await journal.pending()).toEqual([]);
  });

  it('given one apply holding the journal lock, when a second takes it, then it is refused until released; a lock of a dead process is taken over', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'seedline-journal-')), 'secrets.jsonl.journal');
    const first = new ChunkJournal(path);
    const release = await first.lock();
    await expect(new ChunkJournal(path).lock()).rejects.toBeInstanceOf(JournalLockedError);
    await release();
    const again = await new ChunkJournal(path).lock();
    await again();

    // A pid far above any pid_max: no process runs under it.
    await writeFile(`${path}.lock`, '2147483646');
    const takenOver = await new ChunkJournal(path).lock();
    await expect(new ChunkJournal(path).lock()).rejects.toThrow(/another signals apply \(pid \d+\)/);
    await takenOver();
  });
});
