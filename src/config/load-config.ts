import { readFile } from 'node:fs/promises';
import { parseEnv } from 'node:util';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError, keyOf } from './config-errors.js';
import { SeedlineConfig, seedlineConfigFor } from './config-schema.js';
import { ManifestError, manifestsSync } from '../manifest/load-manifests.js';
import { requestProblems } from './stream-checks.js';
import { interpolate, typeLonePlaceholder, type Interpolated, type TypedKind } from './interpolate.js';
import { missingSeedProblems, unusedSeedWarnings } from './stream-seeds.js';
import { closestKey } from './did-you-mean.js';
import { logLine, registerSecrets } from '../util/log.js';

/** A validated config and where it came from (relative seed files resolve against its folder). */
export interface LoadedConfig {
  /** The validated config, defaults applied. */
  config: SeedlineConfig;
  /** Absolute path of the config file. */
  path: string;
  /** Folder that relative paths in the config (seed files, DuckDB path) resolve against: the config file's own, so cron can run it from anywhere. */
  baseDir: string;
}

/** Where one-line config warnings go (a valid config that probably does not do what was meant). */
export type ConfigWarn = (line: string) => void;

// Once per process: schedule and serve load the config again for every run.
const warned = new Set<string>();
const toLog: ConfigWarn = (line) => {
  if (!warned.has(line)) logLine(line);
  warned.add(line);
};

/**
 * Reads, interpolates and validates a config file, and renders each stream's requests from it to
 * check them against what the service takes; throws `ConfigError` naming every bad key.
 * @param warn where warnings go (seeds no stream reads). Default: the log.
 */
export async function loadConfig(
  path: string,
  env: NodeJS.ProcessEnv = process.env,
  warn: ConfigWarn = toLog,
): Promise<LoadedConfig> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch {
    throw new ConfigError(path, [`cannot read the file: check the path given to --config`]);
  }
  const config = parseConfig(text, path, { ...(await dotEnvBeside(absolute, path)), ...env }, warn);
  const refused = await requestProblems(config, manifestsSync(config));
  if (refused.length > 0) throw new ConfigError(path, refused);
  return { config, path: absolute, baseDir: dirname(absolute) };
}

/**
 * The variables of a `.env` file in the config's folder (none when there is no such file): they
 * fill `${VAR}` placeholders the environment leaves unset, so a key need not be exported by hand.
 */
async function dotEnvBeside(configPath: string, shownPath: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(resolve(dirname(configPath), '.env'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError(shownPath, [`cannot read the .env file beside it: check its permissions`]);
  }
  return parseEnv(text) as Record<string, string>;
}

/**
 * Validates config text (YAML); throws `ConfigError` naming every bad key.
 * @param warn where warnings go (seeds no stream reads). Default: nowhere.
 */
export function parseConfig(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  warn: ConfigWarn = () => {},
): SeedlineConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(file, [yamlSyntaxProblem(text, error as Error & { linePos?: { line: number }[] })]);
  }
  const interpolated = interpolate(raw ?? {}, env);
  const problems = interpolated.missing.map(
    (m) => `${m.key}: environment variable ${m.variable} is not set and has no default (\${${m.variable}:-default})`,
  );
  const schema = configSchemaOf(interpolated, file);
  const result = validate(schema, interpolated);
  if (result.success) {
    inWrittenOrder(result.data, interpolated.value);
    problems.push(...missingSeedProblems(result.data, manifestsSync(result.data)));
  } else problems.push(...result.error.issues.flatMap((issue) => describeIssue(schema, issue)));
  if (problems.length > 0 || !result.success) throw new ConfigError(file, problems);
  registerSecrets(secretsOf(result.data));
  for (const line of unusedSeedWarnings(result.data, manifestsSync(result.data))) warn(line);
  return result.data;
}

/** Streams run in the order the config writes them (each after those it reads): validation gives the schema's order. */
function inWrittenOrder(config: SeedlineConfig, raw: unknown): void {
  const written = Object.keys((raw as { streams?: Record<string, unknown> }).streams ?? {});
  config.streams = Object.fromEntries(
    written.filter((name) => name in config.streams).map((name) => [name, config.streams[name]]),
  );
}

/** The config's secret values, so no log line shows them: the API key, webhook secrets, a Postgres password. */
function secretsOf(config: SeedlineConfig): string[] {
  const destination = config.destination as { url?: string };
  let password: string | undefined;
  try {
    password =
      destination.url === undefined ? undefined : decodeURIComponent(new URL(destination.url).password) || undefined;
  } catch {
    password = undefined;
  }
  return [
    ...(config.api.api_key ? [config.api.api_key] : []),
    ...(config.api.keys ?? []).map((k) => k.api_key),
    ...(config.webhooks?.secrets ?? []),
    ...(password ? [password] : []),
  ];
}

