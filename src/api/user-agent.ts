import { hostname } from 'node:os';
import { svcsyncVersion } from '../core/version.js';

// Read in src/core/version.ts, which the warehouse records too; exported here as before.
export { svcsyncVersion };

/**
 * The User-Agent of every API and token request: `svcsync/<version> (<host>/<pid>)`, so a
 * server's log shows which process of which machine called (issue 12). The one place it is built.
 */
export function userAgent(host?: string, pid?: number, v?: string): string {
  if (host === undefined && pid === undefined && v === undefined) return (own ??= build(hostname(), process.pid, svcsyncVersion()));
  return build(host ?? hostname(), pid ?? process.pid, v ?? svcsyncVersion());
}

// This process's own, built once: asking the host's name is a system call, and every request sends it.
let own: string | undefined;

function build(host: string, pid: number, v: string): string {
  return `svcsync/${v} (${host}/${pid})`;
}
