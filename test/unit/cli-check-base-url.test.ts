import { describe, expect, it } from 'vitest';
import { checkBaseUrl } from '../../src/cli/check-base-url.js';

describe('checkBaseUrl (the config rule for api.base_url, applied to --base-url)', () => {
  it.each([
    'https://api.example.com',
    'https://api.example.com/v2/',
    'http://localhost:4010',
    'http://127.0.0.1:8787/',
    'http://[::1]:9000',
  ])('given %s, when checked, then it passes', (url) => {
    expect(() => checkBaseUrl(url, '--base-url')).not.toThrow();
  });

  it.each([
    'http://192.0.2.2:18999',
    'http://api.example.com',
    'http://localhost.example.com',
    'http://127.0.0.1.nip.io',
  ])('given plain http to %s, when checked, then a usage error names the flag and the clear-text risk', (url) => {
    expect(() => checkBaseUrl(url, '--base-url')).toThrow(
      expect.objectContaining({
        code: 'SEEDLINE_USAGE',
        message: expect.stringMatching(/^--base-url: plain http .*clear text/),
      }),
    );
  });

  it.each(['not a url', 'sandbox', 'ftp://api.example.com', ''])(
    'given %j, when checked, then it asks for an absolute https URL',
    (url) => {
      expect(() => checkBaseUrl(url, 'SEEDLINE_BASE_URL')).toThrow(
        /^SEEDLINE_BASE_URL: expected an absolute https URL/,
      );
    },
  );

  it('given a URL with credentials, when refused, then the message does not echo it', () => {
    expect(() => checkBaseUrl('http://user:hunter2@api.example.com', '--base-url')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('hunter2') }),
    );
  });
});
