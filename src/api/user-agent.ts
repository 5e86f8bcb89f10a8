import { hostname } from 'node:os';
import { svcsyncVersion } from '../core/version.js';

// Read in src/core/version.ts, which the warehouse records too; exported here as before.
export { svcsyncVersion };

/**
 * The User-Agent of every API and token request: `svcsync/<version> (<host>/<pid>)`, so a
 * server's log shows which process of which machine called (issue 12). The one place it is built.
 */
export function userAgent(host: string = hostname(), pid: number = process.pid, v: string = svcsyncVersion()): string {
  return `svcsync/${v} (${host}/${pid})`;
}
