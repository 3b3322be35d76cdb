/** A layout the charts are drawn for: the desktop column, or a phone's width. */
export interface Layout {
  /** Name of the layout, also the SVG's class in the page (`wide` or `narrow`). */
  name: 'wide' | 'narrow';
  /** Whole width of the SVG in px, axes and legend included (Vega's `fit-x` autosize). */
  width: number;
  /** Most tick labels a time axis gets. */
  maxTicks: number;
}

/** The desktop layout: 640 px across, legends on the right. */
export const WIDE: Layout = { name: 'wide', width: 640, maxTicks: 8 };
/** The phone layout: 340 px across (shown at 100% of a phone's column), legends below. */
export const NARROW: Layout = { name: 'narrow', width: 340, maxTicks: 4 };

export const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Room above the highest value, so a point's symbol and a limit's label stay inside the plot. */
const HEADROOM = 1.15;

/**
 * Scale and axis of a count (credits, seeds, postings): from zero to a round number above `max`,
 * whole-number ticks; `padding` px beyond both ends keeps a point's symbol at zero inside the plot.
 */
export function countScale(
  max: number,
  padding = 0,
): { scale: Record<string, unknown>; axis: Record<string, unknown> } {
  return {
    scale: {
      domain: [0, roundUp(Math.max(1, max) * HEADROOM)],
      nice: false,
      zero: true,
      ...(padding ? { padding } : {}),
    },
    axis: { tickMinStep: 1, format: ',d' },
  };
}

/**
 * Scale and axis of whole UTC days from `startMs` to `endMs` (both midnights): one label per
 * `step` days at the middle of the day, the last day always labelled.
 */
export function dayScale(
  startMs: number,
  endMs: number,
  layout: Layout,
): { scale: Record<string, unknown>; axis: Record<string, unknown> } {
  const days = Math.round((endMs - startMs) / DAY_MS);
  const step = Math.ceil(days / layout.maxTicks);
  const values: number[] = [];
  for (let day = days - 1; day >= 0; day -= step) values.unshift(startMs + (day + 0.5) * DAY_MS);
  return {
    scale: { type: 'utc', domain: [startMs, endMs], nice: false },
    // Over most of a year, the same day of two years could be two labels alike: the year tells them apart.
    axis: { values, format: days > 300 ? '%b %d %Y' : '%b %d', labelOverlap: true, labelAngle: 0 },
  };
}

/**
 * Scale and axis of moments (snapshots): by day when they span two days or more, else by hour,
 * the domain rounded out to whole units so every point sits inside it and no two labels read the same.
 */
export function instantScale(
  times: readonly number[],
  layout: Layout,
): { scale: Record<string, unknown>; axis: Record<string, unknown>; unit: 'day' | 'hour' } {
  const min = Math.min(...times);
  const max = Math.max(...times);
  const unit = max - min >= 2 * DAY_MS ? DAY_MS : HOUR_MS;
  const margin = Math.max(60_000, (max - min) * 0.03);
  const units = (max - min + 2 * margin) / unit;
  const steps = unit === DAY_MS ? [1, 2, 7, 14, 28, 91] : [1, 2, 3, 6, 12];
  const interval = (steps.find((s) => units / s <= layout.maxTicks) ?? steps[steps.length - 1]!) * unit;
  // Both ends on a tick (a whole number of steps from midnight UTC), the end labels flush inside the plot.
  const start = Math.floor((min - margin) / interval) * interval;
  const end = Math.max(start + interval, Math.ceil((max + margin) / interval) * interval);
  const values: number[] = [];
  for (let at = start; at <= end; at += interval) values.push(at);
  const oneDay = new Date(start).toISOString().slice(0, 10) === new Date(end - 1).toISOString().slice(0, 10);
  const format = unit === DAY_MS ? '%b %d' : oneDay ? '%H:%M' : '%b %d %H:%M';
  return {
    scale: { type: 'utc', domain: [start, end], nice: false },
    axis: { values, format, labelOverlap: true, labelAngle: 0, labelFlush: true },
    unit: unit === DAY_MS ? 'day' : 'hour',
  };
}

/** The UTC midnight that starts the day of `at`. */
export function dayStart(at: number): number {
  return Math.floor(at / DAY_MS) * DAY_MS;
}

/**
 * Outer padding of a band scale of `n` bands, so a few bands are as wide as they would be among
 * `slots`: a single run or day is not drawn as one bar across the whole plot.
 */
export function bandPadding(n: number, slots = 6): { paddingInner: number; paddingOuter: number } {
  return { paddingInner: 0.2, paddingOuter: Math.max(0.2, (slots - n) / 2) };
}

/** The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten that is at least `value`. */
function roundUp(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  const factor = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].find((f) => f * magnitude >= value - 1e-9) ?? 10;
  return factor * magnitude;
}
