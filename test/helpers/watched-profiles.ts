import { expect } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';

/** Creates one daily profile Signal per URL on the sandbox (key `key`), then runs their baseline checks. */
export async function watchProfiles(
  sandbox: Sandbox,
  key: string,
  urls: readonly string[],
  fields = ['headline', 'position', 'company', 'location'],
): Promise<void> {
  for (const url of urls) {
    const created = await fetch(`${sandbox.url}/v1/signals`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `watch ${url}`,
        target: { type: 'profile', site_url: url },
        schedule: { interval: '1d' },
        criteria: { mode: 'field_change', fields },
      }),
    });
    expect(created.status).toBe(201);
  }
  await sandbox.clock.advance(1000);
}
