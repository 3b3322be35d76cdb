import type { SandboxAccount } from './accounts.js';
import type { TargetRef } from './fixtures/canonical.js';
import type { TaskHandle } from './virtual-clock.js';

/** A Signal's target as sent. */
export type SignalTargetInput = { type: 'profile'; site_url: string } | { type: 'company_jobs'; company_url: string };

/** A Signal and everything the sandbox keeps about it. */
export interface SignalRecord {
  id: string;
  account: SandboxAccount;
  name: string;
  tags: string[];
  status: 'active' | 'paused';
  paused_reason: string | null;
  target: SignalTargetInput;
  ref: TargetRef;
  schedule: { interval: string; timezone: string };
  criteria: { mode: string; fields: string[] };
  webhookUrl: string | null;
  secret: string;
  external_id: string | null;
  metadata: Record<string, unknown> | null;
  created_at: string;
  nextCheckMs: number;
  checkNumber: number;
  snapshot: Record<string, unknown> | null;
  /** Trigger events in a row whose webhook retries ran out (a delivered event resets it). */
  failedEvents: number;
  deleted: boolean;
  task: TaskHandle | null;
}

/** A Trigger (docs/service-assumptions.md#triggers). */
export interface TriggerRecord {
  trigger_id: string;
  signal_id: string;
  check_number: number;
  checked_at: string;
  diff: Record<string, { before: unknown; after: unknown }>;
  criteria_matched: string[];
  target: SignalTargetInput;
  external_id?: string;
  metadata?: Record<string, unknown>;
  accountId: string;
}

/** One check attempt, with the attribution it had at check time. */
export interface UsageEntry {
  accountId: string;
  atMs: number;
  external_id: string | null;
  ok: boolean;
  matched: boolean;
  credits: number;
}

/** Result of one check (data of check-now). */
export interface CheckResult {
  signal_id: string;
  check_number: number;
  status: 'matched' | 'not_matched' | 'failed' | 'paused';
  matched: boolean;
  is_baseline: boolean;
  billed: boolean;
  credits_used: number;
  trigger_id: string | null;
  criteria_matched: string[];
  diff: Record<string, { before: unknown; after: unknown }>;
  error_type?: string;
  error_message?: string;
  webhook?: { status: string; attempts: number; delivery_id: string };
}

/** Fields of a create request after validation. */
export interface SignalInput {
  name: string;
  target: SignalTargetInput;
  schedule: { interval: string; timezone?: string | undefined };
  criteria: { mode: string; fields: string[] };
  notify?: { webhook_url: string } | undefined;
  tags?: string[] | undefined;
  external_id?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}
