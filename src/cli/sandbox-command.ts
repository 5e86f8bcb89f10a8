/**
 * `svcsync sandbox`: run the local stand-in for the four API families until interrupted;
 * `svcsync sandbox mutate` changes the data of one running elsewhere (sandbox-mutate.ts).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  DEFAULT_MAX_VERSIONS,
  DEFAULT_VARIANTS,
  HOSTILE_VARIANTS,
  PLANS,
  PLAN_LIMITS,
  PRESETS,
  VARIANT_NAMES,
  resolveVariants,
  startSandbox,
  type Family,
  type Plan,
  type Preset,
  type SandboxOptions,
  type Variants,
} from '../../sandbox/index.js';
import { UNLIMITED_PER_DAY } from '../config/plans.js';
import { sandboxMutateCommand } from './sandbox-mutate.js';

function integer(name: string, min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || n < min || n > max)
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
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

const TRUE = ['true', '1', 'on', 'yes'];
const FALSE = ['false', '0', 'off', 'no'];

/**
 * `--variant name[=value]`, repeatable. Without a value a variant takes its hostile setting, or
 * `true` when the preset leaves a switch off; the others need a value.
 * Booleans take true/false (1/0, on/off, yes/no); rates a number from 0 to 1;
 * changeWhilePagingEvery an integer (0 = off); ignoreSort comma-separated family.stream names;
 * noOrganizationList comma-separated families.
 */
/**
 * A variant named without a value: its hostile setting, or `true` for a switch the preset
 * leaves off (without this, `--variant strictUndeclaredLists` quietly meant false); undefined
 * when only a value can say what is meant.
 */
function bareValue(key: keyof Variants): unknown {
  const hostile = HOSTILE_VARIANTS[key];
  if (JSON.stringify(hostile) !== JSON.stringify(DEFAULT_VARIANTS[key])) return hostile;
  return typeof hostile === 'boolean' ? true : undefined;
}

export function parseVariant(raw: string, previous: Partial<Variants> = {}): Partial<Variants> {
  const eq = raw.indexOf('=');
  const name = (eq < 0 ? raw : raw.slice(0, eq)).trim();
  const text = eq < 0 ? undefined : raw.slice(eq + 1).trim();
  const bad = (why: string): never => {
    throw new InvalidArgumentError(`--variant ${name}: ${why}, got "${raw}"`);
  };
  if (!(VARIANT_NAMES as string[]).includes(name)) bad(`unknown variant (known: ${VARIANT_NAMES.join(', ')})`);
  const key = name as keyof Variants;
  let value: unknown;
  if (text === undefined) value = bareValue(key) ?? bad('the hostile preset leaves it off: give a value, as name=value');
  else if (key === 'ignoreSort' || key === 'noOrganizationList') value = text === '' ? [] : text.split(',').map((t) => t.trim());
  else if (typeof DEFAULT_VARIANTS[key] === 'boolean') {
    const t = text.toLowerCase();
    if (TRUE.includes(t)) value = true;
    else if (FALSE.includes(t)) value = false;
    else bad('must be true or false');
  } else {
    value = /^\d+(\.\d+)?$|^\.\d+$/.test(text) ? Number(text) : bad('must be a number');
  }
  const next = { ...previous, [key]: value } as Partial<Variants>;
  try {
    resolveVariants(undefined, { [key]: value });
  } catch (e) {
    bad((e as Error).message.replace(/^variants\.\w+:? ?/, ''));
  }
  return next;
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
  faultRevokeEvery?: number;
  latencyMs?: number;
  tokenExpiresIn: number;
  unlimited?: boolean;
  preset: Preset;
  variant?: Partial<Variants>;
  maxVersions: number;
}

const q = (s: string): string => JSON.stringify(s);

export function sandboxCommand(): Command {
  return new Command('sandbox')
    .description(
      'Serve a local stand-in for the books, inventory, invoice and billing APIs, ' +
        'with generated data, the spec limits and optional faults.',
    )
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
    .option(
      '--fault-revoke-every <s>',
      'revoke the access token in use once every this many sandbox seconds',
      integer('--fault-revoke-every', 0, 86_400 * 365),
    )
    .option('--latency-ms <ms>', 'added latency per request, real milliseconds', integer('--latency-ms', 0, 600_000))
    .option('--token-expires-in <s>', 'access token lifetime in sandbox seconds', integer('--token-expires-in', 1, 86_400 * 365), 3600)
    .option('--unlimited', 'no rate, concurrency or daily limits')
    .addOption(new Option('--preset <preset>', 'hostile: every variant on at its hostile setting').choices(PRESETS).default('default'))
    .option(
      '--variant <name[=value]>',
      `take the other choice where the spec is open (repeatable; without a value, the hostile setting): ${VARIANT_NAMES.join(', ')}`,
      parseVariant,
    )
    .option(
      '--max-versions <n>',
      'past record versions kept for truth at an instant, all organizations together',
      integer('--max-versions', 0, 100_000_000),
      DEFAULT_MAX_VERSIONS,
    )
    .addCommand(sandboxMutateCommand())
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
          ...(o.faultRevokeEvery !== undefined ? { revokeEverySeconds: o.faultRevokeEvery } : {}),
          ...(o.latencyMs !== undefined ? { latencyMs: o.latencyMs } : {}),
        },
        preset: o.preset,
        ...(o.variant ? { variants: o.variant } : {}),
        maxVersions: o.maxVersions,
      };
      const sb = await startSandbox(options);
      process.stdout.write(configSnippet(sb.url, sb.credentials, o, sb.organizations(), sb.variants));
      process.stderr.write(
        `sandbox listening on ${sb.url} (Ctrl-C to stop); change its data with \`svcsync sandbox mutate --url ${sb.url} --modify 5%\`\n`,
      );
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
  orgs: Array<{ organization_id: string; name: string; ids?: Record<Family, string> }>,
  variants?: Variants,
): string {
  const limits = PLAN_LIMITS[o.plan];
  // With per-family organization ids, every family's id must pass the organizations filter.
  const ids: string[] = [];
  const named: string[] = [];
  for (const g of orgs) {
    const byId = new Map<string, Family[]>();
    for (const [family, id] of Object.entries(g.ids ?? { books: g.organization_id }) as Array<[Family, string]>)
      byId.set(id, [...(byId.get(id) ?? []), family]);
    if (!byId.has(g.organization_id)) byId.set(g.organization_id, []);
    for (const [id, families] of byId) {
      if (ids.includes(id)) continue;
      ids.push(id);
      named.push(`    #   ${id}: ${g.name}${byId.size > 1 ? ` (${families.join(', ')})` : ''}`);
    }
  }
  const on = variants ? VARIANT_NAMES.filter((k) => JSON.stringify(variants[k]) !== JSON.stringify(DEFAULT_VARIANTS[k])) : [];
  // The client measures real time; the sandbox's windows run timeScale times faster.
  const lines = [
    '# svcsync configuration for this sandbox',
    ...(on.length ? [`# sandbox variants: ${on.map((k) => `${k}=${JSON.stringify(variants?.[k])}`).join(' ')}`] : []),
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
    `      per_day: ${o.unlimited ? UNLIMITED_PER_DAY : limits.per_day}`,
    `      concurrency: ${o.unlimited ? 64 : limits.concurrency}`,
    `    organizations: [${ids.map(q).join(', ')}]`,
    ...named,
    '',
  ];
  return lines.join('\n');
}
