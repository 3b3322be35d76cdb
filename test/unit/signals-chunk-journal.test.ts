import { appendFile, mkdtemp, open, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SignalBulkBody } from '../../schemas/index.js';
import { ChunkJournal, JournalLockedError } from '../../src/signals/chunk-journal.js';

const body = (site: string): SignalBulkBody => ({
  template: {
    name_prefix: 'seedline',
    tags: ['t'],
    schedule: { interval: '7d' },
    criteria: { mode: 'field_change', fields: ['headline'] },
  },
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

  it('given a lock file another apply has just created and not yet written its pid into, when a second apply locks, then it is refused', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'seedline-journal-')), 'secrets.jsonl.journal');
    const creating = await open(`${path}.lock`, 'wx', 0o600);
    try {
      await expect(new ChunkJournal(path).lock()).rejects.toBeInstanceOf(JournalLockedError);
    } finally {
      await creating.close();
    }
  });

  it('given an empty lock file a minute old (an apply killed before writing its pid), when an apply locks, then it takes the lock over', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'seedline-journal-')), 'secrets.jsonl.journal');
    await writeFile(`${path}.lock`, '');
    const minuteAgo = new Date(Date.now() - 60_000);
    await utimes(`${path}.lock`, minuteAgo, minuteAgo);
    const release = await new ChunkJournal(path).lock();
    await expect(new ChunkJournal(path).lock()).rejects.toThrow(/another signals apply \(pid \d+\)/);
    await release();
  });

  it('given twenty applies locking one journal at once, when all are answered, then exactly one holds the lock and no temporary file is left', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-journal-'));
    const path = join(dir, 'secrets.jsonl.journal');
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, () => new ChunkJournal(path).lock()));
    const held = outcomes.filter((o) => o.status === 'fulfilled');
    expect({
      held: held.length,
      refused: outcomes.filter((o) => o.status === 'rejected' && o.reason instanceof JournalLockedError).length,
    }).toEqual({ held: 1, refused: 19 });
    expect(await readdir(dir)).toEqual(['secrets.jsonl.journal.lock']);
    await (held[0] as PromiseFulfilledResult<() => Promise<void>>).value();
  });

  it('given the lock of a dead apply, when twenty applies take it over at once, then exactly one holds it and nothing else is left', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-journal-'));
    const path = join(dir, 'secrets.jsonl.journal');
    await writeFile(`${path}.lock`, '2147483646');
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, () => new ChunkJournal(path).lock()));
    const held = outcomes.filter((o) => o.status === 'fulfilled');
    expect({
      held: held.length,
      refused: outcomes.filter((o) => o.status === 'rejected' && o.reason instanceof JournalLockedError).length,
    }).toEqual({ held: 1, refused: 19 });
    expect(await readdir(dir)).toEqual(['secrets.jsonl.journal.lock']);
    await (held[0] as PromiseFulfilledResult<() => Promise<void>>).value();
  });
});
