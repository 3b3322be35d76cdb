import { renderTemplate, type TemplateContext } from '../manifest/template.js';

/**
 * Worst-case credits of one call, from a manifest's cost node: a number, a template that renders
 * to one, or `{ pages_of, size, each }` (searches: `each` credits per page of `size` results).
 */
export function creditsOf(node: unknown, context: TemplateContext): number {
  if (node !== null && typeof node === 'object' && 'pages_of' in node) {
    const spec = node as { pages_of: unknown; size?: number; each?: number };
    const results = Number(renderTemplate(spec.pages_of, context) ?? 25) || 25;
    return Math.ceil(results / (spec.size ?? 25)) * (spec.each ?? 1);
  }
  const value = Number(renderTemplate(node, context));
  return Number.isFinite(value) && value > 0 ? value : 0;
}
