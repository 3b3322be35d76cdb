import type { BatchCompletedEvent, SignalPausedEvent, SignalTestEvent } from '../../schemas/webhook.js';
import type { z } from 'zod';

/** Events other than Triggers: reported on stderr and recorded in `webhook_events`. */
export type NoticeEvent =
  z.infer<typeof BatchCompletedEvent> | z.infer<typeof SignalPausedEvent> | z.infer<typeof SignalTestEvent>;

const PAUSE_ADVICE: Record<string, string> = {
  insufficient_credits: 'the balance could not pay for a check: top up, then resume it',
  webhook_gone: 'its webhook answered 404/410: fix notify.webhook_url, then resume it',
  webhook_failing: 'its webhook deliveries kept failing: check this receiver, then resume it',
};

/** One line saying what an event means and what to do, without the body or any secret. */
export function eventNotice(event: NoticeEvent): string {
  switch (event.event) {
    case 'batch.completed':
      return `batch.completed: job ${event.job.job_id} is ${event.job.status} (${event.job.total} items); recorded in webhook_events; a job a stopped sync left unread is read next`;
    case 'signal.test':
      return `signal.test: test delivery for Signal ${event.signal_id} received (fields ${Object.keys(event.diff).join(', ') || 'none'}); recorded in webhook_events, not in triggers`;
    case 'signal.paused': {
      const reason = event.signal.paused_reason ?? 'unknown';
      const advice = PAUSE_ADVICE[reason] ?? 'resume it once the cause is fixed';
      return `warning: signal.paused: Signal ${event.signal.id} was paused by the service (reason: ${reason}): ${advice} (POST /v1/signals/${event.signal.id}/resume)`;
    }
  }
}
