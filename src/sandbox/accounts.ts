import { createHash, randomBytes } from 'node:crypto';

/** An account of the sandbox: one per API key. */
export interface SandboxAccount {
  /** `acct_…`, derived from a hash of the key. */
  id: string;
  /** `svc_live_*` keys are billed; `svc_test_*` keys spend nothing. */
  live: boolean;
  /** Credits left (test accounts keep the starting balance). */
  balance: number;
  /** Credits billed this month. */
  usedThisMonth: number;
  /** Account default webhook for Signals without `notify`. */
  defaultWebhookUrl: string | null;
  /** Endpoint of `signal.paused` events. */
  fallbackWebhookUrl: string | null;
  /** Account-level signing secret (batch and `signal.paused` events). */
  webhookSecret: string;
}

const KEY = /^svc_(test|live)_[A-Za-z0-9_-]+$/;

/** Accounts by key and by id, created on first use of a well-formed key. */
export class AccountStore {
  private readonly byKey = new Map<string, SandboxAccount>();
  private readonly byAccountId = new Map<string, SandboxAccount>();

  constructor(private readonly startingBalance: number) {}

  private readonly revoked = new Set<string>();

  /** Revokes a key: from now on it is answered 401 (a test of a key refused mid-run). */
  revoke(key: string): void {
    this.revoked.add(key);
  }

  /** The account of an API key, or null when the key is not a sandbox key or was revoked. */
  forKey(key: string): SandboxAccount | null {
    if (this.revoked.has(key)) return null;
    const known = this.byKey.get(key);
    if (known) return known;
    const match = KEY.exec(key);
    if (!match) return null;
    const account: SandboxAccount = {
      id: `acct_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`,
      live: match[1] === 'live',
      balance: this.startingBalance,
      usedThisMonth: 0,
      defaultWebhookUrl: null,
      fallbackWebhookUrl: null,
      webhookSecret: `whsec_${randomBytes(24).toString('hex')}`,
    };
    this.byKey.set(key, account);
    this.byAccountId.set(account.id, account);
    return account;
  }

  /** The account of an id (from a token). */
  byId(id: string): SandboxAccount | undefined {
    return this.byAccountId.get(id);
  }
}
