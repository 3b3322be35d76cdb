import type { Destination } from '../../src/destinations/destination.js';
import { sha256 } from '../../src/util/stable-json.js';
import { seedKey } from '../../src/util/seed-keys.js';

/**
 * What a sync that stopped (or a container that went away) right after submitting a batch job
 * leaves: a job on the service enriching one profile, and the job and its seed recorded as
 * `submitted` in `recorder`'s ledgers. Returns the job's id.
 */
export async function recordSubmittedJob(
  recorder: Destination,
  service: { url: string; apiKey: string },
  profile: string,
  webhookUrl?: string,
): Promise<string> {
  const items = [{ operation: 'profiles.enrich', params: { url: profile }, ref: seedKey('profile', profile) }];
  const body = JSON.stringify({ items });
  const answer = await fetch(`${service.url}/v1/batch`, {
    method: 'POST',
    headers: { 'x-api-key': service.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ items, ...(webhookUrl ? { webhook_url: webhookUrl } : {}) }),
  });
  const jobId = ((await answer.json()) as { data: { job_id: string } }).data.job_id;
  await recorder.ensureSystemTables();
  const unit = await recorder.beginUnit('e2e_stopped_sync');
  await unit.saveBatches([
    {
      idempotencyKey: `e2e-stopped-sync-${jobId}`,
      stream: 'profiles',
      bodyHash: sha256(body),
      body,
      jobId,
      status: 'submitted',
      itemCount: 1,
    },
  ]);
  await unit.saveSeeds([{ stream: 'profiles', seedKey: items[0]!.ref, seed: profile, status: 'submitted', jobId }]);
  await unit.commit();
  return jobId;
}
