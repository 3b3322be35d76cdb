import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { NARROW, WIDE, type Layout } from './report-scales.js';

/** A chart of the report: its SVG at both layouts, and how many data marks it draws (one per point of its data). */
export interface Chart {
  /** Short name, also the figure's id in the page (`chart-<id>`). */
  id: string;
  /** What the chart shows, its caption and accessible name. */
  title: string;
  /** The chart drawn for the desktop column (`wide`) and for a phone's width (`narrow`); the page shows one. */
  svgs: { wide: string; narrow: string };
  /** The vega mark type of the data marks in the SVG (`rect`: bars and ticks, `symbol`: points). */
  mark: string;
  /** Points of the chart's data: the SVG draws one data mark for each. */
  points: number;
  /** The axis that counts things, ticked in whole numbers; none when no axis is a count. */
  countAxis?: 'x' | 'y' | undefined;
  /** The axis that is time, no two of its labels alike; none when no axis is time. */
  timeAxis?: 'x' | undefined;
}

/** What a chart is, before it is drawn: its Vega-Lite spec for a layout. */
export interface ChartDefinition extends Omit<Chart, 'svgs'> {
  /** The spec's data, marks and encodings for a layout (size, fonts and legends are added). */
  spec: (layout: Layout) => Record<string, unknown>;
}

const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** Draws a chart at both layouts. */
export async function renderChart(definition: ChartDefinition): Promise<Chart> {
  const { spec, ...chart } = definition;
  return {
    ...chart,
    svgs: {
      wide: await toSvg(definition.title, WIDE, spec(WIDE)),
      narrow: await toSvg(definition.title, NARROW, spec(NARROW)),
    },
  };
}

/** Compiles a Vega-Lite spec and renders it to SVG in Node (no browser, no canvas). */
async function toSvg(title: string, layout: Layout, spec: Record<string, unknown>): Promise<string> {
  const full = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: layout.width,
    height: layout === NARROW ? 200 : 220,
    autosize: { type: 'fit-x', contains: 'padding' },
    config: config(layout),
    ...spec,
  } as unknown as TopLevelSpec;
  const view = new vega.View(vega.parse(compile(full).spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    return svg
      .replace('<svg ', `<svg role="img" aria-label="${escapeAttribute(title)}" `)
      .replace('class="marks"', `class="marks ${layout.name}"`);
  } finally {
    view.finalize();
  }
}

/**
 * Fonts of at least 11 px at the size the SVG is drawn (a phone shows the narrow SVG at about
 * 105%), and legends below the plot at phone width, where a legend beside it would leave no plot
 * (one column: a legend starts at the plot's left edge, after the axis labels).
 */
function config(layout: Layout): Record<string, unknown> {
  const text = { labelFontSize: 11, titleFontSize: 12 };
  return {
    font: FONT,
    view: { stroke: null },
    axis: text,
    text: { fontSize: 11 },
    legend:
      layout === NARROW
        ? { ...text, orient: 'bottom', direction: 'horizontal', columns: 1, labelLimit: 160, symbolLimit: 30 }
        : text,
  };
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
