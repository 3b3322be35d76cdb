import { ConfigError } from '../../src/config/config-errors.js';
import { parseConfig } from '../../src/config/load-config.js';

/** The problems a config text is refused with (none when it parses). */
export function problemsOf(text: string, env: NodeJS.ProcessEnv = {}): readonly string[] {
  try {
    parseConfig(text, 'test.yaml', env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}
