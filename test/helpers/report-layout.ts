import type { Page } from 'playwright-core';

/** A box on the screen, in CSS px. */
export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
  width: number;
  height: number;
}

/** What the browser test measures of one chart (`figure.chart`) of the report, as the page shows it. */
export interface ChartLayout {
  id: string;
  /** Points of the chart's data, and data marks of that type drawn (`g.mark-<type>.role-mark > *`). */
  points: number;
  marks: number;
  /** Rendered width of the SVG shown, and the content width of its section, in CSS px. */
  width: number;
  containerWidth: number;
  /** Smallest on-screen font size of the SVG's text: computed font size × the SVG's scale (rendered / viewBox width). */
  smallestFont: number;
  /** Data marks checked against the plot, and those whose box leaves it by more than 1 px. */
  marksChecked: number;
  outside: { mark: string; box: Box; plot: Box }[];
  /** Texts (labels, titles, legends) whose box leaves the SVG by more than 1 px: cut off on screen. */
  textsCut: string[];
  /** The chart's count axis and time axis (`x`, `y`), as the page declares them (`data-count-axis`, `data-time-axis`). */
  countAxis: string | null;
  timeAxis: string | null;
  /** Tick labels of the count axis and of the time axis; empty when the chart has no such axis. */
  countLabels: string[];
  timeLabels: string[];
  /** Widest bar over the plot's width, for bars on a time axis; null otherwise. */
  widestBar: number | null;
}

/** Words of the tables' headers and cells checked, and those the browser laid out over more than one line. */
export interface TableWords {
  checked: number;
  broken: { word: string; lines: number }[];
}

/** Measures every chart of the report page, at the viewport the page is shown at. */
export function measureCharts(page: Page): Promise<ChartLayout[]> {
  return page.evaluate(() => {
    const { document, getComputedStyle } = globalThis as unknown as ProbeGlobals;
    const box = (el: El): Box => {
      const r = el.getBoundingClientRect();
      return { left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height };
    };
    const px = (el: El, property: 'fontSize' | 'paddingLeft' | 'paddingRight') =>
      parseFloat(getComputedStyle(el)[property]);
    const axisLabels = (svg: El, axis: string | null) => {
      if (!axis) return [];
      const group = [...svg.querySelectorAll('g.role-axis')].find((g) =>
        (g.getAttribute('aria-label') ?? '').startsWith(`${axis.toUpperCase()}-axis`),
      );
      return group ? [...group.querySelectorAll('g.role-axis-label text')].map((t) => t.textContent ?? '') : [];
    };
    return [...document.querySelectorAll('figure.chart')].map((figure) => {
      const svg = [...figure.querySelectorAll('svg.marks')].find((s) => s.getBoundingClientRect().width > 0)!;
      const section = figure.closest('section')!;
      const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      const plot = box(svg.querySelector('g.mark-group.role-frame.root > g > path.background')!);
      const marks = [...svg.querySelectorAll('g.role-mark > *')];
      const outside = marks
        .map((mark) => ({ mark: mark.outerHTML.slice(0, 160), box: box(mark), plot }))
        .filter(
          ({ box: b }) =>
            b.left < plot.left - 1 || b.top < plot.top - 1 || b.right > plot.right + 1 || b.bottom > plot.bottom + 1,
        );
      const bars = [...svg.querySelectorAll('g.mark-rect.role-mark > path')].map((bar) => box(bar).width);
      const texts = [...svg.querySelectorAll('text')].filter((t) => (t.textContent ?? '').trim() !== '');
      const frame = box(svg);
      return {
        id: figure.id,
        points: Number(figure.getAttribute('data-points')),
        marks: svg.querySelectorAll(`g.mark-${figure.getAttribute('data-mark')}.role-mark > *`).length,
        width: svg.getBoundingClientRect().width,
        containerWidth: section.clientWidth - px(section, 'paddingLeft') - px(section, 'paddingRight'),
        smallestFont: Math.min(...texts.map((t) => px(t, 'fontSize') * scale)),
        marksChecked: marks.length,
        outside,
        textsCut: texts
          .filter((t) => {
            const b = box(t);
            return (
              b.left < frame.left - 1 ||
              b.top < frame.top - 1 ||
              b.right > frame.right + 1 ||
              b.bottom > frame.bottom + 1
            );
          })
          .map((t) => t.textContent ?? ''),
        countAxis: figure.getAttribute('data-count-axis'),
        timeAxis: figure.getAttribute('data-time-axis'),
        countLabels: axisLabels(svg, figure.getAttribute('data-count-axis')),
        timeLabels: axisLabels(svg, figure.getAttribute('data-time-axis')),
        widestBar: figure.getAttribute('data-time-axis') && bars.length > 0 ? Math.max(...bars) / plot.width : null,
      };
    });
  });
}

/** Finds every word of the tables' headers and cells that the browser broke over two lines or more. */
export function measureTableWords(page: Page): Promise<TableWords> {
  return page.evaluate(() => {
    const { document } = globalThis as unknown as ProbeGlobals;
    const result: TableWords = { checked: 0, broken: [] };
    for (const cell of document.querySelectorAll('th, td')) {
      // Text nodes, each on its own: a word never spans two of them in the report's cells.
      const walker = document.createTreeWalker(cell, 4);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const match of (node.textContent ?? '').matchAll(/\S+/g)) {
          const range = document.createRange();
          range.setStart(node, match.index);
          range.setEnd(node, match.index + match[0].length);
          const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
          result.checked++;
          if (tops.size > 1) result.broken.push({ word: match[0], lines: tops.size });
        }
      }
    }
    return result;
  });
}

/** Width of the page's content: more than the viewport's means the page scrolls sideways. */
export function pageScrollWidth(page: Page): Promise<number> {
  return page.evaluate(() => (globalThis as unknown as ProbeGlobals).document.documentElement.scrollWidth);
}

/** Distinct colours of a screenshot, counted in the page itself (a blank page has one or two). */
export async function distinctColours(page: Page, png: Buffer): Promise<number> {
  return page.evaluate(async (data) => {
    const { Image, document } = globalThis as unknown as ProbeGlobals;
    const image = new Image();
    image.src = `data:image/png;base64,${data}`;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    const context = canvas.getContext('2d')!;
    context.drawImage(image, 0, 0);
    const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < pixels.length && seen.size < 1000; i += 16)
      seen.add((pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!);
    return seen.size;
  }, png.toString('base64'));
}

/** The few DOM members the probes use (the tests are type-checked without the DOM library). */
interface El {
  id: string;
  textContent: string | null;
  outerHTML: string;
  clientWidth: number;
  viewBox: { baseVal: { width: number } };
  getAttribute(name: string): string | null;
  getBoundingClientRect(): Box;
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): ArrayLike<El> & Iterable<El>;
  closest(selector: string): El | null;
}

interface TextNode {
  textContent: string | null;
}

interface ProbeGlobals {
  getComputedStyle(el: El): { fontSize: string; paddingLeft: string; paddingRight: string };
  document: El & {
    documentElement: { scrollWidth: number };
    createTreeWalker(root: El, show: number): { nextNode(): TextNode | null };
    createRange(): {
      setStart(node: TextNode, offset: number): void;
      setEnd(node: TextNode, offset: number): void;
      getClientRects(): Iterable<Box>;
    };
    createElement(tag: 'canvas'): {
      width: number;
      height: number;
      getContext(kind: '2d'): {
        drawImage(image: unknown, x: number, y: number): void;
        getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
      } | null;
    };
  };
  Image: new () => { src: string; width: number; height: number; decode(): Promise<void> };
}
