import { Command } from 'commander';
import { ApiClient, TokenCacheRegistry } from '../../api/client.js';
import { scopeFor } from '../../api/families.js';
import { LimiterRegistry } from '../../api/limiter.js';
import { CATALOG } from '../../catalog/index.js';
import { isOrganizationList, qualifiedName, type StreamSpec } from '../../catalog/types.js';
import type { Family } from '../../catalog/families.js';
import type { ConnectionConfig } from '../../config/schema.js';
import { AuthorizationError, ExitCode, describeError, worseExitCode } from '../../core/errors.js';
import { describeLocation } from '../../config/locate.js';
import { hasNoOrganizationList, organizationsForUnlistedFamily } from '../../extractors/discovery.js';
import { listOrganizations } from '../../extractors/discovery.js';
import { recordsOf } from '../../extractors/pager.js';
import { migrateToLatest } from '../../loaders/migrate.js';
import { WarehouseUsageStore } from '../../state/usage-store.js';
import { loginExitCode, loginLines, tryLogin } from '../login-check.js';
import { loadRuntime, withWarehouse, type Cli, type Runtime } from '../runtime.js';

/** One connection's check as it goes: the lines to print, the worst exit code so far, the scopes found missing. */
interface ConnectionCheck {
  out: string[];
  worst: ExitCode;
  missingScopes: Set<string>;
  reachable: number;
}

/**
 * What a failed request means for the check. The token works by now (the login came first), so a
 * refusal is a scope the token lacks (exit 4, like a sync that skips the family or streams), or
 * the API refusing every fresh token (exit 3); anything else is no verdict on the credentials.
 */
function refusal(check: ConnectionCheck, error: unknown, otherwise: ExitCode): string {
  const text = describeError(error).split('\n').join(' ');
  if (error instanceof AuthorizationError && error.reach === 'family' && !error.byAuthorizationServer) {
    if (error.scope) check.missingScopes.add(error.scope);
    check.worst = worseExitCode(check.worst, ExitCode.partial);
    return `missing scope${error.scope ? ` ${error.scope}` : ''} (the login works; this request was refused): ${text}`;
  }
  if (error instanceof AuthorizationError) {
    check.worst = worseExitCode(check.worst, ExitCode.authorization);
    return `${error.byAuthorizationServer ? 'login refused' : 'every token was refused'}: ${text}`;
  }
  check.worst = worseExitCode(check.worst, otherwise);
  return text;
}

/** Reads one record of each selected top-level stream of the family, for one organization. */
async function checkStreams(check: ConnectionCheck, client: ApiClient, connection: ConnectionConfig, family: Family, orgId: string) {
  const streams = CATALOG.filter(
    (s: StreamSpec) =>
      s.family === family &&
      !s.parent &&
      !isOrganizationList(s) &&
      (!connection.streams || connection.streams.includes(s.name) || connection.streams.includes(qualifiedName(s))),
  );
  for (const s of streams) {
    const scope = scopeFor(family, 'GET', s.path);
    try {
      const query: Record<string, string | number> = { ...(s.query ?? {}) };
      if (s.paginated) Object.assign(query, { page: 1, per_page: 1 });
      recordsOf(s, await client.get({ family, organizationId: orgId, path: s.path, query }), `GET ${family}${s.path}`);
      check.out.push(`      ✓ ${qualifiedName(s)}${scope ? ` (${scope})` : ''}`);
    } catch (error) {
      check.out.push(`      ✗ ${qualifiedName(s)}: ${refusal(check, error, ExitCode.partial)}`);
    }
  }
}

