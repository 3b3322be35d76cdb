import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load-config.js';
import { renderCharts } from '../report/report-charts.js';
import { readReportData } from '../report/report-data.js';
import { renderReportHtml } from '../report/report-html.js';
import { openSession } from './open-session.js';
import { runCommand, UsageError } from './run-command.js';

/** Options of `seedline report`. */
interface ReportOptions {
  config: string;
  out: string;
  days: string;
  wait: boolean;
}

/**
 * `seedline report`: one self-contained HTML page of spend, balance, freshness, failures,
 * Triggers and the last runs, read from the destination only (read-only, like `query`).
 */
export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description(
      'Write a self-contained HTML report of credits, balance, freshness, failures, Triggers and runs (reads the destination only)',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--out <file>', 'where to write the page', 'seedline-report.html')
    .option('--days <n>', 'days of history to show', '30')
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .action((opts: ReportOptions) =>
      runCommand(async () => {
        const days = Number(opts.days);
        if (!Number.isInteger(days) || days < 1 || days > 3660)
          throw new UsageError(`--days must be a whole number of days from 1 to 3660, not "${opts.days}"`);
        const started = Date.now();
        const html = await buildReport(opts.config, days, opts.wait);
        const out = resolve(opts.out);
        await writeFile(out, html);
        process.stdout.write(
          `report written to ${out} (${Math.round(html.length / 1024)} KB, ${((Date.now() - started) / 1000).toFixed(1)} s); open it in a browser\n`,
        );
      }),
    );
}

/** The report page of the config's destination. */
export async function buildReport(configPath: string, days: number, wait = false): Promise<string> {
  const session = await openSession(configPath, { mustExist: true, waitForLock: wait, offersWait: true });
  try {
    const data = await readReportData(session.destination, session.loaded.config, days);
    return renderReportHtml(data, await renderCharts(data), {
      configPath,
      destination: destinationLabel(session.loaded),
    });
  } finally {
    await session.close();
  }
}

/** Which destination, without anything secret: a DuckDB file's name, or a Postgres schema. */
function destinationLabel({ config }: LoadedConfig): string {
  const destination = config.destination as { type: string; path?: string; schema?: string };
  return destination.type === 'duckdb'
    ? `DuckDB ${destination.path ?? ''}`
    : `Postgres schema ${destination.schema ?? 'seedline'}`;
}
