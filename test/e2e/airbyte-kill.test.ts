import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LedgerEntry, Sandbox } from '../../src/sandbox/index.js';
import { protocolMessages } from '../helpers/airbyte-messages.js';
import { runCli, writeConfig } from '../helpers/cli.js';
import { billedEntries, extraBilling } from '../helpers/crash-harness.js';
import { inSyncWorkspace, syncConfig } from '../helpers/sync-workspace.js';

// Issue 36, item 2: `airbyte read` killed with kill -9, then read again in a fresh working store (a
// new container: another DuckDB file) from only the STATE messages the killed read emitted, the
// last of each stream, as the platform keeps them. The sandbox's ledger says what was paid for:
// nothing may be paid twice, and every record paid for must come out of one read or the other.

// Streams run in this order: two batch streams (profiles, companies), then single calls: jobs (one
// unpaged search per company and keyword) and activity (pages of each loaded profile's posts).
const STREAMS = {
  profiles: {},
  companies: {},
  jobs: { keywords: ['data engineer'], max_results: 5, via: 'calls' },
  activity: { kinds: ['posts'], max_pages: 2, via: 'calls' },
};

/**
 * The catalog's tables, each with the operation that bills its rows and the column naming the
 * billed target (`search.jobs` bills a company's search: its rows name the company; the keyword
 * search names no row, so it is only checked for billing).
 */
const TABLES = [
  { table: 'profiles', operation: 'profiles.enrich', target: 'url' },
  { table: 'companies', operation: 'companies.enrich', target: 'url' },
  { table: 'jobs', operation: 'search.jobs', target: 'company__url' },
  { table: 'activity_posts', operation: 'profiles.activity', target: 'profile_url' },
];

/** A seed the sandbox refuses: billed as unprocessable, it has no row to emit. */
const REFUSED = /\/in\/(private|deleted)-/;

/** One kill: where (`SEEDLINE_TEST_CRASH_AT`), and the tables whose STATE the killed read emits first. */
interface Trial {
  name: string;
  crashAt: string;
  /** Tables whose STATE the killed read emitted: proves the kill landed in the stream meant. */
  statesBefore: string[];
  /** The killed read and the retry are fed the uninterrupted read's STATE, its profiles a week old (a scheduled refresh). */
  refresh?: boolean;
  /**
   * Why this trial breaks a promise today: a stream's STATE is emitted only when the stream ends, so
   * what a stream killed part-way bought is in no STATE. Its promise check is expected to fail
   * (`it.fails`) until src emits STATE within a stream; then drop this and the check must pass.
   */
  knownBug?: string;
}

// Kill points are counted per process (`point:n`, the nth visit), and chosen where the count does
// not depend on timing: profiles submit 5 jobs (18 seeds), companies 1; the batch streams journal
// no answer (no fault, no single retry); jobs commits 5 pages, one a search. Results pages
// (`mid-results`) come as items complete, so they are only counted inside profiles. A change that
// moves a kill to another stream fails `statesBefore`, not the promise checks.
const TRIALS: Trial[] = [
  { name: 'profiles (batch) right after its first intent is recorded', crashAt: 'after-intent', statesBefore: [] },
  { name: 'profiles (batch) once its second results page is committed', crashAt: 'mid-results:2', statesBefore: [] },
  { name: 'companies (batch) right after its job is submitted', crashAt: 'after-submit:6', statesBefore: ['profiles'] },
  {
    name: 'profiles (batch) of a refresh read fed a week-old STATE, right after its second job is submitted',
    crashAt: 'after-submit:2',
    statesBefore: [],
    refresh: true,
  },
  {
    name: 'jobs (single calls) after its second answer is journaled',
    crashAt: 'after-answer:2',
    statesBefore: ['profiles', 'companies'],
    knownBug: 'a calls stream killed before its STATE: the retry buys its answers again',
  },
  {
    name: 'activity (paged single calls) inside the unit loading its third page',
    crashAt: 'mid-page:8',
    statesBefore: ['profiles', 'companies', 'jobs'],
    knownBug:
      'a child stream killed before its STATE: a fresh store has no profiles to page, its pages are never emitted',
  },
];

type Message = ReturnType<typeof protocolMessages>[number];

/** The last STATE message of each table among `lists`, later lists winning: what the platform keeps. */
function lastStates(...lists: Message[][]): Message[] {
  const last = new Map<string, Message>();
  for (const m of lists.flat()) if (m.type === 'STATE') last.set(m.state.stream.stream_descriptor.name, m);
  return [...last.values()];
}

/** Runs `airbyte read` on a working store of its own (`store`.duckdb), fed `state` when given. */
async function read(
  sandbox: Sandbox,
  dir: string,
  store: string,
  options: { crashAt?: string; state?: Message[] } = {},
) {
  const destination = { type: 'duckdb', path: join(dir, `${store}.duckdb`) };
  const config = await writeConfig(dir, syncConfig({ sandbox, destination, streams: STREAMS }), `${store}.yaml`);
  const catalog = join(dir, 'catalog.json');
  const streams = TABLES.map(({ table }) => ({
    stream: { name: table },
    sync_mode: 'incremental',
    destination_sync_mode: 'append_dedup',
  }));
  await writeFile(catalog, JSON.stringify({ streams }));
  const args = ['airbyte', 'read', '--config', config, '--catalog', catalog];
  if (options.state) {
    const path = join(dir, `${store}-state.json`);
    await writeFile(path, JSON.stringify(options.state));
    args.push('--state', path);
  }
  const run = await runCli(args, { env: options.crashAt ? { SEEDLINE_TEST_CRASH_AT: options.crashAt } : {} });
  // Every line, the killed read's too, must be a valid message: a kill never leaves half a line.
  return { ...run, messages: protocolMessages(run.stdout) };
}

