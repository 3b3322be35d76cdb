import { describe, expect, it } from 'vitest';
import { optionSchema, OptionSchemaError } from '../../src/manifest/option-schema.js';
import { renderTemplate } from '../../src/manifest/template.js';

describe('stream options declared as JSON Schema', () => {
  it('given defaults, bounds, enums and durations, when parsed, then defaults fill in and bad values are refused with a message', () => {
    expect(optionSchema({ type: 'integer', minimum: 1, default: 10 }, 'options.max_pages').parse(undefined)).toBe(10);
    expect(optionSchema({ type: 'integer', minimum: 1 }, 'o').safeParse(0).success).toBe(false);
    expect(optionSchema({ type: 'integer' }, 'o').parse(undefined)).toBeUndefined();
    expect(optionSchema({ enum: ['merge', 'history'], default: 'merge' }, 'o').safeParse('scd').success).toBe(false);
    const duration = optionSchema({ type: 'string', format: 'duration', default: '7d' }, 'o');
    expect(duration.parse('12h')).toBe('12h');
    expect(duration.safeParse('soon').error?.issues[0]?.message).toBe('expected a duration such as 12h, 7d or 0s');
    expect(
      optionSchema(
        { type: 'array', items: { enum: ['posts', 'comments'] }, minItems: 1, default: ['posts'] },
        'o',
      ).safeParse([]).success,
    ).toBe(false);
  });

  it('given required: true and no default, when absent, then it is refused; objects refuse unknown keys when additionalProperties is false', () => {
    expect(optionSchema({ type: 'string', required: true }, 'o').safeParse(undefined).success).toBe(false);
    const search = optionSchema(
      {
        type: 'object',
        additionalProperties: false,
        required: ['id'],
        properties: { id: { type: 'string' }, max_results: { type: 'integer', default: 25 } },
      },
      'o',
    );
    expect(search.parse({ id: 'a' })).toEqual({ id: 'a', max_results: 25 });
    expect(search.safeParse({ id: 'a', extra: 1 }).success).toBe(false);
    expect(search.safeParse({}).success).toBe(false);
  });

  it('given oneOf of required keys with an errorMessage, when both or neither are given, then the message names the choice', () => {
    const node = {
      type: 'object',
      properties: { filters: { type: 'object' }, search_url: { type: 'string' } },
      oneOf: [{ required: ['filters'] }, { required: ['search_url'] }],
      errorMessage: 'give exactly one of filters or search_url',
    };
    const schema = optionSchema(node, 'o');
    expect(schema.safeParse({ search_url: 'x' }).success).toBe(true);
    expect(schema.safeParse({}).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'filters: give exactly one of filters or search_url',
    ]);
    expect(schema.safeParse({ filters: {}, search_url: 'x' }).success).toBe(false);
  });

  it('given a keyword options do not support, a default that does not fit, or an unknown format, when compiled, then the error names the key', () => {
    expect(() => optionSchema({ type: 'string', anyOf: [] }, 'options.x')).toThrow(OptionSchemaError);
    expect(() => optionSchema({ type: 'string', anyOf: [] }, 'options.x')).toThrow(
      /options\.x: "anyOf" is not a keyword/,
    );
    expect(() => optionSchema({ type: 'integer', minimum: 1, default: 0 }, 'options.n')).toThrow(
      /options\.n\.default: the default 0 does not fit/,
    );
    expect(() => optionSchema({ type: 'string', format: 'email' }, 'options.e')).toThrow(/only format: duration/);
    expect(() => optionSchema({ type: 'date' }, 'options.d')).toThrow(/expected type string, integer/);
  });
});

describe('manifest templates: $switch', () => {
  it('given a $switch on a partition value, when rendered, then the case of the value is taken, else the default, else nothing', () => {
    const path = {
      $switch: '{{ partition.variant }}',
      cases: { 'sales-nav': '/v1/search/people/sales-nav' },
      default: '/v1/search/people',
    };
    expect(renderTemplate(path, { partition: { variant: 'sales-nav' } })).toBe('/v1/search/people/sales-nav');
    expect(renderTemplate(path, { partition: { variant: 'default' } })).toBe('/v1/search/people');
    expect(
      renderTemplate(
        { op: { $switch: '{{ partition.variant }}', cases: { default: 'search.people' } } },
        { partition: { variant: 'standard' } },
      ),
    ).toEqual({});
    expect(renderTemplate({ $switch: '{{ x }}', cases: { a: '{{ y }}' } }, { x: 'a', y: 3 })).toBe(3);
  });
});
