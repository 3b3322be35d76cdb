import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { appendFile, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { signWebhook } from '../../src/client/webhook-signature.js';
import { DeliverySpool } from '../../src/webhooks/delivery-spool.js';
import { WebhookReceiver } from '../../src/webhooks/webhook-receiver.js';
import { WebhookSecrets } from '../../src/webhooks/webhook-secrets.js';

const line = (id: string, secret: string) =>
  `${JSON.stringify({ id, site_url: `https://example.com/in/${id}`, webhook_secret: secret })}\n`;

async function secretsFile(...lines: string[]): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'seedline-secrets-'));
  const file = join(dir, 'signal-secrets.jsonl');
  await writeFile(file, lines.join(''), { mode: 0o600 });
  return { dir, file };
}

/** The EMFILE cases lower this process's open-file limit with util-linux prlimit (Linux, one process per test file). */
const canExhaustFileDescriptors = (() => {
  try {
    return process.platform === 'linux' && openFileLimits().length === 2;
  } catch {
    return false;
  }
})();

const testEvent = (signal: string) =>
  JSON.stringify({
    event: 'signal.test',
    test: true,
    signal_id: signal,
    diff: { headline: { before: 'a', after: 'b' } },
  });

/** This process's soft and hard limits of open files. */
function openFileLimits(): [string, string] {
  const [soft, hard] = execFileSync(
    'prlimit',
    [`--pid=${process.pid}`, '--nofile', '--raw', '--noheadings', '--output=SOFT,HARD'],
    { encoding: 'utf8' },
  )
    .trim()
    .split(/\s+/);
  return [soft!, hard!];
}

/**
 * Runs `during` while this process can open no more files (every open fails EMFILE, as under
 * load): its soft limit is lowered with prlimit and filled, then restored.
 */
async function withoutFreeFileDescriptors<T>(during: () => Promise<T>): Promise<T> {
  const [soft, hard] = openFileLimits();
  execFileSync('prlimit', [`--pid=${process.pid}`, `--nofile=${readdirSync('/proc/self/fd').length + 16}:${hard}`]);
  const held: number[] = [];
  try {
    for (;;) {
      try {
        held.push(openSync('/dev/null', 'r'));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EMFILE') break;
        throw error;
      }
    }
    return await during();
  } finally {
    held.forEach((fd) => closeSync(fd));
    execFileSync('prlimit', [`--pid=${process.pid}`, `--nofile=${soft}:${hard}`]);
  }
}

describe('webhook secrets file: reloads', () => {
  it("given a secrets file that just grew, when deliveries of an old and the new Signal ask at once, then each gets its Signal's secret", async () => {
    const { file } = await secretsFile(line('sig_a', 'whsec_a'));
    const secrets = new WebhookSecrets({ file, log: () => undefined });
    expect(await secrets.forBody(testEvent('sig_a'))).toEqual(['whsec_a']);
    await appendFile(file, line('sig_b', 'whsec_b'));
    const answers = await Promise.all([
      secrets.forBody(testEvent('sig_a')),
      secrets.forBody(testEvent('sig_b')),
      secrets.forBody(testEvent('sig_a')),
    ]);
    expect(answers).toEqual([['whsec_a'], ['whsec_b'], ['whsec_a']]);
  });

  it('given serve running when another Signal is applied, when four deliveries of a known Signal arrive together during the reload, then all four are answered 200', async () => {
    const { dir, file } = await secretsFile(line('sig_a', 'whsec_a'));
    const spool = new DeliverySpool(join(dir, 'spool'));
    const receiver = new WebhookReceiver({
      secrets: new WebhookSecrets({ file, log: () => undefined }),
      sink: { accept: (d) => spool.put(d) },
      log: () => undefined,
    });
    const url = await receiver.listen(0, '127.0.0.1');
    try {
      await appendFile(file, line('sig_b', 'whsec_b'));
      const statuses = await Promise.all(
        [1, 2, 3, 4].map(async (n) => {
          const body = JSON.stringify({
            event: 'signal.triggered',
            trigger: {
              trigger_id: `trg_${n}`,
              signal_id: 'sig_a',
              check_number: n,
              checked_at: '2026-01-01T00:00:00Z',
              diff: { headline: { before: 'a', after: 'b' } },
              criteria_matched: ['headline'],
            },
          });
          return (
            await fetch(url, { method: 'POST', headers: { 'x-service-signature': signWebhook('whsec_a', body) }, body })
          ).status;
        }),
      );
      expect(statuses).toEqual([200, 200, 200, 200]);
    } finally {
      await receiver.close();
    }
  });

  it.skipIf(!canExhaustFileDescriptors)(
    "given one read of the secrets file fails with EMFILE, when the next delivery comes and the file is unchanged, then it gets the Signal's secret",
    async () => {
      const { file } = await secretsFile(line('sig_a', 'whsec_a'));
      const secrets = new WebhookSecrets({ file, log: () => undefined });
      // That delivery is answered 503, and the service delivers it again later.
      await expect(withoutFreeFileDescriptors(() => secrets.forBody(testEvent('sig_a')))).rejects.toThrow(/EMFILE/);
      expect(await secrets.forBody(testEvent('sig_a'))).toEqual(['whsec_a']);
      expect(await secrets.current()).toEqual(['whsec_a']);
    },
  );

  it.skipIf(!canExhaustFileDescriptors)(
    'given the secrets file read once, when the reload of a changed file fails with EMFILE, then the next delivery reads the change and the earlier secrets still verify',
    async () => {
      const { file } = await secretsFile(line('sig_a', 'whsec_a'));
      const secrets = new WebhookSecrets({ file, log: () => undefined });
      expect(await secrets.current()).toEqual(['whsec_a']);
      await appendFile(file, line('sig_b', 'whsec_b'));
      await expect(withoutFreeFileDescriptors(() => secrets.forBody(testEvent('sig_b')))).rejects.toThrow(/EMFILE/);
      expect(await secrets.forBody(testEvent('sig_b'))).toEqual(['whsec_b']);
      expect(await secrets.forBody(testEvent('sig_a'))).toEqual(['whsec_a']);
    },
  );
});
