import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

// Issue 18, item 4: `seedline schema` prints the tables a sync creates, per backend.
describe.each(e2eBackends)('seedline schema for $name', ({ name, make }) => {
  const workspace = useSandboxWorkspace(
    'svc_test_schema',
    {
      seeds: { profiles: ['ada-lovelace'], companies: ['acme-analytics'] },
      streams: { profiles: {}, companies: {}, activity: { kinds: ['posts', 'comments'], max_pages: 1 } },
    },
    (dir) => make(dir, 'schema_cmd'),
  );

  it("given a config, when schema runs before and after a sync, then it names every table the sync created with the same columns in order and the backend's types", async (ctx) => {
    const { destination: dest, configPath } = workspace;
    if (!dest) return ctx.skip();
    const printed = await runCliInProcess(['schema', '--config', configPath]);
    expect(printed.code, printed.stderr).toBe(0);
    const tables = JSON.parse(printed.stdout) as { table: string; columns: { name: string; sql_type: string }[] }[];
    expect(tables.map((t) => t.table)).toEqual(
      expect.arrayContaining(['profiles', 'profiles__positions', 'companies', 'activity_posts', 'activity_comments']),
    );
    expect(tables.find((t) => t.table === 'profiles')!.columns.find((c) => c.name === 'scraped_at')!.sql_type).toBe(
      name === 'postgres' ? 'timestamptz' : 'TIMESTAMPTZ',
    );

    expect((await runCliInProcess(['sync', '--config', configPath])).code).toBe(0);
    const schema = dest.schema ?? 'seedline';
    for (const table of tables) {
      const columns = await query(
        dest,
        `select column_name from information_schema.columns where table_schema = '${schema}' and table_name = '${table.table}' order by ordinal_position`,
      );
      expect(
        columns.map((c) => c.column_name),
        table.table,
      ).toEqual(table.columns.map((c) => c.name));
    }
    const sql = await runCliInProcess(['schema', '--config', configPath, '--format', 'sql']);
    expect(sql.stdout).toMatch(
      new RegExp(
        `create table if not exists "${schema}"\\."profiles" \\(\\n  "url" ${name === 'postgres' ? 'text' : 'VARCHAR'},`,
      ),
    );
  });
});
