import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * Gives each test file a temporary directory of its own (TMPDIR, which `os.tmpdir()` and the CLI
 * children spawned with this environment read), removed once the file's tests are done: the
 * DuckDB files, seed lists, spools and workspaces the tests make never pile up in /tmp (three
 * runs of the suite had left ~600 directories, 1.2 GB). Registered first, so it runs after every
 * other `afterAll` of the file.
 */
const root = mkdtempSync(join(tmpdir(), 'seedline-test-'));
const previous = process.env.TMPDIR;
process.env.TMPDIR = root;

afterAll(() => {
  if (previous === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = previous;
  rmSync(root, { recursive: true, force: true });
});
