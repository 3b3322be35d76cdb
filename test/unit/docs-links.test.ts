import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** The README may not grow past this many lines: the rest belongs in docs/. */
const README_MAX_LINES = 200;

/** The Markdown files whose links are checked, relative to the repository's root. */
function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  const optional = ['examples/README.md'].filter((file) => existsSync(join(ROOT, file)));
  return ['README.md', ...docs, 'bench/README.md', ...optional];
}

/** The text outside fenced code blocks, line by line (a fenced line becomes empty, so line numbers hold). */
function proseLines(text: string): string[] {
  let fence: string | null = null;
  return text.split('\n').map((line) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && marker) {
      fence = marker[0]!.repeat(marker.length);
      return '';
    }
    if (fence !== null) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = null;
      return '';
    }
    return line;
  });
}

/** A line without its inline code spans (a `[x](y)` inside backticks is not a link). */
function withoutCode(line: string): string {
  return line.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length));
}

interface Link {
  line: number;
  text: string;
  target: string;
}

/** Inline links and images `[text](target "title")`, and reference definitions `[id]: target`. */
function linksOf(text: string): Link[] {
  const links: Link[] = [];
  proseLines(text).forEach((raw, index) => {
    const line = withoutCode(raw);
    for (const match of line.matchAll(/!?\[((?:[^[\]]|\[[^\]]*\])*)\]\(\s*(<[^>]*>|[^()\s]+)(?:\s+"[^"]*")?\s*\)/g))
      links.push({ line: index + 1, text: match[1]!, target: match[2]!.replace(/^<|>$/g, '') });
    const definition = /^\s{0,3}\[([^\]]+)\]:\s*(\S+)/.exec(line);
    if (definition) links.push({ line: index + 1, text: definition[1]!, target: definition[2]! });
  });
  return links;
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, each space a hyphen. */
function slugOf(heading: string): string {
  return heading
    .replace(/!?\[((?:[^[\]]|\[[^\]]*\])*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown file offers: its ATX headings' slugs (repeats numbered as GitHub does) and HTML ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = slugOf(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  }
  return anchors;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(path: string): Set<string> {
  let anchors = anchorCache.get(path);
  if (!anchors) anchorCache.set(path, (anchors = anchorsOf(readFileSync(path, 'utf8'))));
  return anchors;
}

/** Why `target`, linked from the Markdown file at `from`, leads nowhere; null when it resolves. */
function problemOf(from: string, target: string): string | null {
  if (/^(https?:|mailto:)/i.test(target)) return null;
  const hash = target.indexOf('#');
  const pathPart = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
  const file = pathPart === '' ? from : resolve(dirname(from), decodeURIComponent(pathPart));
  if (!existsSync(file)) return `no file ${relative(ROOT, file)}`;
  if (anchor === null) return null;
  if (!statSync(file).isFile() || !file.endsWith('.md')) return `an anchor (#${anchor}) on a file that is not Markdown`;
  if (!anchorsOfFile(file).has(anchor)) return `no heading in ${relative(ROOT, file)} has the anchor #${anchor}`;
  return null;
}

/** Every `src/**\/*.ts` file. */
function sourceFiles(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('the README and docs/ links', () => {
  it('given every Markdown page, when its relative links and anchors are followed, then each leads to a file and a heading', () => {
    const problems = markdownFiles().flatMap((file) =>
      linksOf(readFileSync(join(ROOT, file), 'utf8')).flatMap(({ line, text, target }) => {
        const problem = problemOf(join(ROOT, file), target);
        return problem === null ? [] : [`${file}:${line}: [${text}](${target}): ${problem}`];
      }),
    );
    expect(problems, `broken links:\n${problems.join('\n')}`).toEqual([]);
  });

  it('given the README, when its lines are counted, then there are at most 200', () => {
    const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
    expect(
      lines,
      `README.md has ${lines} lines, more than ${README_MAX_LINES}: move the detail to a page in docs/`,
    ).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('given the pages in docs/, when the README is read, then it links to each of them', () => {
    const linked = new Set(
      linksOf(readFileSync(join(ROOT, 'README.md'), 'utf8')).map(({ target }) => target.split('#')[0]),
    );
    const missing = markdownFiles()
      .filter((file) => file.startsWith('docs/'))
      .filter((file) => !linked.has(file));
    expect(missing, `README.md links to no docs page named here: ${missing.join(', ')}`).toEqual([]);
  });

  it('given a comment in src/ pointing at a docs page, when followed, then the page and its heading exist', () => {
    const problems = sourceFiles().flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .flatMap((line, index) =>
          [...line.matchAll(/\bdocs\/[\w-]+\.md(?:#[\w-]+)?/g)].flatMap(([target]) => {
            const problem = problemOf(join(ROOT, 'README.md'), target);
            return problem === null ? [] : [`${relative(ROOT, path)}:${index + 1}: ${target}: ${problem}`];
          }),
        ),
    );
    expect(problems, `broken pointers into docs/:\n${problems.join('\n')}`).toEqual([]);
  });

  it('given headings and links written in Markdown, when parsed, then anchors follow GitHub and code is not read as a link', () => {
    expect(slugOf('Freshness (`refresh_after`): a second run is free')).toBe(
      'freshness-refresh_after-a-second-run-is-free',
    );
    expect(slugOf('Locks and `--wait`')).toBe('locks-and---wait');
    expect(slugOf("Where DuckDB's memory went, and what took it off (2026-11-26, later)")).toBe(
      'where-duckdbs-memory-went-and-what-took-it-off-2026-11-26-later',
    );
    expect([...anchorsOf('# A\n## Figures\n```sh\n# not a heading\n```\n### Figures\n')]).toEqual([
      'a',
      'figures',
      'figures-1',
    ]);
    const links = linksOf('See [the page](docs/a.md#b) and `[not](a link)`.\n```\n[nor](this)\n```\n[ref]: ../x.md\n');
    expect(links.map((l) => l.target)).toEqual(['docs/a.md#b', '../x.md']);
    expect(problemOf(join(ROOT, 'README.md'), 'https://example.com/missing')).toBeNull();
    expect(problemOf(join(ROOT, 'README.md'), 'docs/no-such-page.md')).toBe('no file docs/no-such-page.md');
  });
});
