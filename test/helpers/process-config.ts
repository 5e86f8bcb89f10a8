import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sandbox } from '../../sandbox/index.js';

/**
 * Writes a configuration file for a svcsync process run against the sandbox: one connection
 * to its inventory contacts, two records a page, limits high enough never to wait. `extra`
 * lines go before the connections (a `daemon:` block, say).
 */
export function writeProcessConfig(
  sandbox: Sandbox,
  warehouse: string | Record<string, unknown>,
  extra: readonly string[] = [],
  options: { path?: string; limits?: string } = {},
): string {
  const path = options.path ?? join(mkdtempSync(join(tmpdir(), 'svcsync-process-')), 'svcsync.yaml');
  const lines = [
    // JSON is YAML: the warehouse's URL, or its object with fault settings.
    `warehouse: ${JSON.stringify(warehouse)}`,
    'sync: { per_page: 2 }',
    ...extra,
    'connections:',
    '  - name: p',
    `    accounts_url: ${sandbox.url}`,
    `    client_id: ${sandbox.credentials.client_id}`,
    `    client_secret: ${sandbox.credentials.client_secret}`,
    `    refresh_token: ${sandbox.credentials.refresh_token}`,
    '    plan: enterprise',
    `    limits: ${options.limits ?? '{ per_minute: 1000000, per_day: 100000000 }'}`,
    '    families: [inventory]',
    '    streams: [inventory.contacts]',
    '',
  ];
  writeFileSync(path, lines.join('\n'));
  return path;
}