/** Lists the organizations of each family (and, with `streams`, reads one record of each stream of the first). */
async function checkFamilies(check: ConnectionCheck, rt: Runtime, client: ApiClient, connection: ConnectionConfig, streams: boolean) {
  // check is short and read-only: nothing asks it to stop.
  const unstopped = new AbortController().signal;
  // What the families with a list listed, for the families without one (A13).
  const listed = new Map<string, Record<string, unknown>>();
  const unlisted: Family[] = [];
  for (const family of connection.families) {
    const orgStream = CATALOG.find((s) => s.family === family && isOrganizationList(s));
    if (!orgStream) continue;
    let orgs: Record<string, unknown>[];
    try {
      orgs = await listOrganizations(client, orgStream, { signal: unstopped, perPage: rt.config.sync.per_page });
    } catch (error) {
      if (hasNoOrganizationList(error)) unlisted.push(family);
      else check.out.push(`  ✗ ${family}: cannot list organizations: ${refusal(check, error, ExitCode.unexpected)}`);
      continue;
    }
    for (const o of orgs) {
      const id = String(o['organization_id']);
      if (!listed.has(id) || o['is_org_active'] !== false) listed.set(id, o);
    }
    const wanted = orgs.filter((o) => !connection.organizations || connection.organizations.includes(String(o['organization_id'])));
    check.reachable += wanted.length;
    check.out.push(`  ✓ ${family}: ${wanted.length} organization(s)${connection.organizations ? ' (of the configured ones)' : ''}`);
    for (const o of wanted) {
      // The API's organization name is text (a number is shown as is); anything else shows nothing.
      const name = o['name'];
      const shownName = typeof name === 'string' || typeof name === 'number' ? String(name) : '';
      check.out.push(`      ${String(o['organization_id'])}  ${shownName}${o['is_org_active'] === false ? '  (inactive)' : ''}`);
    }
    const first = wanted.find((o) => o['is_org_active'] !== false);
    if (streams && first) await checkStreams(check, client, connection, family, String(first['organization_id']));
  }
  const ids = organizationsForUnlistedFamily({ listed, wanted: connection.organizations });
  for (const family of unlisted) {
    if (ids.length === 0) {
      check.out.push(
        `  ✗ ${family}: no organization list (GET /organizations answered 404) and no other family listed an organization: ` +
          "name the organization ids under the connection's organizations.",
      );
      check.worst = worseExitCode(check.worst, ExitCode.unexpected);
      continue;
    }
    check.out.push(
      `  ✓ ${family}: no organization list (GET /organizations answered 404); sync reads it for ${ids.length} organization(s):`,
    );
    for (const id of ids) check.out.push(`      ${id}`);
    check.reachable += ids.length;
    if (streams) await checkStreams(check, client, connection, family, ids[0]!);
  }
}

/**
 * Like a connector's `check`: for each connection, logs in (obtains a token), lists the
 * organizations of each family, and reads one record of each stream of the first organization,
 * so that refused credentials or a missing scope show up now rather than in the middle of a
 * sync. Refused credentials exit 3 and nothing else is tried; a missing scope exits 4.
 */
export function checkCommand(cli: Cli): Command {
  return new Command('check')
    .description('verify credentials and scopes: log in, list the organizations and streams each connection can reach')
    .option('--connection <name>', 'only this connection')
    .option('--no-streams', 'only list organizations (one request per family)')
    .action(async (flags: { connection?: string; streams: boolean }) => {
      const rt = loadRuntime(cli.global());
      // Which file was read (and whether the environment moved the warehouse): the first question when a check surprises.
      if (rt.configLocation) process.stdout.write(`${describeLocation(rt.configLocation, rt.warehouseFromEnv === true).join('\n')}\n`);
      let worst: ExitCode = ExitCode.ok;
      await withWarehouse(rt, async (warehouse) => {
        await migrateToLatest(warehouse);
        const limiters = new LimiterRegistry({
          clock: rt.clock,
          store: new WarehouseUsageStore(warehouse, () => rt.clock.now()),
          logger: rt.logger,
        });
        const registry = new TokenCacheRegistry({
          clock: rt.clock,
          secrets: rt.secrets,
          logger: rt.logger,
          regions: rt.config.regions,
          timeoutMs: rt.config.sync.request_timeout_ms,
        });
        for (const [index, connection] of rt.config.connections.entries()) {
          if (flags.connection && connection.name !== flags.connection) continue;
          const check: ConnectionCheck = { out: [], worst: ExitCode.ok, missingScopes: new Set(), reachable: 0 };
          check.out.push(`connection ${connection.name} (region ${connection.region}, plan ${connection.plan})`);
          const tokens = registry.for(connection, index);
          const login = await tryLogin(tokens);
          check.out.push(...loginLines(login).map((l) => `  ${l}`));
          if (login.result !== 'ok') {
            check.out.push('  nothing else was checked: every request needs a token');
            worst = worseExitCode(worst, loginExitCode(login));
            process.stdout.write(`${check.out.join('\n')}\n`);
            continue;
          }
          const client = new ApiClient({
            connection,
            settings: rt.config.sync,
            clock: rt.clock,
            logger: rt.logger,
            secrets: rt.secrets,
            limiters,
            tokens,
          });
          await checkFamilies(check, rt, client, connection, flags.streams);
          if (check.missingScopes.size)
            check.out.push(
              `  missing scope(s): ${[...check.missingScopes].join(', ')}: generate a grant code with every scope ` +
                '`svcsync auth scopes` prints, then `svcsync auth exchange` it for a new refresh token',
            );
          if (check.reachable === 0) check.worst = worseExitCode(check.worst, ExitCode.partial);
          check.out.push(`  ${client.stats().requests} request(s) used by this check`);
          worst = worseExitCode(worst, check.worst);
          process.stdout.write(`${check.out.join('\n')}\n`);
        }
        await limiters.flush();
      });
      cli.exit(worst);
    });
}
