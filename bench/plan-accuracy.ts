/**
 * How close `seedline plan` comes to what a sync then bills: the demo config (config/demo.yaml)
 * against the embedded sandbox, with its optional streams uncommented, into a fresh DuckDB file.
 *
 *   npx tsx bench/plan-accuracy.ts
 *   node dist/bench/plan-accuracy.js   (compiled by `npm run bench`: it then runs the compiled CLI)
 *
 * Two cases, each in a directory of its own: `fresh` plans and syncs every stream at once (the
 * optional streams' parents are not loaded when the plan is made); `optional later` syncs the
 * demo as shipped first, then plans and syncs with the optional streams added. Per stream and in
 * all: the plan's worst case and expected credits, the credits the sync billed, and the expected
 * figure's deviation from the billed one. The sandbox is deterministic: one run per case is the figure.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { formatTable } from '../src/cli/format-table.js';

const ROOT = resolve(import.meta.dirname, '..');
const SOURCES = import.meta.filename.endsWith('.ts');
/** The package root the CLI runs from: config/ sits there, beside src/ or dist/src/. */
const PACKAGE = SOURCES ? ROOT : resolve(ROOT, '..');
// tsx is resolved from here: the CLI runs in a directory of its own, where `--import tsx` finds nothing.
const CLI = SOURCES
  ? ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/cli/main.ts')]
  : [join(ROOT, 'src/cli/main.js')];
const OPTIONAL = ['company_posts', 'post_comments', 'post_reactions', 'profile_recommendations', 'profile_interests'];

interface PlannedStream {
  stream: string;
  worst_case_credits: number;
  estimated_credits: number;
}

function seedline(dir: string, ...args: string[]): unknown {
  const run = spawnSync(process.execPath, [...CLI, ...args, '--json'], { cwd: dir, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`seedline ${args.join(' ')} exited ${run.status}: ${run.stderr.slice(-2000)}`);
  return JSON.parse(run.stdout);
}

/** The demo config written into `dir`, with the optional streams uncommented when `optional`. */
async function demoConfig(dir: string, optional: boolean, name: string): Promise<string> {
  let text = (await readFile(join(PACKAGE, 'config/demo.yaml'), 'utf8')).replace(
    /\.\.\/data\/demo\.duckdb/,
    'demo.duckdb',
  );
  if (optional) for (const stream of OPTIONAL) text = text.replace(`  # ${stream}:`, `  ${stream}:`);
  await writeFile(join(dir, name), text);
  return name;
}

function compare(planned: PlannedStream[], billed: Map<string, number>): Record<string, unknown>[] {
  const rows = planned.map((p) => ({
    stream: p.stream,
    worst: p.worst_case_credits,
    expected: p.estimated_credits,
    billed: billed.get(p.stream) ?? 0,
  }));
  const total = rows.reduce(
    (sum, r) => ({
      ...sum,
      worst: sum.worst + r.worst,
      expected: sum.expected + r.expected,
      billed: sum.billed + r.billed,
    }),
    {
      stream: 'all',
      worst: 0,
      expected: 0,
      billed: 0,
    },
  );
  return [...rows, total].map((r) => ({
    ...r,
    'expected vs billed':
      r.billed === 0 ? (r.expected === 0 ? '0' : 'n/a') : `${(((r.expected - r.billed) / r.billed) * 100).toFixed(1)}%`,
    'worst ≥ billed': r.worst >= r.billed ? 'yes' : 'NO',
  }));
}

async function measure(name: string, baseFirst: boolean): Promise<void> {
  const dir = await (async () => {
    const made = await mkdtemp(join(tmpdir(), 'seedline-bench-plan-'));
    await cp(join(PACKAGE, 'config/seeds'), join(made, 'seeds'), { recursive: true });
    return made;
  })();
  try {
    if (baseFirst) seedline(dir, 'sync', '-c', await demoConfig(dir, false, 'base.yaml'));
    const config = await demoConfig(dir, true, 'demo.yaml');
    const plan = seedline(dir, 'plan', '-c', config) as { streams: PlannedStream[] };
    const sync = seedline(dir, 'sync', '-c', config) as { streams: { stream: string; credits: number }[] };
    const billed = new Map(sync.streams.map((s) => [s.stream, s.credits]));
    process.stdout.write(`\n${name}\n${formatTable(compare(plan.streams, billed))}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await measure('fresh: every stream planned and synced at once', false);
await measure('optional later: the demo as shipped synced first, then the optional streams added', true);
