import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of seedline's package.json, found upwards from this module: the same answer when run
 * from the sources (`src/util/`, with tsx) and from the build (`dist/src/util/`, the `seedline`
 * bin), so files shipped beside the code (`streams/`) are found from either.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error(
        `No package.json above ${fileURLToPath(import.meta.url)}: seedline's files are incomplete, reinstall it`,
      );
    dir = parent;
  }
  return dir;
}
