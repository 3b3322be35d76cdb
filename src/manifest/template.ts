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
    const whole = WHOLE.exec(template);
    if (whole) return lookup(context, whole[1]!);
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

/** Reads a dotted path (`partition.urn`) from the context; `undefined` when any step is missing. */
export function lookup(context: unknown, path: string): unknown {
  let value: unknown = context;
  for (const step of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return value;
}
