import { renderTemplate } from '../manifest/template.js';
import { parseDuration } from '../util/duration.js';

/** The stream's `refresh_after` in ms, or undefined when it has none (its units always run). */
export function refreshAfterMs(template: unknown, options: Record<string, unknown>): number | undefined {
  if (template === undefined) return undefined;
  const rendered = renderTemplate(template, { options });
  return typeof rendered === 'string' && rendered !== '' ? parseDuration(rendered) : undefined;
}

/** Whether something done at `doneAt` is still fresh `now` under `refreshMs` (never without a refresh_after). */
export function isRecent(doneAt: Date | string | null | undefined, refreshMs: number | undefined, now: Date | number): boolean {
  if (!doneAt || refreshMs === undefined) return false;
  const at = typeof doneAt === 'string' ? Date.parse(doneAt) : doneAt.getTime();
  return (typeof now === 'number' ? now : now.getTime()) - at < refreshMs;
}
