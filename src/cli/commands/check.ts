import { Command } from 'commander';
import { ApiClient, TokenCacheRegistry } from '../../api/client.js';
import { scopeFor } from '../../api/families.js';
import { LimiterRegistry } from '../../api/limiter.js';
import { CATALOG } from '../../catalog/index.js';
import { isOrganizationList, qualifiedName, type StreamSpec } from '../../catalog/types.js';
import type { Family } from '../../catalog/families.js';
import { AuthorizationError, ExitCode, describeError } from '../../core/errors.js';
import { describeLocation } from '../../config/locate.js';
import { hasNoOrganizationList, organizationsForUnlistedFamily } from '../../extractors/discovery.js';
import { listOrganizations } from '../../extractors/discovery.js';
import { recordsOf } from '../../extractors/pager.js';
import { migrateToLatest } from '../../loaders/migrate.js';
import { WarehouseUsageStore } from '../../state/usage-store.js';
import { loadRuntime, withWarehouse, type Cli } from '../runtime.js';

/**
 * Like a connector's `check`: for each connection, obtains a token, lists the organizations
 * of each family, and reads one record of each stream of the first organization, so that a
 * missing scope shows up now rather than in the middle of a sync.
 */
export function checkCommand(cli: Cli): Command {
  return new Command('check')
    .description('verify credentials and scopes: list the organizations and streams each connection can reach')
    .option('--connection <name>', 'only this connection')
    .option('--no-streams', 'only list organizations (one request per family)')
    .action(async (flags: { connection?: string; streams: boolean }) => {
      const rt = loadRuntime(cli.global());
      // Which file was read (and whether the environment moved the warehouse): the first question when a check surprises.
      if (rt.configLocation) process.stdout.write(`${describeLocation(rt.configLocation, rt.warehouseFromEnv === true).join('\n')}\n`);
      let worst: number = ExitCode.ok;
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
          const out: string[] = [`connection ${connection.name} (region ${connection.region}, plan ${connection.plan})`];
          const tokens = registry.for(connection, index);
          const client = new ApiClient({
            connection,
            settings: rt.config.sync,
            clock: rt.clock,
            logger: rt.logger,
            secrets: rt.secrets,
            limiters,
            tokens,
          });
          let reachable = 0;
          // check is short and read-only: nothing asks it to stop.
          const unstopped = new AbortController().signal;
          const checkStreams = async (family: Family, orgId: string): Promise<void> => {
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
                out.push(`      ✓ ${qualifiedName(s)}${scope ? ` (${scope})` : ''}`);
              } catch (error) {
                out.push(`      ✗ ${qualifiedName(s)}${scope ? ` — scope ${scope}` : ''}: ${describeError(error).split('\n').join(' ')}`);
                if (error instanceof AuthorizationError && worst === ExitCode.ok) worst = ExitCode.authorization;
                else if (!(error instanceof AuthorizationError)) worst = worst === ExitCode.ok ? ExitCode.partial : worst;
              }
            }
          };
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
              if (hasNoOrganizationList(error)) {
                unlisted.push(family);
                continue;
              }
              // The scope is worth naming only when the token was refused; a network failure is not about scopes.
              const scope = error instanceof AuthorizationError ? scopeFor(family, 'GET', orgStream.path) : undefined;
              const needs = scope ? ` (needs scope ${scope})` : '';
              out.push(`  ✗ ${family}: cannot list organizations${needs}: ${describeError(error).split('\n').join(' ')}`);
              if (error instanceof AuthorizationError && worst === ExitCode.ok) worst = ExitCode.authorization;
              else if (!(error instanceof AuthorizationError)) worst = ExitCode.unexpected;
              continue;
            }
            for (const o of orgs) {
              const id = String(o['organization_id']);
              if (!listed.has(id) || o['is_org_active'] !== false) listed.set(id, o);
            }
            const wanted = orgs.filter((o) => !connection.organizations || connection.organizations.includes(String(o['organization_id'])));
            reachable += wanted.length;
            out.push(`  ✓ ${family}: ${wanted.length} organization(s)${connection.organizations ? ' (of the configured ones)' : ''}`);
            for (const o of wanted) {
              // The API's organization name is text (a number is shown as is); anything else shows nothing.
              const name = o['name'];
              const shownName = typeof name === 'string' || typeof name === 'number' ? String(name) : '';
              out.push(`      ${String(o['organization_id'])}  ${shownName}${o['is_org_active'] === false ? '  (inactive)' : ''}`);
            }
            const first = wanted.find((o) => o['is_org_active'] !== false);
            if (flags.streams && first) await checkStreams(family, String(first['organization_id']));
          }
          const ids = organizationsForUnlistedFamily({ listed, wanted: connection.organizations });
          for (const family of unlisted) {
            if (ids.length === 0) {
              out.push(
                `  ✗ ${family}: no organization list (GET /organizations answered 404) and no other family listed an organization: ` +
                  "name the organization ids under the connection's organizations.",
              );
              worst = ExitCode.unexpected;
              continue;
            }
            out.push(
              `  ✓ ${family}: no organization list (GET /organizations answered 404); sync reads it for ${ids.length} organization(s):`,
            );
            for (const id of ids) out.push(`      ${id}`);
            reachable += ids.length;
            if (flags.streams) await checkStreams(family, ids[0]!);
          }
          if (reachable === 0 && worst === ExitCode.ok) worst = ExitCode.partial;
          const used = client.stats().requests;
          out.push(`  ${used} request(s) used by this check`);
          process.stdout.write(`${out.join('\n')}\n`);
        }
        await limiters.flush();
      });
      cli.exit(worst);
    });
}
