import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { LoadedConfig } from '../config/load-config.js';
import { renderCharts } from '../report/report-charts.js';
import { readReportData } from '../report/report-data.js';
import { renderReportHtml } from '../report/report-html.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { openSession } from './open-session.js';

/** Writes the report page of the config's destination to `out` and says where it is. */
export async function reportAction(opts: { config: string; out: string; days: number; wait: boolean }): Promise<void> {
  const started = Date.now();
  const html = await buildReport(opts.config, opts.days, opts.wait);
  const out = resolve(opts.out);
  await writeFile(out, html);
  process.stdout.write(
    `report written to ${out} (${Math.round(html.length / 1024)} KB, ${((Date.now() - started) / 1000).toFixed(1)} s); open it in a browser\n`,
  );
}

/** Per stream whose manifest can refresh on change, the Signal target type it watches. */
function changeTargets(manifests: Awaited<ReturnType<typeof loadManifests>>): Map<string, string> {
  const targets = new Map<string, string>();
  for (const [name, manifest] of manifests)
    if (manifest.type === 'batch' && manifest.refresh_on_change)
      targets.set(name, manifest.refresh_on_change.signal_target);
  return targets;
}

/** The report page of the config's destination. */
export async function buildReport(configPath: string, days: number, wait = false): Promise<string> {
  const session = await openSession(configPath, { mustExist: true, waitForLock: wait, offersWait: true });
  try {
    const data = await readReportData(
      session.destination,
      session.loaded.config,
      days,
      new Date(),
      changeTargets(await loadManifests(session.loaded.config)),
    );
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
