import { svcsyncVersion } from '../core/version.js';

/**
 * What a `--json` option prints: one object, svcsync's version first, so a script that keeps
 * the output can tell which version wrote it.
 */
export function jsonOutput(value: object): string {
  return `${JSON.stringify({ version: svcsyncVersion(), ...value }, null, 2)}\n`;
}
