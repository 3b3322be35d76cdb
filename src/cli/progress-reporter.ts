import cliProgress from 'cli-progress';
import type { Reporter, StreamOutcome } from '../engine/stream-context.js';
import { log, logFormat } from '../util/log.js';
import { wrapForTerminal } from '../util/wrap-text.js';

/**
 * Reports a run: one progress bar per stream on a terminal (seeds done / total, credits, rate)
 * when lines are for people; log lines otherwise (CI, pipes, cron, `--log-format json`), with the
 * stream and its counts as fields.
 */
export function createReporter(stream: NodeJS.WriteStream = process.stderr): Reporter {
  return stream.isTTY && logFormat() === 'plain' ? new BarReporter(stream) : new LineReporter();
}

class LineReporter implements Reporter {
  private readonly lastLogged = new Map<string, number>();
  private readonly totals = new Map<string, number>();

  streamStarted(stream: string, total: number): void {
    this.totals.set(stream, total);
    log.info(`[${stream}] started: ${total} to fetch`, { stream, event: 'started', total });
  }

  streamProgress(stream: string, progress: { done: number; credits: number }): void {
    // About ten lines per stream keeps CI and cron logs readable.
    const step = Math.max(1, Math.ceil((this.totals.get(stream) ?? 0) / 10));
    const last = this.lastLogged.get(stream) ?? 0;
    if (progress.done - last < step) return;
    this.lastLogged.set(stream, progress.done);
    log.info(`[${stream}] ${progress.done} done, ${progress.credits} credits`, {
      stream,
      event: 'progress',
      ...progress,
    });
  }

  streamFinished(outcome: StreamOutcome): void {
    const { stream, status, records, skipped, failed, credits } = outcome;
    log.info(`[${stream}] ${status}: ${records} records, ${skipped} skipped, ${failed} failed, ${credits} credits`, {
      stream,
      event: 'finished',
      status,
      records,
      skipped,
      failed,
      credits,
    });
  }

  notice(stream: string, message: string): void {
    log.warn(`[${stream}] ${message}`, { stream, event: 'notice' });
  }
}

class BarReporter implements Reporter {
  private readonly bars: cliProgress.MultiBar;
  private readonly byStream = new Map<string, { bar: cliProgress.SingleBar; started: number }>();

  constructor(private readonly out: NodeJS.WriteStream) {
    this.bars = new cliProgress.MultiBar(
      {
        stream: out,
        format: ' {stream} [{bar}] {value}/{total} | {credits} credits | {rate}/s',
        hideCursor: true,
        clearOnComplete: false,
        stopOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
  }

  streamStarted(stream: string, total: number): void {
    const bar = this.bars.create(Math.max(total, 1), 0, { stream: stream.padEnd(14), credits: 0, rate: '0.0' });
    this.byStream.set(stream, { bar, started: Date.now() });
  }

  streamProgress(stream: string, progress: { done: number; credits: number }): void {
    const entry = this.byStream.get(stream);
    if (!entry) return;
    const seconds = Math.max((Date.now() - entry.started) / 1000, 0.001);
    entry.bar.update(progress.done, { credits: progress.credits, rate: (progress.done / seconds).toFixed(1) });
  }

  streamFinished(outcome: StreamOutcome): void {
    const entry = this.byStream.get(outcome.stream);
    entry?.bar.update(entry.bar.getTotal(), { credits: outcome.credits });
    if ([...this.byStream.values()].every((e) => e.bar.getProgress() >= 1)) {
      // stop() draws the bars but not the notices logged since the last redraw: draw them first.
      this.bars.update();
      this.bars.stop();
    }
  }

  notice(stream: string, message: string): void {
    // The bars turn the terminal's own wrapping off: a longer line would be cut at its width.
    this.bars.log(`${wrapForTerminal(`[${stream}] ${message}`, this.out)}\n`);
  }
}