/** The billed targets among `entries` that no RECORD of `records` names (refused seeds aside). */
function paidButNotEmitted(entries: readonly LedgerEntry[], records: readonly Message[]): string[] {
  const emitted = new Set(
    records.flatMap((m) =>
      TABLES.filter((t) => t.table === m.record.stream).map((t) => `${t.operation} ${String(m.record.data[t.target])}`),
    ),
  );
  return entries
    .filter((e) => TABLES.some((t) => t.operation === e.operation) && !REFUSED.test(e.target))
    .filter((e) => !e.target.startsWith('keywords:'))
    .map((e) => `${e.operation} ${e.target}`)
    .filter((item) => !emitted.has(item));
}

/** What one trial's reads did, for the promise checks. */
interface Outcome {
  killedBilled: number;
  resumedBilled: number;
  /** `operation target ×n (reference ×m)` for items billed more often than the uninterrupted read bills them. */
  billedTwice: string[];
  notEmitted: string[];
}

describe('airbyte read killed with kill -9, then read again in a fresh store from the STATE it emitted', () => {
  // An uninterrupted read: what each item is billed (once a seed, once a page), and its STATE for the refresh trial.
  let reference: { entries: LedgerEntry[]; states: Message[] };
  beforeAll(async () => {
    reference = await inSyncWorkspace({ rpm: 100_000 }, async ({ sandbox, dir }) => {
      const run = await read(sandbox, dir, 'reference');
      expect(run.code, run.stderr).toBe(0);
      await sandbox.idle();
      return { entries: billedEntries(sandbox), states: lastStates(run.messages) };
    });
  });

  describe.each(TRIALS)('kill -9 in $name ($crashAt)', (trial) => {
    let outcome: Outcome | undefined;

    it('the kill lands after the STATEs meant, the retry in a fresh store ends, and every line of both is a valid message', async () => {
      await inSyncWorkspace({ rpm: 100_000 }, async ({ sandbox, dir }) => {
        const prior = trial.refresh ? weekOld(reference.states) : undefined;
        const start = billedEntries(sandbox).length;
        const killed = await read(sandbox, dir, 'killed', {
          crashAt: trial.crashAt,
          ...(prior ? { state: prior } : {}),
        });
        expect(killed.signal, killed.stderr).toBe('SIGKILL');
        expect(lastStates(killed.messages).map((m) => m.state.stream.stream_descriptor.name)).toEqual(
          trial.statesBefore,
        );
        await sandbox.idle();
        const afterKill = billedEntries(sandbox).length;

        const resumed = await read(sandbox, dir, 'fresh', { state: lastStates(prior ?? [], killed.messages) });
        expect(resumed.code, resumed.stderr).toBe(0);
        await sandbox.idle();
        // The retry took the STATEs the killed read emitted: those streams are fresh, nothing of them is read again.
        const again = resumed.messages.filter((m) => m.type === 'RECORD').map((m) => m.record.stream as string);
        expect(trial.statesBefore.filter((table) => again.includes(table))).toEqual([]);
        const billed = billedEntries(sandbox).slice(start);
        const records = [...killed.messages, ...resumed.messages].filter((m) => m.type === 'RECORD');
        outcome = {
          killedBilled: afterKill - start,
          resumedBilled: start + billed.length - afterKill,
          billedTwice: extraBilling(reference.entries, billed).targets,
          notEmitted: paidButNotEmitted(billed, records),
        };
        const first = (list: string[]) => (list.length > 0 ? ` (${list.length}, e.g. ${list[0]})` : ' none');
        console.log(
          `[airbyte-kill] ${trial.crashAt}: ${outcome.killedBilled} items billed in the killed read, ${outcome.resumedBilled} in the retry; ` +
            `billed twice:${first(outcome.billedTwice)}; paid, never emitted:${first(outcome.notEmitted)}`,
        );
      });
    });

    (trial.knownBug ? it.fails : it)(
      `no item is billed twice and every record paid for is emitted${trial.knownBug ? ` (known bug: ${trial.knownBug})` : ''}`,
      ({ skip }) => {
        if (!outcome) return skip('the reads did not run to the end');
        expect(outcome.billedTwice, 'billed more often than an uninterrupted read').toEqual([]);
        expect(outcome.notEmitted, 'billed, and in no RECORD of either read').toEqual([]);
      },
    );
  });
});

/** `states` as a read a week later is fed them: the profiles fetched 8 days ago, due again (refresh_after 7d). */
function weekOld(states: readonly Message[]): Message[] {
  const weekAgo = new Date(Date.now() - 8 * 86_400_000).toISOString();
  return states.map((m) => {
    const copy = structuredClone(m);
    const blob = copy.state.stream.stream_state;
    if (blob.seedline_stream === 'profiles')
      for (const seed of blob.seeds) if (seed.fetched_at) seed.fetched_at = weekAgo;
    return copy;
  });
}
