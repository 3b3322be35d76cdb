import { resolve } from 'node:path';
import type { LoadedConfig } from '../config/load-config.js';
import { TableShaper } from '../normalize/table-shaper.js';
import { loadManifests, ManifestError } from '../manifest/load-manifests.js';
import { runId as newRunId } from '../util/run-id.js';
import { DeliverySpool } from '../webhooks/delivery-spool.js';
import { SpoolDrainer, type SpoolDrainerOptions } from '../webhooks/spool-drainer.js';

/**
 * The spool drainer of a config's `webhooks:` section (undefined without one): the spool folder
 * resolved against the config file, Triggers shaped by the triggers stream's own table definition,
 * rows tagged with a `serve_…` run id.
 */
export async function openSpoolDrainer(
  loaded: LoadedConfig,
  options: Pick<SpoolDrainerOptions, 'open'> & Partial<Omit<SpoolDrainerOptions, 'spool' | 'shaper' | 'runId'>>,
): Promise<SpoolDrainer | undefined> {
  const { config, baseDir } = loaded;
  if (!config.webhooks) return undefined;
  const manifest = (await loadManifests(config)).get('triggers');
  if (!manifest)
    throw new ManifestError(
      'streams/triggers.stream.yaml is missing: webhook deliveries load with its table definition',
    );
  const startedAt = new Date();
  const runId = newRunId('serve', startedAt);
  const shaper = TableShaper.of(manifest.table, {
    options: config.streams.triggers ?? {},
    run: { id: runId, started_at: startedAt.toISOString() },
  });
  const spool = new DeliverySpool(resolve(baseDir, config.webhooks.spool_dir));
  return new SpoolDrainer({ ...options, spool, shaper, runId });
}
