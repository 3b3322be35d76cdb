import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchCompletedEvent, BatchJob, envelope } from '../../schemas/index.js';
import { eventually, startHarness, startReceiver } from '../helpers/sandbox.js';
import type { SandboxHarness, WebhookReceiver } from '../helpers/sandbox.js';

/** Items are held until the test releases them by ref, so each resolution is an event the test waits for. */
const gates = new Map<string, () => void>();
const held = new Map<string, Promise<void>>();
const hold = (ref: string) => {
  if (!held.has(ref)) held.set(ref, new Promise<void>((resolve) => gates.set(ref, resolve)));
  return held.get(ref) as Promise<void>;
};

let h: SandboxHarness;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startReceiver();
  h = await startHarness({ seed: 3, batchItemConcurrency: 1, beforeBatchItem: ({ ref }) => hold(ref) });
});
afterAll(async () => {
  for (const release of gates.values()) release();
  await h.sandbox.close();
  await receiver.close();
});

const jobOf = async (id: string) => envelope(BatchJob).parse((await h.get(`/v1/batch/${id}`)).body).data;
const ms = (iso: string | null | undefined) => Date.parse(iso as string);

describe('estimated_completion of a batch job', () => {
  it('given held items, when they resolve one by one, then the estimate moves earlier and ends at completion, as batch.completed shows', async () => {
    const items = ['a', 'slow-b', 'c'].map((slug) => ({
      operation: 'profiles.enrich',
      params: { url: slug },
      ref: slug,
    }));
    const submitted = await h.post('/v1/batch', { items, webhook_url: receiver.url });
    const id = submitted.body.data.job_id as string;
    const start = await jobOf(id);
    expect(ms(start.estimated_completion)).toBeGreaterThan(ms(start.created_at));

    hold('a');
    gates.get('a')?.();
    const afterA = await eventually(async () => {
      const job = await jobOf(id);
      return job.resolved === 1 ? job : undefined;
    });
    expect(ms(afterA.estimated_completion)).toBeLessThan(ms(start.estimated_completion));

    // A slow-* target takes three times as long, so its resolution moves the estimate three times as far.
    hold('slow-b');
    gates.get('slow-b')?.();
    const afterB = await eventually(async () => {
      const job = await jobOf(id);
      return job.resolved === 2 ? job : undefined;
    });
    const stepA = ms(start.estimated_completion) - ms(afterA.estimated_completion);
    expect(ms(afterA.estimated_completion) - ms(afterB.estimated_completion)).toBe(3 * stepA);

    hold('c');
    gates.get('c')?.();
    await h.sandbox.idle();
    const done = await jobOf(id);
    expect(done.status).toBe('completed');
    expect(done.estimated_completion).toBe(done.completed_at);
    const event = BatchCompletedEvent.parse(receiver.received.find((r) => r.body.event === 'batch.completed')?.body);
    expect(event.job).toMatchObject({
      job_id: id,
      status: 'completed',
      total: 3,
      estimated_completion: done.estimated_completion,
    });
  });
});
