import { lookup, lookupSteps } from '../util/dotted-path.js';

const WHOLE = /^\{\{\s*([\w.]+)\s*\}\}$/;
const EMBEDDED = /\{\{\s*([\w.]+)\s*\}\}/g;

/** Values a template can read: `{{ seed }}`, `{{ options.kinds }}`, `{{ partition.urn }}`, `{{ record.url }}`. */
export type TemplateContext = Record<string, unknown>;

/**
 * Renders a manifest template. A string that is exactly one `{{ path }}` keeps the value's type
 * (so `{{ options.max_results }}` stays a number); embedded placeholders are interpolated as text.
 * Keys whose value renders to `undefined` are dropped, so optional body fields stay absent.
 */
export function renderTemplate(template: unknown, context: TemplateContext): unknown {
  if (typeof template === 'string') {
    const whole = wholePath(template);
    if (whole) return lookupSteps(context, whole);
    if (!template.includes('{{')) return template;
    return template.replace(EMBEDDED, (_m, path: string) => {
      const value = lookup(context, path);
      return value === undefined || value === null ? '' : String(value);
    });
  }
  if (Array.isArray(template)) return template.map((item) => renderTemplate(item, context));
  if (template !== null && typeof template === 'object') {
    if ('$switch' in template) return renderSwitch(template as SwitchNode, context);
    const entries = Object.entries(template)
      .map(([key, value]) => [key, renderTemplate(value, context)] as const)
      .filter(([, value]) => value !== undefined);
    return Object.fromEntries(entries);
  }
  return template;
}

/**
 * `{ $switch: "{{ partition.variant }}", cases: { sales-nav: …, standard: … }, default: … }`: the
 * case named by the rendered value, else `default` (absent: `undefined`), itself rendered.
 */
interface SwitchNode {
  $switch: unknown;
  cases: Record<string, unknown>;
  default?: unknown;
}

function renderSwitch(node: SwitchNode, context: TemplateContext): unknown {
  const value = String(renderTemplate(node.$switch, context) ?? '');
  const chosen = Object.hasOwn(node.cases ?? {}, value) ? node.cases[value] : node.default;
  return renderTemplate(chosen, context);
}

/** Manifest strings seen, each with the steps of its path when it is exactly one `{{ path }}` (else null). */
const wholePaths = new Map<string, readonly string[] | null>();
/** Manifests hold few templates; strings past this many are looked at afresh each time. */
const MAX_CACHED_TEMPLATES = 4096;

/**
 * The path steps of a template that is exactly one `{{ path }}`, else null. Cached: an added
 * column's template is rendered for every record of a stream.
 */
function wholePath(template: string): readonly string[] | null {
  let steps = wholePaths.get(template);
  if (steps !== undefined) return steps;
  const whole = WHOLE.exec(template);
  steps = whole ? whole[1]!.split('.') : null;
  if (wholePaths.size < MAX_CACHED_TEMPLATES) wholePaths.set(template, steps);
  return steps;
}

/** The option a value is exactly (`{{ options.searches }}` → `searches`); undefined for anything else. */
export function wholeOption(value: unknown): string | undefined {
  return wholeName('options', value);
}

/** The seed source a value is exactly (`{{ seeds.headcount }}` → `headcount`); undefined for anything else. */
export function wholeSeeds(value: unknown): string | undefined {
  return wholeName('seeds', value);
}

function wholeName(scope: string, value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const steps = WHOLE.exec(value)?.[1]?.split('.');
  return steps?.length === 2 && steps[0] === scope ? steps[1] : undefined;
}

/** One `{{ path }}` of a template: its path steps and where it sits in the template (keys and indexes). */
export interface TemplateReference {
  path: readonly string[];
  at: readonly (string | number)[];
}

/** Every `{{ path }}` a template holds, in its strings, lists, objects and `$switch` nodes. */
export function templateReferences(template: unknown, at: readonly (string | number)[] = []): TemplateReference[] {
  if (typeof template === 'string')
    return [...template.matchAll(EMBEDDED)].map((match) => ({ path: match[1]!.split('.'), at }));
  if (Array.isArray(template)) return template.flatMap((item, index) => templateReferences(item, [...at, index]));
  if (template !== null && typeof template === 'object')
    return Object.entries(template).flatMap(([key, value]) => templateReferences(value, [...at, key]));
  return [];
}
