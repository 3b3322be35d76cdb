import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/sandbox/billing-ledger.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, spawnCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import {
  billedEntries,
  DEFAULT_CRASH_SEED,
  extraBilling,
  harnessConfig,
  harnessSandboxOptions,
} from '../helpers/crash-harness.js';
import { queryDestination } from '../helpers/destinations.js';
import { ThrowawayPostgres } from '../helpers/throwaway-postgres.js';

// Issue 34, item 5: a Postgres server that goes away mid-sync. The run must never be recorded
// `succeeded` (every unit it loaded did not commit), it must stop buying answers it cannot save,
// and the rerun, once the server is back, finishes with nothing billed twice: batch items are read
// again from their jobs; single calls (\`via: calls\`, one billed call on the wire at a time) may
// buy again at most the answer that was on the wire, as a crash of seedline itself would.

const unavailable = ThrowawayPostgres.unavailable();

/** Crashes `server` when the sandbox records its k-th billed entry, before that call's answer is sent. */
function crashAtBilledEntry(sandbox: Sandbox, server: ThrowawayPostgres, k: number): { fired: () => boolean } {
  const ledger = sandbox.ledger;
  const original = ledger.record;
  let seen = 0;
  ledger.record = function record(entry: LedgerEntry): void {
    original.call(ledger, entry);
    if (entry.billed && entry.credits > 0 && ++seen === k) server.crash();
  };
  return { fired: () => seen >= k };
}

describe.skipIf(unavailable !== undefined)('a Postgres server that goes away mid-sync', () => {
  let server: ThrowawayPostgres;
  beforeAll(async () => {
    server = await ThrowawayPostgres.start();
  });
  afterAll(() => server?.remove());

  // Batch: a crash among the enrichment items; calls: one among the single calls (searches and pages) further on.
  it.each([
    ['batch', 5],
    ['calls', 30],
  ] as const)(
    'via %s: given a server crashed at billed entry %i and started again, when the sync ends and is run again, then the first run is never recorded succeeded, it exits non-zero, and the rerun succeeds billing again at most the answer on the wire',
    async (mode, k) => {
      const dir = await tempWorkspace();
      const destination = (schema: string) => ({ type: 'postgres' as const, url: server.url, schema });

      const referenceSandbox = await startSandbox(harnessSandboxOptions(DEFAULT_CRASH_SEED));
      let reference: LedgerEntry[];
      try {
        const config = await writeConfig(
          dir,
          harnessConfig(referenceSandbox.url, destination(`reference_${mode}`), mode),
          'ref.yaml',
        );
        // The reference runs in-process: only the run that loses its server and the rerun need a process.
        const clean = await runCliInProcess(['sync', '--config', config]);
        expect(clean.code, clean.stderr).toBe(0);
        reference = billedEntries(referenceSandbox);
      } finally {
        await referenceSandbox.close();
      }

      const sandbox = await startSandbox(harnessSandboxOptions(DEFAULT_CRASH_SEED));
      try {
        const schema = `trial_${mode}`;
        const config = await writeConfig(dir, harnessConfig(sandbox.url, destination(schema), mode), 'trial.yaml');
        const crash = crashAtBilledEntry(sandbox, server, k);
        const sync = spawnCli(['sync', '--config', config]);
        // The server comes back once the sync has met its absence (or has ended): a restart mid-run.
        const noticed = new Promise<void>((resolve) => {
          const look = () => {
            if (/SEEDLINE_DESTINATION|went away|Connection terminated|ECONNREFUSED/.test(sync.stderr)) resolve();
          };
          sync.child.stderr?.on('data', look);
          void sync.exited.then(() => resolve());
        });
        await noticed;
        expect(crash.fired()).toBe(true);
        server.startServer();
        const code = await sync.exited;
        expect(code, sync.stderr).not.toBe(0);
        expect(sync.stderr).toMatch(/went away mid-run|Cannot open Postgres schema|Connection terminated/);

        const firstRuns = await queryDestination(
          destination(schema),
          `select run_id, status from ${schema}._seedline_runs`,
        );
        expect(firstRuns).toHaveLength(1);
        expect(firstRuns[0]!.status).not.toBe('succeeded');

        const rerun = await runCli(['sync', '--config', config]);
        expect(rerun.code, rerun.stderr).toBe(0);
        const runs = await queryDestination(
          destination(schema),
          `select run_id, status from ${schema}._seedline_runs order by started_at`,
        );
        expect(runs.map((r) => r.status)).toEqual([expect.stringMatching(/^(failed|interrupted)$/), 'succeeded']);
        const extra = extraBilling(reference, billedEntries(sandbox));
        if (mode === 'batch') expect(extra).toMatchObject({ credits: 0, targets: [] });
        // One billed call on the wire (max_billed_in_flight 1): a page of 2 credits, or a search of up to 8.
        else expect(extra.targets.length, extra.targets.join('\n')).toBeLessThanOrEqual(1);
      } finally {
        await sandbox.close();
      }
    },
  );
});
