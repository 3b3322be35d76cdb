import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { expect } from 'vitest';

const validate = new Ajv({ allErrors: true, strict: false }).compile(
  JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/airbyte-protocol.schema.json'), 'utf8')) as object,
);

/** Every stdout line of an `airbyte` command as a protocol message, each validated against the protocol's schema. */
export function protocolMessages(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const message = JSON.parse(line) as unknown;
      expect(validate(message), `${line.slice(0, 200)}: ${JSON.stringify(validate.errors)}`).toBe(true);
      return message;
    });
}
