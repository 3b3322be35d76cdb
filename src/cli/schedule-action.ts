import { ScheduleGroup } from '../config/config-schema.js';
import { ConfigError } from '../config/config-errors.js';
import { loadConfig, type LoadedConfig } from '../config/load-config.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { LockWaitAbortedError } from '../destinations/destination-error.js';
import { toDate } from '../destinations/sql/system-tables.js';
import { selectStreams } from '../engine/pipeline.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { CronRunner, InvalidCronError } from '../scheduler/cron-runner.js';
import { runId as newRunId } from '../util/run-id.js';
import { log } from '../util/log.js';
import { sha256, stableJson } from '../util/stable-json.js';
import { keyFingerprint } from '../util/key-fingerprint.js';
import { primaryApiKey } from '../config/config-schema.js';
import type { MetricsAddress } from './listen-options.js';
import { startCommandMetrics, warehouseReader } from './metrics-server.js';
import { openSession, type Session } from './open-session.js';
import { UsageError } from './run-command.js';
import { countedRun, type SeedlineMetrics } from './seedline-metrics.js';
import { splitList } from './split-list.js';
import { stopOnSignals } from './stop-on-signals.js';
import { syncInSession } from './sync-action.js';

/** Options of `seedline schedule`. */
export interface ScheduleOptions {
  /** Config file path. */
  config: string;
  /** One-off schedule instead of the config's `schedule:` groups. Default: none. */
  cron?: string;
  /** IANA time zone of `--cron`. Default: `UTC`. */
  timezone: string;
  /** Streams of `--cron`, comma-separated. Default: every configured stream. */
  streams?: string;
  /** Run every group once at start as well. Default: false. */
  runNow: boolean;
  /** Serve Prometheus metrics at `/metrics` there. Default: none. */
  metrics?: MetricsAddress;
}

/**
 * Group name of a `--cron` schedule in `_seedline_runs`: `cli-` and a short hash of the expression,
 * time zone and sorted streams, so two different `--cron` schedules on one destination never take
 * each other's runs for their own ticks, and the same one keeps its name across restarts.
 */
export function cliGroupName(cron: string, timezone: string, streams: readonly string[]): string {
  return `cli-${sha256(stableJson({ cron: cron.trim().split(/\s+/).join(' '), timezone, streams: [...streams].sort() })).slice(0, 10)}`;
}

/** Runs the groups on their schedules until SIGTERM or Ctrl-C; checks the config, the streams and `--cron` first. */
export async function scheduleAction(opts: ScheduleOptions): Promise<number> {
  // Everything is checked before the first tick, so a bad config fails now, not hours later.
  const loaded = await loadConfig(opts.config);
  const groups = groupsOf(loaded, opts);
  await checkStreams(loaded, groups, opts.cron !== undefined);

  const metrics =
    opts.metrics && (await startCommandMetrics(opts.metrics, { readWarehouse: warehouseReader(opts.config) }));
  const counting = metrics
    ? { metrics: metrics.metrics, keyId: keyFingerprint(primaryApiKey(loaded.config)) }
    : undefined;
  const stop = stopOnSignals((signal) =>
    log.info(`${signal}: stopping; the run under way commits its page first (send it again to quit now)`),
  );
  const runners: CronRunner[] = [];
  // A caught-up tick yields only to a run started after the catch-up read the runs, by tick time.
  const catchUpReads = new Map<string, Date>();
  try {
    for (const [name, group] of groups) {
      const job = (tickAt: Date) =>
        runGroup(
          opts.config,
          name,
          group,
          tickAt,
          stop.signal,
          catchUpReads.get(`${name} ${tickAt.getTime()}`),
          counting,
        );
      runners.push(runnerOf(loaded, name, group, job, opts.cron !== undefined, stop.signal));
    }
    runners.forEach((runner) => runner.start());
    await Promise.all(
      runners.map((runner, i) => {
        const [name, group] = groups[i]!;
        if (opts.runNow) return runner.tick(new Date());
        return group.catch_up
          ? catchUp(opts.config, name, runner, stop.signal, (tickAt, readAt) =>
              catchUpReads.set(`${name} ${tickAt.getTime()}`, readAt),
            )
          : undefined;
      }),
    );
    if (!stop.signal.aborted)
      await new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
    return 0;
  } finally {
    // Also on a failure: ticking timers would otherwise keep the process alive.
    await Promise.all(runners.map((runner) => runner.stop()));
    await metrics?.close();
    stop.dispose();
    log.info('schedule stopped');
  }
}

