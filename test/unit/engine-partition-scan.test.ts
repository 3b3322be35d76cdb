import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SeedList } from '../../src/config/seed-list.js';
import { PartitionScan, type TableChunks } from '../../src/engine/partitions/partition-scan.js';
import type { Partition } from '../../src/manifest/components/partitions.js';
import {
  partitionSource,
  resolvePartitions,
  type OptionsAndContext as PartitionContext,
} from '../helpers/partition-nodes.js';
import type { PartitionNode } from '../../src/manifest/manifest-schema.js';
import { regroup } from '../../src/util/regroup.js';
import { SpoolFile } from '../../src/util/spool-file.js';

async function* chunksOf<T>(chunks: T[][]): AsyncGenerator<T[]> {
  for (const chunk of chunks) yield chunk;
}

async function pass(scan: PartitionScan, size?: number): Promise<Partition[][]> {
  const chunks: Partition[][] = [];
  for await (const chunk of scan.chunks(size)) chunks.push(chunk);
  return chunks;
}

describe('SpoolFile', () => {
  it('given chunks of dates, bigints and nested values, when spooled and read twice, then both passes give them back as written and remove deletes the file', async () => {
    const written: unknown[][] = [
      [{ at: new Date('2026-11-26T10:00:00.000Z'), n: 12n, tags: ['a', 'b'] }],
      [],
      [{ at: null, n: 1n, tags: [] }, 'x'],
    ];
    const spool = await SpoolFile.fill(chunksOf(written));
    const read = async () => {
      const chunks: unknown[][] = [];
      for await (const chunk of spool.chunks()) chunks.push(chunk);
      return chunks;
    };
    expect(spool.count).toBe(2);
    expect(await read()).toEqual([written[0], written[2]]);
    expect(await read()).toEqual([written[0], written[2]]);
    const path = (spool as unknown as { path: string }).path;
    expect(existsSync(path)).toBe(true);
    await spool.remove();
    expect(existsSync(dirname(path))).toBe(false);
  });
});

describe('SpoolFile of a process that died', () => {
  it("given the spool folder of a process no longer running and one of this process, when a spool is filled, then only the dead process's folder is removed", async () => {
    const exited = spawnSync(process.execPath, ['-e', '0']).pid;
    const dead = join(tmpdir(), `seedline-scan-${exited}-test`);
    const alive = join(tmpdir(), `seedline-scan-${process.pid}-test`);
    mkdirSync(dead, { recursive: true });
    mkdirSync(alive, { recursive: true });
    try {
      const spool = await SpoolFile.fill(chunksOf([[1]]));
      await spool.remove();
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(alive)).toBe(true);
    } finally {
      rmSync(dead, { recursive: true, force: true });
      rmSync(alive, { recursive: true, force: true });
    }
  });
});

