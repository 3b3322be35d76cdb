import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Signal, SignalBulkBody } from '../../schemas/index.js';
import { ChunkJournal } from '../../src/signals/chunk-journal.js';
import {
  applySignalPlan,
  bulkTemplate,
  KEY_WINDOW_MS,
  replayChunks,
  type SignalSecret,
  type SignalsClient,
} from '../../src/signals/signal-apply.js';
import { diffSignals, type DesiredSignals } from '../../src/signals/signal-diff.js';

const desired = (count: number): DesiredSignals => ({
  tag: 't',
  namePrefix: 'seedline',
  settings: { interval: '7d', timezone: 'UTC', mode: 'field_change', fields: ['headline'], webhookUrl: null },
  targets: Array.from({ length: count }, (_, i) => ({ key: `p-${i}`, seed: `p-${i}` })),
});

/**
 * A client that creates every target (rejecting seeds starting with `bad`) and fails the operations named in `failing`;
 * `withoutTarget`: its Signals carry no `target`, only the bulk-created name `{name_prefix} — {url}` (the spec shows no more).
 */
function fakeClient(failing: string[] = [], withoutTarget = false) {
  const keys: string[] = [];
  const patches: { id: string; patch: unknown }[] = [];
  const live = new Map<string, Signal>();
  let n = 0;
  const fail = (operation: string) => {
    if (failing.includes(operation)) throw new Error(`${operation} refused`);
  };
  const client = {
    listSignals: async () => ({ data: [...live.values()], meta: { nextCursor: null } }),
    bulkCreateSignals: async (body: SignalBulkBody, options: { idempotencyKey?: string } = {}) => {
      fail('bulkCreateSignals');
      keys.push(options.idempotencyKey!);
      const rejected = body.targets
        .filter((t) => t.site_url.startsWith('bad'))
        .map((t) => ({ site_url: t.site_url, reason: 'invalid_url' }));
      const signals = body.targets
        .filter((t) => !t.site_url.startsWith('bad'))
        .map((t): Signal => {
          const url = `https://www.network.example/in/${t.site_url}`;
          const target = withoutTarget ? {} : { target: { type: 'profile' as const, site_url: url } };
          const signal = {
            id: `sig_${++n}`,
            name: `${body.template.name_prefix} — ${url}`,
            tags: ['t'],
            status: 'active',
            ...target,
            schedule: body.template.schedule,
            estimated_monthly_credits: 5,
          };
          live.set(signal.id, signal);
          return { ...signal, notify: { webhook_url: null, webhook_secret: `whsec_${n}` } };
        });
      return { data: { created: signals.length, rejected, estimated_monthly_credits: 0, signals }, meta: {} };
    },
    updateSignal: async (id: string, patch: unknown) => {
      fail('updateSignal');
      patches.push({ id, patch });
      return { data: { id, schedule: { interval: '7d' }, estimated_monthly_credits: 5 }, meta: {} };
    },
    deleteSignal: async (id: string) => {
      fail('deleteSignal');
      live.delete(id);
      return { data: { id, deleted: true as const }, meta: {} };
    },
  };
  return { client: client as unknown as SignalsClient, keys, live, patches };
}

