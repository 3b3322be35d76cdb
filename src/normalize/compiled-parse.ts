import type { z } from 'zod';
import { AS_TEXT } from '../../schemas/common.js';

/** What a {@link CompiledParse} returns when it leaves the value to zod. */
export const UNPARSED: unique symbol = Symbol('seedline.unparsed');

/**
 * A record schema's parse generated as code from the schema, for the common case: the value zod
 * would give back (the value itself where nothing changes, objects copied only along a changed
 * path), or UNPARSED. UNPARSED says nothing more than "ask zod": the caller then runs zod's
 * `safeParse`, whose answer (its issues, the repair that follows) is what it was without this.
 * Strings, numbers, booleans, enums, nullable and optional fields, objects and arrays are checked
 * by the generated code; any other schema (a transform, a record, a refinement) is run by zod's
 * own parser on that field alone. `own`: the value is a copy the caller made (a record with its
 * added columns), so a top-level field that changes is written into it rather than into a copy.
 * See docs/tables.md#compiled-parse.
 */
export type CompiledParse = (value: unknown, own?: boolean) => unknown;

/** What zod's internals expose of a schema, as far as the generator reads them. */
interface ZodInternals {
  _zod: {
    def: {
      type: string;
      checks?: readonly { _zod: { def: { check?: string; format?: string } } }[];
      coerce?: boolean;
      innerType?: z.ZodType;
      options?: readonly z.ZodType[];
      inclusive?: boolean;
      discriminator?: string;
      element?: z.ZodType;
      shape?: Record<string, z.ZodType>;
      catchall?: z.ZodType;
    };
    traits: Set<string>;
    optin?: string;
    values?: Set<unknown>;
    run: (payload: { value: unknown; issues: unknown[] }, ctx: { async: false }) => unknown;
  };
}

type Def = ZodInternals['_zod']['def'];

/**
 * A schema compiled, over the identifier of a value: `pred`, an expression true exactly when zod
 * takes the value and gives it back unchanged; or `map`, an expression of zod's output (or UNPARSED).
 */
type Compiled = Pred | { map: (v: string) => string };
type Pred = { pred: (v: string) => string };

const parses = new WeakMap<z.ZodType, CompiledParse>();

/** The generated parse of `schema`, made once per schema object (see {@link CompiledParse}). */
export function compiledParse(schema: z.ZodType): CompiledParse {
  let parse = parses.get(schema);
  if (!parse) parses.set(schema, (parse = generate(schema)));
  return parse;
}

function internals(schema: z.ZodType): ZodInternals['_zod'] {
  return (schema as unknown as ZodInternals)._zod;
}

/** The generated source: one function per object, array or delegated schema, an expression per leaf. */
class Generator {
  readonly functions: string[] = [];
  /** Sets of enum values and key names, and the schemas zod runs itself (`c[i]` in the source). */
  readonly constants: unknown[] = [];
  readonly named = new Map<z.ZodType, string>();

  compile(schema: z.ZodType): Compiled {
    const zod = internals(schema);
    const def = zod.def;
    if (isExactLeaf(schema)) {
      const base = leafBase(schema);
      const constant = ['enum', 'literal'].includes(internals(base).def.type)
        ? this.constant(internals(base).values)
        : -1;
      return { pred: (v) => leaf(schema, v, constant) };
    }
    const named = (name: string) => ({ map: (v: string) => `${name}(${v})` });
    if (def.coerce || (def.checks?.length ?? 0) > 0) return named(this.delegate(schema));
    switch (def.type) {
      case 'nullable':
      case 'optional': {
        if (def.type === 'optional' && !plainOptional(schema)) return named(this.delegate(schema));
        const empty = def.type === 'nullable' ? 'null' : 'undefined';
        const inner = this.compile(def.innerType!);
        return { map: (v) => `(${v} === ${empty} ? ${v} : ${call(inner, v)})` };
      }
      case 'union':
        return named(this.union(schema, def));
      case 'pipe': {
        const text = asTextInput(schema);
        if (!text) return named(this.delegate(schema));
        const input = (this.compile(text) as Pred).pred;
        return { map: (v) => `(${input(v)} ? String(${v}) : UNPARSED)` };
      }
      case 'object':
        return named(this.named.get(schema) ?? this.fn(schema, this.objectBody(schema, def)));
      case 'array':
        return named(this.named.get(schema) ?? this.fn(schema, this.arrayBody(def.element!)));
      default:
        return named(this.delegate(schema));
    }
  }

