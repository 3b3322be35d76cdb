import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_JSON_SCHEMA_PATH, configJsonSchema } from '../../src/config/config-json-schema.js';
import { parseConfig } from '../../src/config/load-config.js';

const ROOT = join(import.meta.dirname, '../..');
const committed = JSON.parse(readFileSync(join(ROOT, CONFIG_JSON_SCHEMA_PATH), 'utf8')) as Record<string, unknown>;
const validate = new Ajv2020({ allErrors: true, strict: false, validateFormats: false }).compile(committed);

/** The annotated config of docs/configuration.md: the first yaml block of its section "The config file, annotated". */
function documentedConfig(): unknown {
  const page = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
  const section = page.indexOf('## The config file, annotated');
  expect(section, 'docs/configuration.md has no section "## The config file, annotated"').toBeGreaterThanOrEqual(0);
  return parse(/```yaml\n([\s\S]*?)```/.exec(page.slice(section))![1]!);
}

describe('the config JSON Schema', () => {
  it('given the zod schema, when the JSON Schema is generated, then it equals the committed file (run `npm run config-schema` after changing the config schema)', () => {
    expect(configJsonSchema()).toEqual(committed);
  });

  it('given the demo config and the documented example, when validated by ajv, then both are valid', () => {
    const demo = readFileSync(join(ROOT, 'config/demo.yaml'), 'utf8');
    expect(demo.split('\n')[0]).toBe('# yaml-language-server: $schema=../schemas/seedline.config.schema.json');
    for (const config of [parse(demo), documentedConfig()])
      expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
  });

  it("given the demo config's optional streams uncommented, when validated by ajv and loaded, then it is valid and runs them", () => {
    const demo = readFileSync(join(ROOT, 'config/demo.yaml'), 'utf8');
    const optional = demo.replace(/^  # ([a-z_]+: \{)/gm, '  $1');
    const config = parse(optional) as { streams: Record<string, unknown> };
    expect(Object.keys(config.streams)).toEqual(
      expect.arrayContaining(['post_comments', 'post_reactions', 'profile_recommendations', 'profile_interests']),
    );
    expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
    expect(Object.keys(parseConfig(optional, join(ROOT, 'config/demo.yaml')).streams)).toContain('profile_interests');
  });

  it('given a mistyped key, a wrong type and a placeholder for a number, when validated, then the first two are flagged and the placeholder passes', () => {
    const base = {
      api: { base_url: 'sandbox', api_key: 'svc_test_x' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      streams: { profiles: null },
    };
    expect(validate(base)).toBe(true);
    expect(validate({ ...base, budget: { max_credits_per_run: '${MAX_CREDITS:-500}' } })).toBe(true);
    expect(validate({ ...base, budgett: {} })).toBe(false);
    expect(validate({ ...base, budget: { max_credits_per_run: 'lots' } })).toBe(false);
    expect(validate({ ...base, streams: { profiles: { schema_contract: 'melt' } } })).toBe(false);
  });
});
