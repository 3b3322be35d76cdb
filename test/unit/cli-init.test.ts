import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { initAction, type InitPrompt } from '../../src/cli/init-action.js';

/** A terminal that answers each question from a list, and keeps the questions asked. */
function answering(...answers: string[]): InitPrompt & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async ask(question, fallback) {
      asked.push(question);
      return answers.shift() || fallback;
    },
  };
}

// Issue 39, item 1: on a terminal init asks what the flags do not say; without one it asks nothing.
describe('seedline init on a terminal', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'seedline-init-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('given answers postgres and a URL, when init runs, then the config loads into that Postgres', async () => {
    const prompt = answering('postgres', 'postgres://etl@db.internal:5432/dw');
    await initAction(dir, {}, prompt);
    expect(prompt.asked).toEqual(['Warehouse, duckdb or postgres?', 'Postgres URL?']);
    const config = await readFile(join(dir, 'seedline.yaml'), 'utf8');
    expect(config).toContain('url: ${SEEDLINE_PG_URL:-postgres://etl@db.internal:5432/dw}');
    expect(await readFile(join(dir, '.env.example'), 'utf8')).toContain('SEEDLINE_PG_URL=');
  });

  it('given empty answers, when init runs, then it takes the defaults: a DuckDB file beside the config', async () => {
    await initAction(dir, {}, answering(''));
    expect(await readFile(join(dir, 'seedline.yaml'), 'utf8')).toMatch(/type: duckdb\n\s+path: warehouse\.duckdb/);
  });

  it('given flags that say everything, when init runs, then nothing is asked', async () => {
    const prompt = answering();
    await initAction(dir, { destination: 'postgres', postgresUrl: 'postgres://127.0.0.1:5432/x' }, prompt);
    expect(prompt.asked).toEqual([]);
  });

  it('given an answer that is no warehouse, or a URL that is no Postgres URL, when init runs, then it is refused and writes nothing', async () => {
    await expect(initAction(dir, {}, answering('mysql'))).rejects.toThrow(/must be duckdb or postgres, not "mysql"/);
    await expect(initAction(dir, {}, answering('postgres', 'db.internal'))).rejects.toThrow(
      /must look like postgres:\/\/user@host:5432\/database/,
    );
    await expect(readFile(join(dir, 'seedline.yaml'), 'utf8')).rejects.toThrow(/ENOENT/);
  });
});