  /**
   * zod's answer is its first option that passes: options are checked here in order as long as
   * each check is exact (a leaf, or a transform to text of one); zod runs the union from the first
   * option that is not. No option passing is UNPARSED.
   */
  private union(schema: z.ZodType, def: Def): string {
    const known = this.named.get(schema);
    if (known) return known;
    if (def.inclusive === false || def.discriminator !== undefined) return this.delegate(schema);
    const branches: string[] = [];
    let rest = 'UNPARSED';
    for (const option of def.options ?? []) {
      const text = asTextInput(option);
      if (isExactLeaf(option)) branches.push(`${(this.compile(option) as Pred).pred('x')} ? x : `);
      else if (text) branches.push(`${(this.compile(text) as Pred).pred('x')} ? String(x) : `);
      else {
        rest = `${this.delegate(schema)}(x)`;
        break;
      }
    }
    if (branches.length === 0) return this.delegate(schema);
    return this.fn(schema, `  return ${branches.join('')}${rest};`, 'u');
  }

  /** A function running zod's own parser on a value of `schema` (its output, or UNPARSED on any issue). */
  private delegate(schema: z.ZodType): string {
    const index = this.constant(schema);
    const name = `z${index}`;
    this.functions.push(
      [
        `function ${name}(x) {`,
        `  const r = c[${index}]._zod.run({ value: x, issues: [] }, { async: false });`,
        '  return r instanceof Promise || r.issues.length > 0 ? UNPARSED : r.value;',
        '}',
      ].join('\n'),
    );
    return name;
  }

  private arrayBody(element: z.ZodType): string {
    const item = this.compile(element);
    if ('pred' in item && item.pred('v') === 'true') return '  return Array.isArray(x) ? x : UNPARSED;';
    const lines = [
      '  if (!Array.isArray(x)) return UNPARSED;',
      '  let o = x;',
      '  for (let i = 0; i < x.length; i++) {',
    ];
    if ('pred' in item) lines.push(`    const v = x[i];`, `    if (!(${item.pred('v')})) return UNPARSED;`);
    else
      lines.push(
        '    const v = x[i];',
        `    const y = ${item.map('v')};`,
        '    if (y !== v) {',
        '      if (y === UNPARSED) return UNPARSED;',
        '      if (o === x) o = x.slice();',
        '      o[i] = y;',
        '    }',
      );
    lines.push('  }', '  return o;');
    return lines.join('\n');
  }

  private objectBody(schema: z.ZodType, def: Def): string {
    const shape = def.shape ?? {};
    const keys = Object.keys(shape);
    const catchall = def.catchall ? internals(def.catchall).def.type : 'strip';
    // zod's output is a plain object without an own `__proto__` key: another object is zod's to parse.
    const lines = [
      '  if (typeof x !== "object" || x === null || Object.getPrototypeOf(x) !== Object.prototype) return UNPARSED;',
      '  if (Object.hasOwn(x, "__proto__")) return UNPARSED;',
    ];
    if (catchall !== 'unknown' && catchall !== 'any') {
      // Unknown keys stripped or refused, or checked by a catchall schema: only an object without any is parsed here.
      const zodOwn = this.delegate(schema);
      lines.push(`  const known = c[${this.constant(new Set(keys))}];`);
      lines.push(`  for (const k in x) if (!known.has(k)) return ${zodOwn}(x);`);
    }
    lines.push('  let o = x, v, y, later;');
    for (const key of keys) {
      const field = shape[key]!;
      const literal = JSON.stringify(key);
      const compiled = this.compile(field);
      lines.push(`  v = x[${literal}];`);
      // A required key must be present, even where its schema takes undefined (`z.unknown()`).
      if (internals(field).optin === undefined)
        lines.push(`  if (v === undefined && !(${literal} in x)) return UNPARSED;`);
      if ('pred' in compiled) {
        const pred = compiled.pred('v');
        if (pred !== 'true') lines.push(`  if (!(${pred})) return UNPARSED;`);
        continue;
      }
      lines.push(
        `  y = ${compiled.map('v')};`,
        '  if (y !== v) {',
        '    if (y === UNPARSED) return UNPARSED;',
        `    if (own) (later ??= []).push(${literal}, y);`,
        '    else {',
        '      if (o === x) o = { ...x };',
        `      o[${literal}] = y;`,
        '    }',
        '  }',
      );
    }
    // Written into the caller's copy only once the whole object parsed: an UNPARSED one goes to zod as it was.
    lines.push('  if (later !== undefined) for (let i = 0; i < later.length; i += 2) x[later[i]] = later[i + 1];');
    lines.push('  return o;');
    return lines.join('\n');
  }

