import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describeIssues } from '../../schemas/common.js';
import { StreamManifest } from './manifest-schema.js';
import { packageRoot } from '../util/package-root.js';

/** The folder of the built-in stream manifests. */
export const BUILTIN_STREAMS_DIR = join(packageRoot(), 'streams');

/** A manifest that does not parse or validate: names the file and the key. */
export class ManifestError extends Error {
  readonly code = 'SEEDLINE_MANIFEST_INVALID';
}

/**
 * Loads every `<name>.stream.yaml` of a folder, resolving `$ref: <definition>` nodes against
 * `_definitions.yaml`, and validates each against the manifest language.
 */
export async function loadManifests(dir: string = BUILTIN_STREAMS_DIR): Promise<Map<string, StreamManifest>> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.stream.yaml')).sort();
  const definitions = (await readYaml(join(dir, '_definitions.yaml'), true)) as Record<string, unknown>;
  const manifests = new Map<string, StreamManifest>();
  for (const file of files) {
    const name = file.replace(/\.stream\.yaml$/, '');
    const raw = resolveRefs(await readYaml(join(dir, file)), definitions ?? {}, file);
    const result = StreamManifest.safeParse(raw);
    if (!result.success) throw new ManifestError(`${file}: ${describeIssues(result.error)}`);
    if (result.data.name !== name) throw new ManifestError(`${file}: name "${result.data.name}" must equal the file name "${name}"`);
    manifests.set(name, result.data);
  }
  return manifests;
}

async function readYaml(path: string, optional = false): Promise<unknown> {
  try {
    return parseYaml(await readFile(path, 'utf8'));
  } catch (error) {
    if (optional && (error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ManifestError(`${path}: ${(error as Error).message}`);
  }
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
