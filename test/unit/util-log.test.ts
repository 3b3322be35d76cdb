import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { configureLog, log, logLine, registerSecrets } from '../../src/util/log.js';

/** A stream that keeps what the logger writes to it. */
function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({ write: (chunk, _encoding, done) => (chunks.push(String(chunk)), done()) });
  return Object.assign(stream, { text: () => chunks.join('') });
}

afterEach(() => configureLog({}));

describe('the log', () => {
  it('given the plain format, when lines of each level are logged, then people read the message alone, prefixed by its level when it is not info', () => {
    const out = sink();
    configureLog({ format: 'plain', level: 'debug', destination: out });
    log.debug('details');
    log.info('[profiles] 3 done, 3 credits', { stream: 'profiles', done: 3 });
    log.warn('webhook spool not loaded');
    logLine('warning: webhooks.secrets_file is readable by others');
    log.error('the config is wrong (SEEDLINE_CONFIG_INVALID)');
    expect(out.text()).toBe(
      'debug: details\n[profiles] 3 done, 3 credits\nwarning: webhook spool not loaded\nwarning: webhooks.secrets_file is readable by others\nerror: the config is wrong (SEEDLINE_CONFIG_INVALID)\n',
    );
  });

  it('given the json format, when a line with fields is logged, then it is one JSON object with level, time, message and the fields', () => {
    const out = sink();
    configureLog({ format: 'json', destination: out });
    log.info('[jobs] 4 done, 4 credits', { stream: 'jobs', event: 'progress', done: 4, credits: 4 });
    const line = JSON.parse(out.text()) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 'info',
      msg: '[jobs] 4 done, 4 credits',
      stream: 'jobs',
      event: 'progress',
      done: 4,
      credits: 4,
    });
    expect(new Date(String(line.time)).toISOString()).toBe(line.time);
  });

  it('given a level, when less severe lines are logged, then they are dropped', () => {
    const out = sink();
    configureLog({ format: 'plain', level: 'warn', destination: out });
    log.info('progress');
    log.debug('details');
    log.warn('needs you');
    expect(out.text()).toBe('warning: needs you\n');
  });

  it('given secrets in messages and fields, when logged in either format, then none of them is written', () => {
    registerSecrets(['pg-password-77', 'custom-webhook-secret']);
    for (const format of ['plain', 'json'] as const) {
      const out = sink();
      configureLog({ format, destination: out });
      log.error(
        'connect to postgres://app:pg-password-77@db/x failed; key svc_live_AbC123 refused; whsec_Zz9 and custom-webhook-secret',
        {
          api_key: 'svc_live_AbC123',
          api: { api_key: 'anything', base_url: 'https://api.example' },
          headers: { authorization: 'Bearer eyJhbGciOi.eyJzdWIi.c2ln' },
          detail: 'the key was svc_test_xyz',
          webhook_secret: 'plain-text-secret',
        },
      );
      const text = out.text();
      for (const secret of [
        'pg-password-77',
        'svc_live_AbC123',
        'whsec_Zz9',
        'custom-webhook-secret',
        'anything',
        'eyJhbGciOi',
        'svc_test_xyz',
        'plain-text-secret',
      ]) {
        expect(text, `${format}: ${secret}`).not.toContain(secret);
      }
      expect(text).toContain('[redacted]');
    }
  });
});
