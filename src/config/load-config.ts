import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from './config-errors.js';
import { SeedlineConfig } from './config-schema.js';
import { interpolate, type MissingVariable } from './interpolate.js';

/** A validated config and where it came from (relative seed files resolve against its folder). */
export interface LoadedConfig {
  /** The validated config, defaults applied. */
  config: SeedlineConfig;
  /** Absolute path of the config file. */
  path: string;
  /** Folder that relative paths in the config (seed files, DuckDB path) resolve against: the config file's own, so cron can run it from anywhere. */
  baseDir: string;
}

/** Reads, interpolates and validates a config file; throws `ConfigError` naming every bad key. */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch {
    throw new ConfigError(path, [`cannot read the file: check the path given to --config`]);
  }
  return { config: parseConfig(text, path, env), path: absolute, baseDir: dirname(absolute) };
}

/** Validates config text (YAML); throws `ConfigError` naming every bad key. */
export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): SeedlineConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(file, [`YAML syntax: ${(error as Error).message.split('\n')[0]}`]);
  }
  const missing: MissingVariable[] = [];
  const interpolated = interpolate(raw ?? {}, env, missing);
  const problems = missing.map((m) => `${m.key}: environment variable ${m.variable} is not set and has no default (\${${m.variable}:-default})`);
  const result = SeedlineConfig.safeParse(interpolated);
  if (!result.success) problems.push(...result.error.issues.map(describeIssue));
  if (problems.length > 0) throw new ConfigError(file, problems);
  return result.data as SeedlineConfig;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const key = issue.path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i ? '.' : ''}${String(part)}`)).join('') || '(root)';
  if (issue.code === 'unrecognized_keys') {
    return `${key ? `${key}: ` : ''}unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  }
  return `${key}: ${issue.message}`;
}
