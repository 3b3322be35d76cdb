import { renderTemplate, templateReferences, type TemplateContext } from './template.js';

/**
 * A manifest template compiled against what its stream binds once (its options): rendering needs
 * only the scope of one call (`partition`, `args`, `record`, …). Its references were checked
 * when the manifest loaded (`templateProblems`), so none reads a name its scope lacks.
 */
export type CompiledTemplate = (scope?: TemplateContext) => unknown;

/**
 * Compiles `template` with `bound` (the stream's options) under every render. A text or number
 * without placeholders is its value; objects are rendered afresh each time, so a caller may change
 * what it gets.
 */
export function compileTemplate(template: unknown, bound: TemplateContext = {}): CompiledTemplate {
  if (isPlainValue(template)) return () => template;
  // Unbound templates render over the caller's scope as it is: no copy per render (a column renders per record).
  if (Object.keys(bound).length === 0) return (scope = {}) => renderTemplate(template, scope);
  return (scope = {}) => renderTemplate(template, { ...bound, ...scope });
}

function isPlainValue(template: unknown): boolean {
  return (template === null || typeof template !== 'object') && templateReferences(template).length === 0;
}