describe('SpoolFile where nothing can be written', () => {
  it('given TMPDIR a folder that does not exist, when a spool is filled, then the error names the folder and says to set TMPDIR', async () => {
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = '/nonexistent/seedline';
    try {
      await expect(SpoolFile.fill(chunksOf([[1]]))).rejects.toThrow(
        'cannot write a temporary file in /nonexistent/seedline (ENOENT): set TMPDIR to a writable folder',
      );
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });
});

describe('regroup', () => {
  it('given chunks of 3, 0, 4 and 1 items, when regrouped by 3, then the items come in order in chunks of 3, 3 and 2', async () => {
    const chunks: number[][] = [];
    for await (const chunk of regroup(chunksOf([[1, 2, 3], [], [4, 5, 6, 7], [8]]), 3)) chunks.push(chunk);
    expect(chunks).toEqual([
      [1, 2, 3],
      [4, 5, 6],
      [7, 8],
    ]);
  });
});

describe('PartitionScan', () => {
  const rows = [
    [{ url: 'https://x.example/company/b' }, { url: 'https://x.example/company/c' }],
    [{ url: 'https://x.example/company/c' }, { url: 'https://x.example/company/d' }],
    [{ url: 'https://x.example/company/a' }],
  ];
  const tables: TableChunks = (table) => chunksOf(table === 'companies' ? rows : []);
  const context: PartitionContext = {
    options: { per_company: true, off: false, kinds: ['posts', 'comments'] },
    seeds: {
      companies: SeedList.of([
        'https://x.example/company/a',
        ' https://x.example/company/e ',
        'https://x.example/company/a',
      ]),
    },
    now: new Date('2026-11-26T10:00:00.000Z'),
    readTable: async (table) => (table === 'companies' ? rows.flat() : []),
  };
  const union: PartitionNode = {
    type: 'union',
    of: [
      { type: 'parent', table: 'companies', columns: ['url'], key: '{{ row.url }}' },
      { type: 'seeds', seeds: 'companies', as: 'company_url', seed_kind: 'raw', when: '{{ options.per_company }}' },
      { type: 'seeds', seeds: 'companies', as: 'company_url', seed_kind: 'raw', when: '{{ options.off }}' },
      { type: 'single', values: { keywords: 'x' } },
    ],
  };

  /** 5 parent rows, 3 seeds and the single: 9 keys surveyed, 6 of them distinct. */
  const KEYS_WITH_REPEATS = 9;
  it('given a union of a parent table read in chunks, a seed list, a node whose when fails and a single, when scanned twice, then each pass gives what resolving it whole gives, repeats dropped first-wins', async () => {
    const scan = await PartitionScan.open(partitionSource(union, context.options), context, tables);
    try {
      const whole = await resolvePartitions(union, context);
      const first = await pass(scan, 2);
      expect(first.flat()).toEqual(whole);
      expect(first.flat().map((p) => p.key)).toEqual([
        'https://x.example/company/b',
        'https://x.example/company/c',
        'https://x.example/company/d',
        'https://x.example/company/a',
        'https://x.example/company/e',
        '*',
      ]);
      expect(scan.keys).toBe(KEYS_WITH_REPEATS);
      expect((await pass(scan, 2)).flat()).toEqual(whole);
    } finally {
      await scan.close();
    }
  });

  it('given a parent node expanded by an option list, when scanned, then each row gives one partition a value, as resolving it whole does', async () => {
    const node: PartitionNode = {
      type: 'parent',
      table: 'companies',
      columns: ['url'],
      key: '{{ row.url }}',
      expand: { kind: '{{ options.kinds }}' },
    };
    const scan = await PartitionScan.open(partitionSource(node, context.options), context, tables);
    try {
      const partitions = (await pass(scan)).flat();
      expect(partitions).toEqual(await resolvePartitions(node, context));
      expect(partitions).toHaveLength(8);
      expect(partitions[0]).toEqual({
        key: 'https://x.example/company/b|kind=posts',
        values: { url: 'https://x.example/company/b', kind: 'posts', key: 'https://x.example/company/b|kind=posts' },
      });
    } finally {
      await scan.close();
    }
  });

  it('given a seed file edited after the scan opened, when scanned again, then every pass gives the seeds as they were when it opened', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'seedline-seed-file-'));
    const file = join(dir, 'companies.csv');
    writeFileSync(file, 'url\nhttps://x.example/company/a\nhttps://x.example/company/b\n');
    const list = await SeedList.open('seeds.companies', { file, column: 'url' }, dir, () => chunksOf([]));
    const node: PartitionNode = { type: 'seeds', seeds: 'companies', as: 'url', seed_kind: 'raw' };
    const scan = await PartitionScan.open(
      partitionSource(node, context.options),
      { ...context, seeds: { companies: list } },
      tables,
    );
    try {
      const before = (await pass(scan)).flat();
      writeFileSync(
        file,
        'url\nhttps://x.example/company/c\nhttps://x.example/company/b\nhttps://x.example/company/b\n',
      );
      expect((await pass(scan)).flat()).toEqual(before);
      expect(before.map((p) => p.key)).toEqual(['https://x.example/company/a', 'https://x.example/company/b']);
    } finally {
      await scan.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given a pass under way, when another pass starts, then it is refused: passes share the record of repeats met', async () => {
    const scan = await PartitionScan.open(partitionSource(union, context.options), context, tables);
    try {
      const under = scan.chunks(1);
      await under.next();
      await expect(scan.chunks(1).next()).rejects.toThrow(/one at a time/);
      await under.return(undefined);
      expect((await pass(scan)).flat()).toHaveLength(6);
    } finally {
      await scan.close();
    }
  });
});