/**
 * The schema the config is checked against: with the streams of its `streams_dir` (made absolute,
 * against the config file's folder) besides the built-in ones.
 */
function configSchemaOf(interpolated: Interpolated, file: string): typeof SeedlineConfig {
  const value = interpolated.value as { streams_dir?: unknown } | null;
  if (value === null || typeof value !== 'object' || typeof value.streams_dir !== 'string' || value.streams_dir === '')
    return SeedlineConfig;
  const dir = resolve(dirname(resolve(file)), value.streams_dir.replace(/^~(?=\/|$)/, homedir()));
  value.streams_dir = dir;
  try {
    return seedlineConfigFor(manifestsSync(dir));
  } catch (error) {
    if (error instanceof ManifestError) throw new ConfigError(file, [`streams_dir: ${error.message}`]);
    throw error;
  }
}

/** Validates; where a number or true/false key holds a lone `${VAR}`, reads its text as one and validates again. */
function validate(schema: typeof SeedlineConfig, interpolated: Interpolated) {
  const first = schema.safeParse(interpolated.value);
  if (first.success) return first;
  let retyped = false;
  for (const issue of first.error.issues) {
    if (issue.code === 'invalid_type' && (issue.expected === 'number' || issue.expected === 'boolean')) {
      retyped = typeLonePlaceholder(interpolated, issue.path, issue.expected as TypedKind) || retyped;
    }
  }
  return retyped ? schema.safeParse(interpolated.value) : first;
}

/** `"refesh_after" (did you mean "refresh_after"?)`, or the quoted key alone when no known key is close. */
function withSuggestion(schema: typeof SeedlineConfig, path: readonly PropertyKey[], unknown: string): string {
  const known = closestKey(schema, path, unknown);
  return known ? `"${unknown}" (did you mean "${known}"?)` : `"${unknown}"`;
}

/** One issue as `key: message` lines; unions and record keys report what is wrong inside them. */
function describeIssue(schema: typeof SeedlineConfig, issue: z.core.$ZodIssue): string[] {
  const key = keyOf(issue.path);
  if (issue.code === 'unrecognized_keys')
    return [
      `${key}: unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => withSuggestion(schema, issue.path, k)).join(', ')}`,
    ];
  if (issue.code === 'invalid_key') return issue.issues.map((inner) => `${key}: ${inner.message}`);
  if (issue.code === 'invalid_union') return describeUnion(schema, issue);
  return [`${key}: ${issue.message}`];
}

/**
 * The issues of the one union option the value fits best (it has an issue below its root, and the
 * fewest); the union's own message, which lists the forms, when none or several fit as well.
 */
function describeUnion(schema: typeof SeedlineConfig, issue: z.core.$ZodIssueInvalidUnion): string[] {
  const fitting = unionOptions(issue).filter((option) => option.some((inner) => inner.path.length > 0));
  const fewest = Math.min(...fitting.map((option) => option.length));
  const best = fitting.filter((option) => option.length === fewest);
  if (best.length !== 1) return [`${keyOf(issue.path)}: ${issue.message}`];
  return best[0]!.flatMap((inner) => describeIssue(schema, { ...inner, path: [...issue.path, ...inner.path] }));
}

/** A union's options, a nested union's (`signals.targets` holds `seeds.*`'s) counted as the outer one's. */
function unionOptions(issue: z.core.$ZodIssueInvalidUnion): z.core.$ZodIssue[][] {
  return issue.errors.flatMap((option) => {
    const only = option.length === 1 ? option[0]! : undefined;
    return only?.code === 'invalid_union' && only.path.length === 0 ? unionOptions(only) : [option];
  });
}

/**
 * A YAML syntax error in one line; with a hint when that line holds an unquoted `${VAR}` inside
 * `{ … }` or `[ … ]`, where YAML reads its `{` as the start of a mapping. The line's text is
 * never echoed (it may hold a secret).
 */
function yamlSyntaxProblem(text: string, error: Error & { linePos?: { line: number }[] }): string {
  const problem = `YAML syntax: ${error.message.split('\n')[0]}`;
  const line = error.linePos?.[0]?.line;
  const source = line === undefined ? '' : (text.split('\n')[line - 1] ?? '');
  return /[{[][^'"]*\$\{/.test(source) && !/["']\$\{/.test(source)
    ? `${problem}. A \${VAR} inside { … } or [ … ] must be quoted: key: "\${VAR}" (a number or true/false written so is still read as one)`
    : problem;
}
