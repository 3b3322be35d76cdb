import { describe, expect, it } from 'vitest';
import { problemsOf } from '../helpers/config.js';
import { parseConfig } from '../../src/config/load-config.js';

const config = (api = '') => `
api:
  base_url: sandbox
  api_key: svc_test_demo
${api}destination: { type: duckdb, path: data/x.duckdb }
streams:
  account: {}
`;

describe('config: api.max_answer_bytes and api.call_deadline', () => {
  it('given neither key, when parsed, then the cap is 64 MiB and the deadline 120s', () => {
    expect(parseConfig(config(), 'test.yaml', {}).api).toMatchObject({
      max_answer_bytes: 67_108_864,
      call_deadline: '120s',
    });
  });

  it('given both keys, a number as a lone placeholder, when parsed, then they are kept', () => {
    const api = parseConfig(
      config('  max_answer_bytes: "${CAP:-1048576}"\n  call_deadline: 5m\n'),
      'test.yaml',
      {},
    ).api;
    expect(api).toMatchObject({ max_answer_bytes: 1_048_576, call_deadline: '5m' });
  });

  it('given a cap out of range or not whole, when parsed, then api.max_answer_bytes is named with the range', () => {
    expect(problemsOf(config('  max_answer_bytes: 100\n'))).toEqual([
      'api.max_answer_bytes: expected at least 1024 bytes (default 67108864, 64 MiB)',
    ]);
    expect(problemsOf(config('  max_answer_bytes: 1073741824\n'))).toEqual([
      'api.max_answer_bytes: expected at most 536870888 bytes, the longest answer Node can parse',
    ]);
    expect(problemsOf(config('  max_answer_bytes: 2048.5\n'))).toHaveLength(1);
    expect(problemsOf(config('  max_answer_bytes: 64MiB\n'))[0]).toMatch(/^api\.max_answer_bytes:/);
  });

  it('given a deadline that is no duration, zero or above a day, when parsed, then api.call_deadline is named once', () => {
    expect(problemsOf(config('  call_deadline: soon\n'))).toEqual([
      'api.call_deadline: expected a duration such as 12h, 7d or 0s',
    ]);
    expect(problemsOf(config('  call_deadline: 0s\n'))).toEqual([
      'api.call_deadline: expected a duration above 0s and at most 24h, such as 120s',
    ]);
    expect(problemsOf(config('  call_deadline: 2d\n'))).toEqual([
      'api.call_deadline: expected a duration above 0s and at most 24h, such as 120s',
    ]);
    expect(problemsOf(config('  call_deadline: 24h\n'))).toEqual([]);
  });
});
