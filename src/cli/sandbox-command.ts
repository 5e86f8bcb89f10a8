/** `svcsync sandbox`: run the local stand-in for the four API families until interrupted. */
import { Command, InvalidArgumentError, Option } from 'commander';
import { PLANS, PLAN_LIMITS, startSandbox, type Plan, type SandboxOptions } from '../sandbox/index.js';

function integer(name: string, min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    return n;
  };
}

function positive(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive number, got "${raw}"`);
    return n;
  };
}

function rate(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError(`${name} must be a rate between 0 and 1, got "${raw}"`);
    return n;
  };
}

interface Options {
  host: string;
  port: number;
  seed: number;
  scale: number;
  plan: Plan;
  timeScale: number;
  organizations: number;
  fault5xx?: number;
  fault429?: number;
  faultTruncated?: number;
  latencyMs?: number;
  tokenExpiresIn: number;
  unlimited?: boolean;
}

const q = (s: string): string => JSON.stringify(s);

export function sandboxCommand(): Command {
  return new Command('sandbox')
    .description('Serve a local stand-in for the books, inventory, invoice and billing APIs, with generated data, the spec limits and optional faults.')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', integer('--port', 0, 65535), 4010)
    .option('--seed <n>', 'seed of the generated data; same seed, same data', integer('--seed', -2147483648, 2147483647), 42)
    .option('--scale <n>', 'records per top-level stream per organization', integer('--scale', 0, 1_000_000), 1000)
    .addOption(new Option('--plan <plan>', 'plan whose limits apply').choices(PLANS).default('free'))
    .option('--time-scale <x>', 'sandbox time runs this many times faster than real time', positive('--time-scale'), 1)
    .option('--organizations <n>', 'number of organizations', integer('--organizations', 1, 99), 3)
    .option('--fault-5xx <rate>', 'share of requests answered 500/503', rate('--fault-5xx'))
    .option('--fault-429 <rate>', 'share of requests answered 429 beyond the limits', rate('--fault-429'))
    .option('--fault-truncated <rate>', 'share of 200 answers cut short mid-JSON', rate('--fault-truncated'))
    .option('--latency-ms <ms>', 'added latency per request, real milliseconds', integer('--latency-ms', 0, 600_000))
    .option('--token-expires-in <s>', 'access token lifetime in sandbox seconds', integer('--token-expires-in', 1, 86_400 * 365), 3600)
    .option('--unlimited', 'no rate, concurrency or daily limits')
    .action(async (o: Options) => {
      const options: SandboxOptions = {
        host: o.host,
        port: o.port,
        seed: o.seed,
        scale: o.scale,
        plan: o.plan,
        timeScale: o.timeScale,
        organizations: o.organizations,
        tokenExpiresIn: o.tokenExpiresIn,
        unlimited: o.unlimited ?? false,
        faults: {
          ...(o.fault5xx !== undefined ? { rate5xx: o.fault5xx } : {}),
          ...(o.fault429 !== undefined ? { rate429: o.fault429 } : {}),
          ...(o.faultTruncated !== undefined ? { rateTruncated: o.faultTruncated } : {}),
          ...(o.latencyMs !== undefined ? { latencyMs: o.latencyMs } : {}),
        },
      };
      const sb = await startSandbox(options);
      process.stdout.write(configSnippet(sb.url, sb.credentials, o, sb.organizations()));
      process.stderr.write(`sandbox listening on ${sb.url} (Ctrl-C to stop)\n`);
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          void sb.stop().then(resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
    });
}

export function configSnippet(
  url: string,
  credentials: { client_id: string; client_secret: string; refresh_token: string; redirect_uri: string },
  o: Pick<Options, 'plan' | 'timeScale' | 'unlimited'>,
  orgs: Array<{ organization_id: string; name: string }>,
): string {
  const limits = PLAN_LIMITS[o.plan];
  // The client measures real time; the sandbox's windows run timeScale times faster.
  const lines = [
    '# svcsync configuration for this sandbox',
    'warehouse: sqlite:./sandbox-warehouse.db',
    'connections:',
    '  - name: sandbox',
    `    accounts_url: ${q(url)}`,
    `    client_id: ${q(credentials.client_id)}`,
    `    client_secret: ${q(credentials.client_secret)}`,
    `    refresh_token: ${q(credentials.refresh_token)}`,
    `    redirect_uri: ${q(credentials.redirect_uri)}`,
    `    plan: ${o.plan}`,
    '    families: [books, inventory, invoice, billing]',
    '    limits:',
    `      per_minute: ${o.unlimited ? 1_000_000 : limits.per_minute}`,
    `      window_ms: ${Math.max(1, Math.round(60_000 / o.timeScale))}`,
    `      per_day: ${o.unlimited ? 1_000_000_000 : limits.per_day}`,
    `      concurrency: ${o.unlimited ? 64 : limits.concurrency}`,
    `    organizations: [${orgs.map((g) => q(g.organization_id)).join(', ')}]`,
    ...orgs.map((g) => `    #   ${g.organization_id}: ${g.name}`),
    '',
  ];
  return lines.join('\n');
}