  /** A function of the value `x`; an object's also of `own`, true when it may write into `x` (a copy already). */
  private fn(schema: z.ZodType, body: string, prefix = 'f'): string {
    const name = `${prefix}${this.named.size}`;
    this.named.set(schema, name);
    this.functions.push(`function ${name}(x, own) {\n${body}\n}`);
    return name;
  }

  private constant(value: unknown): number {
    this.constants.push(value);
    return this.constants.length - 1;
  }
}

/** The expression of zod's output of the value `v` (or UNPARSED). */
function call(compiled: Compiled, v: string): string {
  return 'pred' in compiled ? `(${compiled.pred(v)} ? ${v} : UNPARSED)` : compiled.map(v);
}

/** The expression of an exact leaf (see isExactLeaf) over the identifier `v`; `constant` indexes its values' set. */
function leaf(schema: z.ZodType, v: string, constant: number): string {
  const { def } = internals(schema);
  switch (def.type) {
    case 'string':
      return `typeof ${v} === "string"`;
    case 'boolean':
      return `typeof ${v} === "boolean"`;
    case 'null':
      return `${v} === null`;
    case 'unknown':
    case 'any':
      return 'true';
    case 'enum':
    case 'literal':
      return `c[${constant}].has(${v})`;
    case 'number':
      return (def.checks?.length ?? 0) === 0
        ? `(typeof ${v} === "number" && Number.isFinite(${v}))`
        : `Number.isSafeInteger(${v})`;
    case 'nullable':
      return `(${v} === null || ${leaf(def.innerType!, v, constant)})`;
    default:
      return `(${v} === undefined || ${leaf(def.innerType!, v, constant)})`;
  }
}

/** The input of a transform to text (AS_TEXT) whose input is an exact leaf, else undefined. */
function asTextInput(schema: z.ZodType): z.ZodType | undefined {
  const def = internals(schema).def as Def & { in?: z.ZodType };
  return AS_TEXT.has(schema) && def.in && isExactLeaf(def.in) ? def.in : undefined;
}

/** The schema inside a leaf's nullable and optional wrappers. */
function leafBase(schema: z.ZodType): z.ZodType {
  const { def } = internals(schema);
  return def.type === 'nullable' || def.type === 'optional' ? leafBase(def.innerType!) : schema;
}

/** An optional that passes undefined through: not an exact optional (which refuses it), nor one over a default. */
function plainOptional(schema: z.ZodType): boolean {
  const { traits, def } = internals(schema);
  return !traits.has('$ZodExactOptional') && internals(def.innerType!).optin !== 'defaulted';
}

/**
 * A leaf whose check is true exactly when zod takes the value, and gives it back unchanged:
 * strings, booleans, null, unknown, enums and literals without checks, numbers (safe integers with
 * `.int()`), and nullable or optional ones.
 */
function isExactLeaf(schema: z.ZodType): boolean {
  const { def } = internals(schema);
  if (def.coerce) return false;
  const checks = def.checks ?? [];
  if (def.type === 'number')
    return (
      checks.length === 0 ||
      (checks.length === 1 && checks[0]!._zod.def.check === 'number_format' && checks[0]!._zod.def.format === 'safeint')
    );
  if (checks.length > 0) return false;
  if (['string', 'boolean', 'null', 'unknown', 'any', 'enum', 'literal'].includes(def.type)) return true;
  if (def.type === 'nullable') return isExactLeaf(def.innerType!);
  if (def.type === 'optional') return plainOptional(schema) && isExactLeaf(def.innerType!);
  return false;
}

function generate(schema: z.ZodType): CompiledParse {
  const generator = new Generator();
  const compiled = generator.compile(schema);
  const object = internals(schema).def.type === 'object' ? generator.named.get(schema) : undefined;
  const root = object ? `${object}(value, own)` : call(compiled, 'value');
  const source = `${generator.functions.join('\n')}\nreturn function parse(value, own) { return ${root}; };`;
  // Generated from the schema alone, never from data: the keys are JSON string literals.
  return new Function('c', 'UNPARSED', source)(generator.constants, UNPARSED) as CompiledParse;
}
