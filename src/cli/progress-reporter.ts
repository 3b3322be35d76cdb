import cliProgress from 'cli-progress';
import type { Reporter, StreamOutcome } from '../engine/stream-context.js';
import { wrapForTerminal } from '../util/wrap-text.js';

/**
 * Reports a run: one progress bar per stream on a terminal (seeds done / total, credits, rate),
 * plain log lines otherwise (CI, pipes, cron).
 */
export function createReporter(stream: NodeJS.WriteStream = process.stderr): Reporter {
  return stream.isTTY ? new BarReporter(stream) : new LineReporter(stream);
}

class LineReporter implements Reporter {
  private readonly lastLogged = new Map<string, number>();
  private readonly totals = new Map<string, number>();

  constructor(private readonly out: NodeJS.WritableStream) {}

  streamStarted(stream: string, total: number): void {
    this.totals.set(stream, total);
    this.out.write(`[${stream}] started: ${total} to fetch\n`);
  }

  streamProgress(stream: string, progress: { done: number; credits: number }): void {
    // About ten lines per stream keeps CI and cron logs readable.
    const step = Math.max(1, Math.ceil((this.totals.get(stream) ?? 0) / 10));
    const last = this.lastLogged.get(stream) ?? 0;
    if (progress.done - last < step) return;
    this.lastLogged.set(stream, progress.done);
    this.out.write(`[${stream}] ${progress.done} done, ${progress.credits} credits\n`);
  }

  streamFinished(outcome: StreamOutcome): void {
    this.out.write(
      `[${outcome.stream}] ${outcome.status}: ${outcome.records} records, ${outcome.skipped} skipped, ${outcome.failed} failed, ${outcome.credits} credits\n`,
    );
  }

  notice(stream: string, message: string): void {
    this.out.write(`[${stream}] ${message}\n`);
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