describe('signals apply', () => {
  it('given a service whose Signals carry no target, when applied and diffed again, then each is matched by its name: created, its secret kept with its URL, and not created again', async () => {
    const fake = fakeClient([], true);
    const secrets: SignalSecret[] = [];
    const result = await applySignalPlan(fake.client, desired(3), diffSignals(desired(3), []), {
      onSecrets: async (s) => void secrets.push(...s),
    });
    expect(result.created.map((c) => c.key)).toEqual(['p-0', 'p-1', 'p-2']);
    expect(secrets.map((s) => s.site_url)).toEqual(
      ['p-0', 'p-1', 'p-2'].map((p) => `https://www.network.example/in/${p}`),
    );
    const again = diffSignals(desired(3), [...fake.live.values()]);
    // Matched (updated or unchanged: the fake keeps no criteria), none created again, pruned or unreadable.
    expect(again).toMatchObject({ create: [], prune: [], unreadable: [] });
    expect(again.update.length + again.unchanged.length).toBe(3);
  });

  it('given 2500 targets, when applied twice from scratch, then it sends three chunks of at most 1000 with the same keys each time', async () => {
    const first = fakeClient();
    const result = await applySignalPlan(first.client, desired(2500), diffSignals(desired(2500), []));
    expect(result.created).toHaveLength(2500);
    expect(first.keys).toHaveLength(3);
    const second = fakeClient();
    await applySignalPlan(second.client, desired(2500), diffSignals(desired(2500), []));
    expect(second.keys).toEqual(first.keys);
  });

  it('given created Signals with secrets and a rejected target, when applied, then secrets go only to onSecrets and the rejection names the seed', async () => {
    const { client } = fakeClient();
    const wanted: DesiredSignals = {
      ...desired(2),
      targets: [...desired(2).targets, { key: 'bad-one', seed: 'bad-one' }],
    };
    const received: SignalSecret[] = [];
    const result = await applySignalPlan(client, wanted, diffSignals(wanted, []), {
      onSecrets: async (s) => void received.push(...s),
    });
    expect(received.map((s) => s.webhook_secret)).toEqual(['whsec_1', 'whsec_2']);
    expect(result.secrets).toBe(2);
    expect(result.rejected).toEqual([{ seed: 'bad-one', reason: 'invalid_url' }]);
    expect(JSON.stringify(result)).not.toMatch(/whsec_/);
  });

  it('given failing PATCH and DELETE, when applied with prune, then each failure is recorded and the rest continues', async () => {
    const { client, live } = fakeClient(['updateSignal', 'deleteSignal']);
    const existing: Signal[] = [
      {
        id: 'sig_a',
        name: 'a',
        tags: ['t'],
        status: 'active',
        target: { type: 'profile', site_url: 'p-0' },
        schedule: { interval: '1d' },
        criteria: { mode: 'field_change', fields: ['headline'] },
        estimated_monthly_credits: 30,
      },
      {
        id: 'sig_b',
        name: 'b',
        tags: ['t'],
        status: 'active',
        target: { type: 'profile', site_url: 'gone' },
        schedule: { interval: '7d' },
        estimated_monthly_credits: 5,
      },
    ];
    const result = await applySignalPlan(client, desired(2), diffSignals(desired(2), existing), { prune: true });
    expect(result.created.map((c) => c.key)).toEqual(['p-1']);
    expect(result.failures.map((f) => [f.action, f.subject])).toEqual([
      ['update', 'sig_a'],
      ['delete', 'sig_b'],
    ]);
    expect(live.size).toBe(1);
  });

  it('given external_id and metadata templates, when targets are created, then each new Signal gets its own by one PATCH', async () => {
    const { client, patches } = fakeClient();
    const wanted: DesiredSignals = {
      ...desired(2),
      templates: { externalId: 'crm-{key}', metadata: { seed: '{seed}' } },
    };
    const result = await applySignalPlan(client, wanted, diffSignals(wanted, []));
    expect(result.failures).toEqual([]);
    expect(patches.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: 'sig_1', patch: { external_id: 'crm-p-0', metadata: { seed: 'p-0' } } },
      { id: 'sig_2', patch: { external_id: 'crm-p-1', metadata: { seed: 'p-1' } } },
    ]);
  });

  it('given an unwanted Signal and no prune, when applied, then it is counted as kept and not deleted', async () => {
    const { client } = fakeClient(['deleteSignal']);
    const existing: Signal[] = [
      {
        id: 'sig_b',
        name: 'b',
        tags: ['t'],
        status: 'active',
        target: { type: 'profile', site_url: 'gone' },
        schedule: { interval: '7d' },
        estimated_monthly_credits: 5,
      },
    ];
    const result = await applySignalPlan(client, desired(0), diffSignals(desired(0), existing));
    expect(result.keptUnwanted).toBe(1);
    expect(result.failures).toEqual([]);
  });

  describe('replaying a journaled chunk whose answer was lost', () => {
    const HOUR = 60 * 60 * 1000;
    const body = (...seeds: string[]): SignalBulkBody => ({
      template: bulkTemplate(desired(0)),
      targets: seeds.map((site_url) => ({ type: 'profile' as const, site_url })),
    });
    /** A fake whose account already holds `existing` (as an earlier, answered POST would have left it), and a journal with one chunk sent `ago` ms before now. */
    async function journaled(existing: string[], chunk: SignalBulkBody, ago: number) {
      const fake = fakeClient();
      if (existing.length > 0) await fake.client.bulkCreateSignals(body(...existing), { idempotencyKey: 'earlier' });
      fake.keys.length = 0;
      const journal = new ChunkJournal(
        join(await mkdtemp(join(tmpdir(), 'seedline-replay-')), 'secrets.jsonl.journal'),
      );
      const now = new Date();
      await journal.sending({ idempotencyKey: 'k1', body: chunk }, new Date(now.getTime() - ago));
      return { ...fake, journal, now };
    }
    const keep = async (_: SignalSecret[]) => undefined;

    it('given a chunk none of whose targets has a Signal, when replayed, then it is dropped without a call', async () => {
      const { client, keys, live, journal, now } = await journaled([], body('p-1', 'p-2'), HOUR);
      const result = await replayChunks(
        client,
        journal,
        { tag: 't', namePrefix: 'seedline', wanted: new Set(['p-1', 'p-2']) },
        keep,
        now,
      );
      expect(result).toEqual({ recovered: 0, dropped: 1, lostSecrets: [] });
      expect(keys).toEqual([]);
      expect(live.size).toBe(0);
      expect(await journal.pending()).toEqual([]);
    });

    it('given a created chunk whose key has expired, when replayed, then nothing is sent and its Signals are named as lost', async () => {
      const { client, keys, live, journal, now } = await journaled(
        ['p-1', 'p-2'],
        body('p-1', 'p-2'),
        KEY_WINDOW_MS + HOUR,
      );
      const result = await replayChunks(
        client,
        journal,
        { tag: 't', namePrefix: 'seedline', wanted: new Set(['p-1', 'p-2']) },
        keep,
        now,
      );
      expect(result.lostSecrets.sort()).toEqual([...live.keys()].sort());
      expect(result.recovered).toBe(0);
      expect(keys).toEqual([]);
    });

    it('given a created chunk one of whose targets was deleted and is no longer declared, when replayed, then nothing is sent', async () => {
      const { client, keys, live, journal, now } = await journaled(['p-1'], body('p-1', 'p-2'), HOUR);
      const result = await replayChunks(
        client,
        journal,
        { tag: 't', namePrefix: 'seedline', wanted: new Set(['p-1']) },
        keep,
        now,
      );
      expect(result.lostSecrets).toEqual([...live.keys()]);
      expect(keys).toEqual([]);
      expect(live.size).toBe(1);
    });

    it('given a created chunk within the key window, when replayed, then it is sent again under its key and its secrets kept', async () => {
      const { client, keys, journal, now } = await journaled(['p-1', 'p-2'], body('p-1', 'p-2'), HOUR);
      const kept: SignalSecret[] = [];
      const result = await replayChunks(
        client,
        journal,
        { tag: 't', namePrefix: 'seedline', wanted: new Set(['p-1', 'p-2']) },
        async (s) => void kept.push(...s),
        now,
      );
      expect(keys).toEqual(['k1']);
      expect(result.recovered).toBe(2);
      expect(kept).toHaveLength(2);
    });
  });
});