/** A group's runner; a bad expression in the config is reported as a config error naming the group. */
function runnerOf(
  loaded: LoadedConfig,
  name: string,
  group: ScheduleGroup,
  job: (tickAt: Date) => Promise<void>,
  fromCli: boolean,
  signal: AbortSignal,
): CronRunner {
  try {
    return new CronRunner({ name, cron: group.cron, timezone: group.timezone, job, signal });
  } catch (error) {
    if (fromCli || !(error instanceof InvalidCronError)) throw error;
    throw new ConfigError(loaded.path, [`schedule.${name}.cron: ${error.message}`]);
  }
}

/** The groups to run: `--cron` as one group, else every group of `schedule:`. */
function groupsOf(loaded: LoadedConfig, opts: ScheduleOptions): [string, ScheduleGroup][] {
  if (opts.cron !== undefined) {
    checkTimeZone(opts.timezone);
    const streams = splitList(opts.streams) ?? [];
    return [
      [
        cliGroupName(opts.cron, opts.timezone, streams),
        { cron: opts.cron, streams, timezone: opts.timezone, catch_up: false },
      ],
    ];
  }
  if (opts.streams !== undefined)
    throw new UsageError('--streams goes with --cron; the streams of a `schedule:` group are listed in the config');
  const groups = Object.entries(loaded.config.schedule ?? {});
  if (groups.length === 0) {
    throw new ConfigError(loaded.path, [
      'schedule: missing: add groups such as `schedule: { hourly: { cron: "0 * * * *", streams: [profiles] } }`, or pass --cron',
    ]);
  }
  return groups;
}

// The config's own check of `schedule.<group>.timezone`, so `--timezone` accepts exactly the same zones.
const TimeZone = ScheduleGroup.shape.timezone;

/** Refuses a `--timezone` that is not an IANA zone now, instead of node-cron failing at the first tick or at shutdown. */
function checkTimeZone(zone: string): void {
  if (!TimeZone.safeParse(zone).success)
    throw new UsageError(`--timezone: "${zone}" is not an IANA time zone: give one such as UTC or Europe/Berlin`);
}

/** Every group's streams exist and are configured: `--streams` errors for `--cron`, config errors otherwise. */
async function checkStreams(
  loaded: LoadedConfig,
  groups: readonly [string, ScheduleGroup][],
  fromCli: boolean,
): Promise<void> {
  const manifests = await loadManifests(loaded.config);
  if (fromCli) {
    selectStreams({ config: loaded.config, manifests, only: groups[0]![1].streams });
    return;
  }
  const configured = loaded.config.streams as Record<string, unknown>;
  const problems = groups.flatMap(([name, group]) =>
    group.streams.flatMap((stream) => {
      if (!manifests.has(stream))
        return [`schedule.${name}.streams: unknown stream "${stream}" (known: ${[...manifests.keys()].join(', ')})`];
      return configured[stream] === undefined
        ? [`schedule.${name}.streams: stream "${stream}" is not configured under streams:`]
        : [];
    }),
  );
  if (problems.length > 0) throw new ConfigError(loaded.path, problems);
}

/** Runs that did the group's work: a catch-up does not count a run that stopped, failed or was killed. */
const COMPLETED = ['succeeded', 'partial'] as const;

/** Label of the scheduler on the destination lock, shown to a second writer. */
const LOCK_HOLDER = 'seedline schedule';

/**
 * Makes up a tick missed while no scheduler ran: when the group's last completed run (succeeded
 * or partial) started before its latest scheduled time (or it never completed and a tick passed
 * within the last year), that tick runs now, once however many were missed. Two processes
 * starting together pick the same tick, so only one of them runs it (runGroup's check).
 */
