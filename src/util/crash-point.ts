/**
 * Named points where the crash-safety tests kill the process with SIGKILL (a real `kill -9`, no
 * cleanup), chosen by `SEEDLINE_TEST_CRASH_AT=<point>[:<nth>]`. Without the variable this does nothing.
 */
export type CrashPoint =
  | 'after-answer'
  | 'after-intent'
  | 'after-submit'
  | 'mid-results'
  | 'mid-page'
  | 'signals-after-answer'
  | 'signals-after-chunk';

const counts = new Map<CrashPoint, number>();

/** Kills the process here when the test variable names this point (on its nth visit, default 1st). */
export function crashPoint(point: CrashPoint): void {
  const wanted = process.env.SEEDLINE_TEST_CRASH_AT;
  if (!wanted) return;
  const [name, nth = '1'] = wanted.split(':');
  if (name !== point) return;
  const seen = (counts.get(point) ?? 0) + 1;
  counts.set(point, seen);
  if (seen === Number(nth)) process.kill(process.pid, 'SIGKILL');
}
