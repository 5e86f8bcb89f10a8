import { readFileSync, existsSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import { exchangeGrantCode, resolveAccountsUrl, revokeToken } from '../../api/oauth.js';
import { requiredScopes } from '../../api/scopes.js';
import { CATALOG } from '../../catalog/index.js';
import { interpolateEnv } from '../../config/load.js';
import { locateConfig } from '../../config/locate.js';
import { REGIONS, type Region } from '../../config/plans.js';
import { FAMILIES, type Family } from '../../catalog/families.js';
import type { ConnectionConfig } from '../../config/schema.js';
import { systemClock } from '../../core/clock.js';
import { ConfigError } from '../../core/errors.js';
import { SecretRegistry } from '../../core/secrets.js';
import { loadRuntime, type Cli } from '../runtime.js';

interface ExchangeFlags {
  code: string;
  connection?: string;
  clientId?: string;
  clientSecret?: string;
  region?: Region;
  accountsUrl?: string;
  redirectUri?: string;
}

/**
 * Client credentials for the exchange. A newcomer has no refresh token yet, so the config
 * file cannot be validated whole: flags and SVC_CLIENT_ID / SVC_CLIENT_SECRET come first,
 * then the named (or only) connection of the file, read leniently.
 */
function exchangeCredentials(
  cli: Cli,
  flags: ExchangeFlags,
): {
  connection: Pick<ConnectionConfig, 'region' | 'accounts_url' | 'name'>;
  clientId: string;
  clientSecret: string;
  redirectUri?: string | undefined;
} {
  let fromFile: Record<string, unknown> | undefined;
  // The file is optional here: the flags and SVC_CLIENT_* may carry everything.
  const path = optionalConfigPath(cli.global().config);
  if (path !== undefined && existsSync(path)) {
    const doc = interpolateEnv(parseYaml(readFileSync(path, 'utf8')) ?? {}, { ...process.env }, []) as {
      connections?: Array<Record<string, unknown>>;
    };
    const list = doc.connections ?? [];
    if (flags.connection) fromFile = list.find((c) => c['name'] === flags.connection);
    else if (list.length === 1) fromFile = list[0];
  }
  const pick = (flag: string | undefined, env: string, key: string): string | undefined => {
    const v = flag ?? process.env[env] ?? (typeof fromFile?.[key] === 'string' ? fromFile[key] : undefined);
    return v && v.trim() ? v : undefined;
  };
  const clientId = pick(flags.clientId, 'SVC_CLIENT_ID', 'client_id');
  const clientSecret = pick(flags.clientSecret, 'SVC_CLIENT_SECRET', 'client_secret');
  const problems: string[] = [];
  if (!clientId) problems.push('--client-id: required (or SVC_CLIENT_ID, or client_id in the config file)');
  if (!clientSecret) problems.push('--client-secret: required (or SVC_CLIENT_SECRET, or client_secret in the config file)');
  if (problems.length) throw new ConfigError('auth exchange needs the client credentials:', problems);
  const region = flags.region ?? (fromFile?.['region'] as Region | undefined) ?? 'us';
  const accountsUrl = flags.accountsUrl ?? (fromFile?.['accounts_url'] as string | undefined);
  return {
    connection: {
      name: (fromFile?.['name'] as string | undefined) ?? 'connection',
      region,
      ...(accountsUrl ? { accounts_url: accountsUrl } : {}),
    },
    clientId: clientId!,
    clientSecret: clientSecret!,
    redirectUri: flags.redirectUri ?? (fromFile?.['redirect_uri'] as string | undefined),
  };
}

/** Spec 5 and 8: refresh tokens a user may hold at once; past it the service deletes the oldest, in use or not. */
export const REFRESH_TOKENS_PER_USER = 20;

/** What `auth exchange` prints: the token, where it goes, and how not to lose it. */
export function exchangeMessage(
  result: { refresh_token: string; api_domain: string; scope?: string | undefined },
  connection: string,
): string {
  return [
    'Refresh token obtained. It does not expire until revoked; keep it out of the config file and out of version control.',
    'Put it in the environment where svcsync runs:',
    '',
    `  export SVC_REFRESH_TOKEN='${result.refresh_token}'`,
    '',
    'and reference it from svcsync.yaml:',
    '',
    '  connections:',
    `    - name: ${connection}`,
    `      client_id: \${SVC_CLIENT_ID}`,
    `      client_secret: \${SVC_CLIENT_SECRET}`,
    `      refresh_token: \${SVC_REFRESH_TOKEN}`,
    '',
    `Keep this token: the service keeps at most ${REFRESH_TOKENS_PER_USER} refresh tokens per user, and each exchange or`,
    're-consent (by svcsync or any other integration of the same user) makes a new one; beyond that it',
    'deletes the oldest, even one in use, and whatever used it is refused at its next token refresh (exit 3).',
    'Use one refresh token per user per integration: give this one to every svcsync process and',
    'connection of this user instead of exchanging again, run `svcsync auth exchange` again only if it is',
    'lost or revoked, and revoke one you no longer use (`svcsync auth revoke`).',
    '',
    `API domain: ${result.api_domain}${result.scope ? `; scopes granted: ${result.scope}` : ''}`,
    'Then run `svcsync check`.',
    '',
  ].join('\n');
}

export function authCommand(cli: Cli): Command {
  const auth = new Command('auth').description('obtain or revoke the refresh token svcsync uses');
  auth
    .command('exchange')
    .description('exchange a self-client grant code (authorization_code grant) for a refresh token and print what to put in the config')
    .requiredOption('--code <code>', 'the grant code generated in the developer console (single use, valid 60-120 s)')
    .option('--connection <name>', 'take the client id, secret and region from this connection of the config file')
    .option('--client-id <id>', 'client id (default: SVC_CLIENT_ID or the config file)')
    .option('--client-secret <secret>', 'client secret (default: SVC_CLIENT_SECRET or the config file)')
    .addOption(new Option('--region <region>', 'data center of the client').choices([...REGIONS]))
    .option('--accounts-url <url>', 'authorization server (overrides the region)')
    .option('--redirect-uri <uri>', 'only for clients registered with one')
    .action(async (flags: ExchangeFlags) => {
      const secrets = new SecretRegistry();
      secrets.add(flags.code);
      const creds = exchangeCredentials(cli, flags);
      secrets.add(creds.clientSecret);
      const accountsUrl = resolveAccountsUrl(creds.connection, undefined, 0);
      const result = await exchangeGrantCode({
        accountsUrl,
        clientId: creds.clientId,
        clientSecret: creds.clientSecret,
        code: flags.code,
        redirectUri: creds.redirectUri,
        secrets,
        clock: systemClock,
        timeoutMs: 30_000,
      });
      process.stdout.write(exchangeMessage(result, creds.connection.name));
    });
  auth
    .command('scopes')
    .description('print the READ scopes a grant code needs for svcsync to read every stream (comma-separated, for the developer console)')
    .addOption(
      new Option('--family <families>', 'only these families, comma-separated').default(FAMILIES.join(',')).argParser((text: string) => {
        const list = text
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean);
        const unknown = list.filter((f) => !(FAMILIES as readonly string[]).includes(f));
        if (unknown.length || list.length === 0)
          throw new InvalidArgumentError(`--family: ${unknown.join(', ') || '(none)'} is not a family (known: ${FAMILIES.join(', ')})`);
        return list.join(',');
      }),
    )
    .action((flags: { family: string }) => {
      const families = flags.family.split(',') as Family[];
      process.stdout.write(`${requiredScopes(CATALOG, families).join(',')}\n`);
    });
  auth
    .command('revoke')
    .description("revoke a connection's refresh token (svcsync cannot call the API with it afterwards)")
    .option('--connection <name>', 'the connection whose refresh token to revoke (default: the only one)')
    .action(async (flags: { connection?: string }) => {
      const rt = loadRuntime(cli.global());
      const list = rt.config.connections.filter((c) => !flags.connection || c.name === flags.connection);
      if (list.length !== 1) {
        throw new ConfigError(
          flags.connection
            ? `--connection ${flags.connection}: no connection has that name`
            : 'several connections are configured; name one with --connection',
          [],
          {
            hint: `Configured: ${rt.config.connections.map((c) => c.name).join(', ')}.`,
          },
        );
      }
      const connection = list[0]!;
      const accountsUrl = resolveAccountsUrl(connection, rt.config.regions, rt.config.connections.indexOf(connection));
      await revokeToken({ accountsUrl, token: connection.refresh_token, secrets: rt.secrets, clock: rt.clock, timeoutMs: 30_000 });
      process.stdout.write(
        `Revoked the refresh token of connection ${connection.name}. ` +
          'Remove it from the environment, and run `svcsync auth exchange --code ...` to get a new one.\n',
      );
    });
  return auth;
}

/** The configuration file `--config`, SVCSYNC_CONFIG or the lookup names, if any. */
function optionalConfigPath(flag: string | undefined): string | undefined {
  try {
    return locateConfig(flag).path;
  } catch {
    return undefined;
  }
}
