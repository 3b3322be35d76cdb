import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

// Issue 37, item 4: a plan for pull requests. A saved `plan --json` is the baseline a config
// change is compared with, and `--fail-over N` turns the worst case into an exit code.
describe('seedline plan --baseline and --fail-over', () => {
  const workspace = useSandboxWorkspace('svc_live_plan_baseline', {
    seeds: { profiles: ['ada-lovelace', 'grace-hopper'], companies: ['acme-analytics'] },
    streams: { profiles: {}, companies: {} },
    budget: { max_credits_per_run: 1000 },
  });

  /** The workspace's config with `change` applied, as a second file beside it (the pull request's config). */
  async function changedConfig(change: (config: Record<string, any>) => void): Promise<string> {
    const config = parse(await readFile(workspace.configPath, 'utf8')) as Record<string, any>;
    change(config);
    const path = join(dirname(workspace.configPath), 'changed.yaml');
    await writeFile(path, stringify(config));
    return path;
  }

  it('given a saved plan and a config that adds a stream and a seed, when planned against it, then the change is listed per stream with the new totals, and nothing was called that bills', async () => {
    const saved = await runCliInProcess(['plan', '--config', workspace.configPath, '--json']);
    expect(saved.code, saved.stderr).toBe(0);
    const baseline = join(dirname(workspace.configPath), 'plan-main.json');
    await writeFile(baseline, saved.stdout);
    const before = JSON.parse(saved.stdout) as { totals: { worst_case_credits: number } };

    const changed = await changedConfig((config) => {
      config.seeds.profiles.push('alan-turing');
      config.streams.jobs = { keywords: ['data engineer'], max_results: 25 };
    });
    const text = await runCliInProcess(['plan', '--config', changed, '--baseline', baseline]);
    expect(text.code, text.stderr).toBe(0);
    const comparison = text.stdout.slice(text.stdout.indexOf(`against ${baseline}:`));
    expect(comparison).toMatch(/^profiles\s+changed\s+2 → 3 \(\+1\)/m);
    expect(comparison).toMatch(/^jobs\s+added\s+\d+ \(new\)/m);
    expect(comparison).not.toMatch(/^companies\s/m);

    const json = await runCliInProcess(['plan', '--config', changed, '--baseline', baseline, '--json']);
    const document = JSON.parse(json.stdout) as {
      totals: { worst_case_credits: number };
      baseline: { totals: { before: { worst_case_credits: number }; after: { worst_case_credits: number } } };
    };
    expect(document.baseline.totals.before.worst_case_credits).toBe(before.totals.worst_case_credits);
    expect(document.baseline.totals.after.worst_case_credits).toBe(document.totals.worst_case_credits);
    expect(document.totals.worst_case_credits).toBeGreaterThan(before.totals.worst_case_credits);
    expect(workspace.sandbox.ledger.totalBilled()).toBe(0);
  });

  it('given --fail-over under and over the worst case, when planned, then exit 4 with a line saying so, else 0', async () => {
    const plan = JSON.parse((await runCliInProcess(['plan', '--config', workspace.configPath, '--json'])).stdout) as {
      totals: { worst_case_credits: number };
    };
    const worst = plan.totals.worst_case_credits;
    const over = await runCliInProcess(['plan', '--config', workspace.configPath, '--fail-over', String(worst - 1)]);
    expect(over.code).toBe(4);
    expect(over.stderr).toContain(`the worst case, ${worst} credits, is over --fail-over ${worst - 1} (exit 4)`);
    const at = await runCliInProcess(['plan', '--config', workspace.configPath, '--fail-over', String(worst)]);
    expect(at.code, at.stderr).toBe(0);
  });

  it('given a baseline that is no saved plan, or a --fail-over that is no number, when planned, then exit 2 naming the problem without echoing the file', async () => {
    const bad = join(dirname(workspace.configPath), 'not-a-plan.json');
    await writeFile(bad, '{"api_key": "svc_live_do_not_echo"}');
    const refused = await runCliInProcess(['plan', '--config', workspace.configPath, '--baseline', bad]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/not the output of seedline plan --json/);
    expect(refused.stderr).not.toContain('svc_live_do_not_echo');
    const missing = await runCliInProcess(['plan', '--config', workspace.configPath, '--baseline', `${bad}.gone`]);
    expect(missing.stderr).toMatch(/cannot read the file; save one with seedline plan --json/);
    const word = await runCliInProcess(['plan', '--config', workspace.configPath, '--fail-over', 'lots']);
    expect(word.code).toBe(2);
    expect(word.stderr).toMatch(/--fail-over must be a whole number of credits, not "lots"/);
  });
});
