import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { packageRoot } from '../util/package-root.js';
import { UsageError } from './run-command.js';
import { DEFAULT_POSTGRES_URL, INIT_CONFIG_FILE, initFiles, type InitDestination } from './init-templates.js';

/** Options of `seedline init`, as commander gives them. */
export interface InitOptions {
  /** `duckdb` or `postgres`; asked on a terminal when absent. */
  destination?: string;
  /** The Postgres URL (implies `postgres`); asked on a terminal when Postgres is chosen without it. */
  postgresUrl?: string;
}

/** Where questions are asked: a terminal, or nothing (then every default is taken). */
export interface InitPrompt {
  ask(question: string, fallback: string): Promise<string>;
}

/**
 * Writes a starter project into `dir` (made when missing): a config that runs against the embedded
 * sandbox, seed CSVs and a `.env` example. Refuses before writing anything when one of them exists.
 * @returns the lines to print: what was written and the next commands.
 */
export async function initAction(dir: string, options: InitOptions, prompt = terminalPrompt()): Promise<string[]> {
  const folder = resolve(dir);
  const schema = join(packageRoot(), 'schemas', 'seedline.config.schema.json');
  const project = initFiles(
    await chooseDestination(options, prompt),
    existsSync(schema) ? schemaPathFrom(folder, schema) : undefined,
  );
  const taken = [...project.files.keys()].filter((name) => existsSync(join(folder, name)));
  if (taken.length > 0)
    throw new UsageError(
      `${shown(folder)} already has ${taken.join(', ')}: init never overwrites a file. Move them away, or run init in another folder (seedline init my-project)`,
    );
  for (const [name, text] of project.files) {
    await mkdir(dirname(join(folder, name)), { recursive: true });
    await writeFile(join(folder, name), text, { flag: 'wx' });
  }
  const config = shown(join(folder, INIT_CONFIG_FILE));
  return [
    `Wrote ${[...project.files.keys()].map((name) => shown(join(folder, name))).join(', ')}`,
    'It runs against the embedded sandbox: no account and no network needed. Next:',
    `  ${invocation()} plan --config ${config}`,
    `  ${invocation()} sync --config ${config} --sample-query`,
    `Then edit the seeds and streams in ${config}; for the real service, set api.base_url and SEEDLINE_API_KEY (see .env.example).`,
  ];
}

async function chooseDestination(options: InitOptions, prompt: InitPrompt | undefined): Promise<InitDestination> {
  let type = options.destination ?? (options.postgresUrl === undefined ? undefined : 'postgres');
  if (type === undefined)
    type = prompt === undefined ? 'duckdb' : (await prompt.ask('Warehouse, duckdb or postgres?', 'duckdb')).trim();
  if (type !== 'duckdb' && type !== 'postgres')
    throw new UsageError(`the warehouse must be duckdb or postgres, not "${type}"`);
  if (type === 'duckdb') {
    if (options.postgresUrl !== undefined)
      throw new UsageError('--postgres-url goes with --destination postgres: drop one of them');
    return { type };
  }
  const url =
    options.postgresUrl ??
    (prompt === undefined ? DEFAULT_POSTGRES_URL : (await prompt.ask('Postgres URL?', DEFAULT_POSTGRES_URL)).trim());
  if (!/^postgres(ql)?:\/\/[^/]/.test(url) || !URL.canParse(url))
    throw new UsageError('the Postgres URL must look like postgres://user@host:5432/database');
  return { type, url };
}

/** Questions on the terminal when both ends are one; otherwise none (scripts and CI take the defaults). */
function terminalPrompt(): InitPrompt | undefined {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
  return {
    async ask(question, fallback) {
      const lines = createInterface({ input: process.stdin, output: process.stdout });
      try {
        return (await lines.question(`${question} [${fallback}] `)) || fallback;
      } finally {
        lines.close();
      }
    },
  };
}

/** The schema's path for the config's first line: relative when both sit in one tree, else absolute. */
function schemaPathFrom(folder: string, schema: string): string {
  const path = relative(folder, schema);
  const upwards = path.split(sep).filter((part) => part === '..').length;
  return upwards > 2 ? schema : path.split(sep).join('/');
}

/** A path as the user would type it from here. */
function shown(path: string): string {
  const path_ = relative(process.cwd(), path);
  return path_ === '' ? '.' : path_.startsWith('..') ? path : path_;
}

/** How this seedline was started, so the printed commands run as they are (the bin, or node and the script). */
function invocation(): string {
  const script = process.argv[1] ?? 'seedline';
  if (basename(script) === 'seedline') return 'seedline';
  const path = shown(script);
  const runner = script.endsWith('.ts') ? 'npx tsx' : 'node';
  return `${runner} ${/^[\w./-]+$/.test(path) ? path : JSON.stringify(path)}`;
}
