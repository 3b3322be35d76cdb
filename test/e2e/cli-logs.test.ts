import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

const KEY = 'svc_live_LogsNeverShowThisKey42';

/** stderr as JSON objects: fails on any line that is not one. */
function jsonLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// docs/commands.md "Logs": pino levels, --log-format json for machines, plain lines for people, secrets redacted.
describe('seedline logs', () => {
  const workspace = useSandboxWorkspace(KEY, {
    seeds: { profiles: ['ada-lovelace', 'private-jane'], companies: ['acme-analytics'] },
    streams: { profiles: {} },
  });

  it('given --log-format json, when a sync runs, then every stderr line is a JSON object with level, time and message, the stream fields are there and the key is nowhere', async () => {
    const sync = await runCli(['sync', '--config', workspace.configPath, '--log-format', 'json']);
    expect(sync.code, sync.stderr).toBe(0);
    const lines = jsonLines(sync.stderr);
    expect(
      lines.every(
        (line) => typeof line.level === 'string' && typeof line.time === 'string' && typeof line.msg === 'string',
      ),
    ).toBe(true);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'info',
        stream: 'profiles',
        event: 'finished',
        status: 'partial',
        records: 1,
        failed: 1,
      }),
    );
    // Seeds no stream reads is a warning, at its level.
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: expect.stringMatching(/seeds\.companies/) }),
    );
    expect(`${sync.stdout}${sync.stderr}`).not.toContain(KEY);
  });

  it('given SEEDLINE_LOG_FORMAT=json and a failing command, then the error is one JSON line with its code; given --log-level warn, then progress lines are dropped', async () => {
    const failed = await runCli(
      ['query', '--config', workspace.configPath, 'insert into seedline.profiles (url) values (1)'],
      { env: { SEEDLINE_LOG_FORMAT: 'json' } },
    );
    expect(failed.code).toBe(2);
    expect(jsonLines(failed.stderr)).toContainEqual(
      expect.objectContaining({ level: 'error', code: 'SEEDLINE_QUERY_NOT_READ_ONLY' }),
    );

    const quiet = await runCli(['--log-level', 'warn', 'sync', '--config', workspace.configPath, '--full-refresh']);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).not.toMatch(/\[profiles\] started/);
    expect(quiet.stderr).toMatch(/^warning: .*seeds\.companies/m);
  });
});