async function catchUp(
  config: string,
  name: string,
  runner: CronRunner,
  stop: AbortSignal,
  noteRead: (tickAt: Date, readAt: Date) => void,
): Promise<void> {
  let last: Date | null;
  let readAt: Date;
  try {
    // Under the lock: a DuckDB file opens in one process at a time. A stop request ends the wait.
    const session = await openSession(config, {
      lock: true,
      waitForLock: true,
      signal: stop,
      holder: `${LOCK_HOLDER} ${name}`,
    });
    try {
      readAt = new Date();
      last = await lastRunStart(session, name, COMPLETED);
    } finally {
      await session.close();
    }
  } catch (error) {
    if (error instanceof LockWaitAbortedError) return;
    // Like a failed tick: reported, and the schedule goes on.
    log.warn(`[${name}] catch-up skipped: ${(error as Error).message}`, { group: name });
    return;
  }
  if (stop.aborted) return;
  const missed = runner.lastTickSince(last);
  if (missed === null) {
    log.info(`[${name}] no tick missed since the last completed run (${last?.toISOString() ?? 'never'})`, {
      group: name,
    });
    return;
  }
  log.info(
    `[${name}] catching up the tick of ${missed.toISOString()} (last completed run: ${last?.toISOString() ?? 'never'})`,
    { group: name },
  );
  noteRead(missed, readAt);
  await runner.tick(missed);
}

/**
 * One tick of a group: takes the destination lock (waiting for another writer, until a stop
 * request), then runs the sync unless a run of the group (any status) started at or after the
 * tick's time, which is what another `seedline schedule` on the same destination does for the same
 * tick. A caught-up tick (its earlier run stopped or failed) yields only to a run started after
 * `readAt`, when the catch-up read the runs. A tick that fails before the sync records its run is recorded `failed`, so the other
 * process does not repeat it.
 */
async function runGroup(
  config: string,
  name: string,
  group: ScheduleGroup,
  tickAt: Date,
  stop: AbortSignal,
  readAt?: Date,
  counting?: { metrics: SeedlineMetrics; keyId: string },
): Promise<void> {
  if (stop.aborted) return;
  let session: Session;
  try {
    session = await openSession(config, {
      lock: true,
      waitForLock: true,
      signal: stop,
      holder: `${LOCK_HOLDER} ${name}`,
    });
  } catch (error) {
    if (error instanceof LockWaitAbortedError) {
      log.info(`[${name}] tick ${tickAt.toISOString()}: stopped while waiting for the destination lock; nothing ran`, {
        group: name,
      });
      return;
    }
    throw error;
  }
  const startedAt = new Date();
  try {
    if (stop.aborted) return;
    const last = await lastRunStart(session, name);
    if (last !== null && last.getTime() >= (readAt ?? tickAt).getTime()) {
      log.info(`[${name}] tick ${tickAt.toISOString()} already run (run started ${last.toISOString()}): skipped`, {
        group: name,
      });
      return;
    }
    log.info(`[${name}] tick ${tickAt.toISOString()}: sync of ${group.streams.join(', ') || 'every stream'}`, {
      group: name,
    });
    const result = await countedRun(counting?.metrics, counting?.keyId ?? '', (limiter) =>
      syncInSession(session, {
        config,
        streams: group.streams.join(',') || undefined,
        scheduleGroup: name,
        stop,
        ...(limiter ? { limiter } : {}),
      }),
    );
    log.info(`[${name}] run ${result.runId}: ${result.status}`, { group: name });
  } catch (error) {
    await recordFailedTick(session, name, startedAt, error as Error);
    throw error;
  } finally {
    await session.close();
  }
}

/** Records a tick that failed before its sync recorded a run (connect, account, seeds), so it counts as run. */
async function recordFailedTick(session: Session, name: string, startedAt: Date, error: Error): Promise<void> {
  try {
    const last = await lastRunStart(session, name);
    if (last !== null && last.getTime() >= startedAt.getTime() - 1000) return;
    const now = new Date();
    await session.destination.saveRun({
      runId: newRunId('run', startedAt),
      startedAt,
      finishedAt: now,
      status: 'failed',
      error: error.message,
      scheduleGroup: name,
    });
  } catch {
    // The destination itself is failing: the tick's own error is the one to report.
  }
}

/** When the group's latest run in `_seedline_runs` (of the given statuses, default any) started; null when none did. */
async function lastRunStart(session: Session, group: string, statuses?: readonly string[]): Promise<Date | null> {
  const { destination } = session;
  const table = `${quoteIdentifier(destination.schema, 'schema')}.${quoteIdentifier('_seedline_runs', 'table')}`;
  const byStatus = statuses === undefined ? '' : ` and status in (${statuses.map((_, i) => `$${i + 2}`).join(', ')})`;
  const [row] = await destination.query<{ last: unknown }>(
    `select max(started_at) as last from ${table} where schedule_group = $1${byStatus}`,
    [group, ...(statuses ?? [])],
  );
  return toDate(row?.last);
}
