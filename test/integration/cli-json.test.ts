import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

const KEY = 'svc_live_cli_json';

/** Every key of a JSON document, at any depth (keys of arrays' objects included). */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => [key, ...keysOf(inner)]);
}

const SNAKE_CASE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

// docs/commands.md "CLI conventions": `--json` on every command that prints data, one document on stdout, snake_case keys.
describe('--json on every command that prints data', () => {
  const workspace = useSandboxWorkspace(KEY, {
    seeds: { profiles: ['ada-lovelace'] },
    streams: { profiles: {}, account: {} },
    signals: {
      tag: 'json-watch',
      schedule: { interval: '7d' },
      criteria: { mode: 'field_change', fields: ['headline'] },
      targets: ['json-ada', 'json-grace'],
    },
  });

  /** Runs a command with --json: exit 0, stdout one JSON document whose keys are all snake_case. */
  async function json(args: string[], env: NodeJS.ProcessEnv = {}): Promise<any> {
    const result = await runCliInProcess([...args, '--json'], { env });
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    const document = JSON.parse(result.stdout) as unknown;
    expect(
      keysOf(document).filter((key) => !SNAKE_CASE.test(key)),
      args.join(' '),
    ).toEqual([]);
    return document;
  }

  it('given a config, when plan, sync, status, query and account run with --json, then each prints one snake_case document with the figures of the text output', async () => {
    const plan = await json(['plan', '--config', workspace.configPath]);
    expect(plan.totals).toMatchObject({ units: 2, worst_case_credits: expect.any(Number) });
    expect(plan.crash_exposure).toEqual({ in_flight: expect.any(Number), credits: expect.any(Number) });

    const sync = await json(['sync', '--config', workspace.configPath, '--sample-query']);
    expect(sync).toMatchObject({
      status: 'succeeded',
      credits: workspace.sandbox.ledger.totalBilled(),
      books: { billed: workspace.sandbox.ledger.totalBilled() },
    });
    expect(sync.streams.map((s: { stream: string }) => s.stream).sort()).toEqual(['account', 'profiles']);
    expect(sync.sample_query.rows).toEqual([expect.objectContaining({ positions: expect.any(Number) })]);

    const status = await json(['status', '--config', workspace.configPath]);
    expect(status.runs[0]).toMatchObject({ run: sync.run_id, status: 'succeeded', credits: sync.credits });
    expect(status.seeds).toContainEqual(expect.objectContaining({ stream: 'profiles', seeds: 1 }));

    // Rows keep their column names as the SQL gave them; --json is --format json.
    const rows = await runCliInProcess([
      'query',
      '--config',
      workspace.configPath,
      '--json',
      'select count(*) as n from seedline.profiles',
    ]);
    expect(JSON.parse(rows.stdout)).toEqual([{ n: 1 }]);
    const contradiction = await runCliInProcess([
      'query',
      '--config',
      workspace.configPath,
      '--json',
      '--format',
      'csv',
      'select 1 as n',
    ]);
    expect(contradiction.code).toBe(2);
    expect(contradiction.stderr).toMatch(/--json and --format csv contradict each other/);

    const account = await json(['account', '--base-url', workspace.sandbox.url], { SEEDLINE_API_KEY: KEY });
    expect(account.credits_remaining).toEqual(expect.any(Number));
  });

  it('given declared Signals, when signals plan, apply and pause run with --json, then each prints one snake_case document and notes stay off stdout', async () => {
    const plan = await json(['signals', 'plan', '--config', workspace.configPath]);
    expect(plan).toMatchObject({ changed: false, apply_would_refuse: null, plan: { tag: 'json-watch', unchanged: 0 } });
    expect(plan.plan.create.map((c: { target: string }) => c.target)).toEqual(['json-ada', 'json-grace']);

    const apply = await json(['signals', 'apply', '--config', workspace.configPath, '--discard-secrets']);
    expect(apply.result.created).toHaveLength(2);
    expect(apply.result).toMatchObject({ failures: [], rejected: [], dropped_secrets: 2 });

    const paused = await json(['signals', 'pause', '--config', workspace.configPath, '--tag', 'json-watch']);
    expect(paused).toMatchObject({ paused: 2 });
    const resumed = await json(['signals', 'resume', '--config', workspace.configPath, '--tag', 'json-watch']);
    expect(resumed.resumed).toHaveLength(2);
  });
});
