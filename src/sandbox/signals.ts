import type { SandboxState } from './state.js';

/** Signals of every account (filled in by the Signals group). */
export class SignalStore {
  constructor(private readonly state: SandboxState) {}

  /** The `signals` block of the account resource. */
  summary(_accountId: string): { active: number; paused: number; estimated_monthly_credits: number } {
    void this.state;
    return { active: 0, paused: 0, estimated_monthly_credits: 0 };
  }
}
