import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { StreamManifest } from './manifest-schema.js';
import { OptionSchemaError } from './option-schema.js';
import { streamOptionsSchema } from './stream-options.js';
import { defineSchema, isSchemaName, schemaRegistry } from './schema-registry.js';
import { ManifestError } from './manifest-error.js';
import { templateProblems } from './template-scopes.js';
import { packageRoot } from '../util/package-root.js';

export { ManifestError } from './manifest-error.js';

/** The folder of the built-in stream manifests. */
export const BUILTIN_STREAMS_DIR = join(packageRoot(), 'streams');

/** Stream manifests by name. */
export type Manifests = Map<string, StreamManifest>;

/** What names the user's manifest folder: a config (`streams_dir`, absolute once loaded) or the folder itself. */
export type ManifestSource = string | { streams_dir?: string | undefined } | undefined;

const loaded = new Map<string, Manifests>();

/**
 * The built-in stream manifests, and those of the user's folder (`streams_dir`) when given: each
 * `<name>.stream.yaml`, `$ref` nodes resolved against `_definitions.yaml` (the folder's own, over
 * the built-in one), validated against the manifest language; a user stream may not take a
 * built-in stream's name. Errors name the file, line and key. Each folder is read once.
 */
export async function loadManifests(source?: ManifestSource): Promise<Manifests> {
  return manifestsSync(source);
}

/** {@link loadManifests}, synchronously (the config is validated against the streams' options as it loads). */
export function manifestsSync(source?: ManifestSource): Manifests {
  const dir = typeof source === 'string' ? source : source?.streams_dir;
  const builtIn = readFolder(BUILTIN_STREAMS_DIR, {});
  if (dir === undefined || dir === BUILTIN_STREAMS_DIR) return new Map(builtIn);
  const user = readFolder(dir, readDefinitions(BUILTIN_STREAMS_DIR));
  for (const name of user.keys()) {
    if (builtIn.has(name))
      throw new ManifestError(
        `${join(dir, `${name}.stream.yaml`)}: a built-in stream is already named "${name}"; give yours another name (and file name)`,
      );
  }
  return new Map([...builtIn, ...user]);
}

function readFolder(dir: string, inherited: Record<string, unknown>): Manifests {
  const cached = loaded.get(dir);
  if (cached) return cached;
  if (!existsSync(dir))
    throw new ManifestError(
      `${dir}: no such folder (streams_dir names the folder of your *.stream.yaml files, relative to the config file)`,
    );
  const definitions = { ...inherited, ...readDefinitions(dir) };
  const manifests: Manifests = new Map();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.stream.yaml'))
    .sort()) {
    const manifest = readManifest(dir, file, definitions);
    manifests.set(manifest.name, manifest);
  }
  loaded.set(dir, manifests);
  return manifests;
}

function readDefinitions(dir: string): Record<string, unknown> {
  const path = join(dir, '_definitions.yaml');
  if (!existsSync(path)) return {};
  const { doc } = parseYamlFile(path);
  return (doc.toJS() ?? {}) as Record<string, unknown>;
}

function readManifest(dir: string, file: string, definitions: Record<string, unknown>): StreamManifest {
  const path = join(dir, file);
  const { doc, lines } = parseYamlFile(path);
  const at = (keys: readonly PropertyKey[]) => `${path}:${lineOf(doc, lines, keys)}`;
  const raw = resolveRefs(doc.toJS(), definitions, path);
  const result = StreamManifest.safeParse(raw);
  if (!result.success)
    throw new ManifestError(
      result.error.issues.map((issue) => `${at(issue.path)}: ${keyOf(issue.path)}: ${issue.message}`).join('\n'),
    );
  const manifest = result.data;
  const name = file.replace(/\.stream\.yaml$/, '');
  if (manifest.name !== name)
    throw new ManifestError(`${at(['name'])}: name "${manifest.name}" must equal the file name "${name}"`);
  const problems = templateProblems(manifest);
  if (problems.length > 0)
    throw new ManifestError(
      problems.map((problem) => `${at(problem.keys)}: ${keyOf(problem.keys)}: ${problem.message}`).join('\n'),
    );
  try {
    streamOptionsSchema(manifest);
  } catch (error) {
    if (!(error instanceof OptionSchemaError)) throw error;
    throw new ManifestError(`${at(error.at.split('.'))}: ${error.message}`);
  }
  for (const [source, declared] of Object.entries(manifest.seeds))
    if (declared.entries !== undefined && !isSchemaName(declared.entries))
      throw new ManifestError(
        `${at(['seeds', source, 'entries'])}: seeds.${source}.entries: unknown record schema "${declared.entries}" (known: ${Object.keys(schemaRegistry).join(', ')})`,
      );
  if (typeof manifest.table.schema !== 'string')
    manifest.table.schema = recordSchemaFile(dir, manifest.table.schema.file, manifest.name, at(['table', 'schema']));
  return manifest;
}

/** Registers the JSON Schema file a manifest names as its record schema; the name the table then refers to it by. */
function recordSchemaFile(dir: string, file: string, stream: string, at: string): string {
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  } catch (error) {
    throw new ManifestError(
      `${at}: table.schema: cannot read ${file} beside the manifest as JSON (${(error as NodeJS.ErrnoException).code ?? 'not valid JSON'})`,
    );
  }
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(document as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    throw new ManifestError(
      `${at}: table.schema: ${file} is not a JSON Schema seedline can read (${(error as Error).message.split('\n')[0]})`,
    );
  }
  return defineSchema(`${stream}:${file}`, schema);
}

function parseYamlFile(path: string): { doc: Document; lines: LineCounter } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ManifestError(`${path}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const problem = doc.errors[0];
  if (problem)
    throw new ManifestError(
      `${path}:${problem.linePos?.[0]?.line ?? 1}: YAML syntax: ${problem.message.split('\n')[0]}`,
    );
  return { doc, lines };
}

/** The line of the deepest node of `keys` the file itself holds (a key inside a `$ref` is reported at the `$ref`). */
function lineOf(doc: Document, lines: LineCounter, keys: readonly PropertyKey[]): number {
  for (let depth = keys.length; depth >= 0; depth--) {
    const node = doc.getIn(keys.slice(0, depth) as unknown[], true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return lines.linePos(node.range[0]).line;
  }
  return 1;
}

function keyOf(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '(root)' : path.map(String).join('.');
}

function resolveRefs(node: unknown, definitions: Record<string, unknown>, file: string): unknown {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(item, definitions, file));
  if (node === null || typeof node !== 'object') return node;
  const { $ref, ...rest } = node as Record<string, unknown>;
  const resolved = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, resolveRefs(v, definitions, file)]));
  if ($ref === undefined) return resolved;
  const target = definitions[String($ref)];
  if (target === undefined) throw new ManifestError(`${file}: $ref "${String($ref)}" is not in _definitions.yaml`);
  return { ...(resolveRefs(target, definitions, file) as object), ...resolved };
}
