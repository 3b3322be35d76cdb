import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { explainListenError, ListenError, parsePort } from '../../src/cli/listen-options.js';

describe('parsePort', () => {
  it.each([
    ['0', 0],
    ['8787', 8787],
    ['65535', 65535],
  ])('given %s, when parsed, then it is the port %i', (text, port) => {
    expect(parsePort(text)).toBe(port);
  });

  it.each(['70000', '65536', '-1', '80.5', 'abc', ''])(
    'given %j, when parsed, then commander is told the range',
    (text) => {
      expect(() => parsePort(text)).toThrow(InvalidArgumentError);
      expect(() => parsePort(text)).toThrow(/expected a port from 0 to 65535/);
    },
  );
});

describe('explainListenError', () => {
  const failure = (code: string) => Object.assign(new Error(`listen ${code}: something 127.0.0.1:8787`), { code });

  it('given EADDRINUSE, when explained, then a coded error names the address and says to pick another --port', () => {
    const error = explainListenError(failure('EADDRINUSE'), '127.0.0.1', 8787);
    expect(error).toBeInstanceOf(ListenError);
    expect(error).toMatchObject({
      code: 'SEEDLINE_LISTEN_FAILED',
      message: expect.stringMatching(/127\.0\.0\.1:8787 is already in use.*--port/),
    });
  });

  it('given EADDRNOTAVAIL, when explained, then it says to pick another --host', () => {
    expect(explainListenError(failure('EADDRNOTAVAIL'), '10.9.9.9', 0)).toMatchObject({
      message: expect.stringMatching(/10\.9\.9\.9 is not an address of this machine.*--host/),
    });
  });

  it('given an unknown failure, when explained, then it is returned unchanged', () => {
    const other = failure('EMFILE');
    expect(explainListenError(other, '127.0.0.1', 8787)).toBe(other);
  });
});
