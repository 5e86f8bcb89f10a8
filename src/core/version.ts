import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let version: string | undefined;

/**
 * svcsync's version from its package.json, read once. The file is found by walking up from
 * this module, so the same code works from src/ under the tests and from the compiled dist/src/.
 */
export function svcsyncVersion(): string {
  if (version !== undefined) return version;
  version = '0.0.0';
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'svcsync' && typeof pkg.version === 'string') {
        version = pkg.version;
        break;
      }
    }
    if (dirname(dir) === dir) break;
  }
  return version;
}
