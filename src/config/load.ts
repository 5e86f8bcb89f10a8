import { readFileSync, existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { isStreamName } from '../catalog/index.js';
import { ConfigError } from '../core/errors.js';
import type { SecretRegistry } from '../core/secrets.js';
import { configSchema, warehouseUrl, type Config } from './schema.js';

export const DEFAULT_CONFIG_PATH = './svcsync.yaml';

/** Keys whose values are secrets: registered for scrubbing, never echoed in errors. */
const SECRET_FIELDS = new Set(['client_secret', 'refresh_token', 'client_id_secret', 'password', 'webhook_secret']);

type Env = Record<string, string | undefined>;

/** `a.b[0].c` from a zod or walk path. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(top level)';
}

/**
 * Replaces `${NAME}` and `${NAME:-default}` in every string value (after YAML parsing, so a
 * secret full of YAML punctuation cannot break the file). A missing variable is a problem
 * naming the key and the variable, never the value around it.
 */
export function interpolateEnv(value: unknown, env: Env, problems: string[], path: PropertyKey[] = []): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      problems.push(`${formatPath(path)}: environment variable ${name} is not set (export it, or put the value in the file)`);
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, problems, [...path, i]));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolateEnv(v, env, problems, [...path, k]);
    return out;
  }
  return value;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = formatPath(issue.path);
  switch (issue.code) {
    case 'invalid_value':
      return `${where}: expected one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_type': {
      if (/received undefined/.test(issue.message)) return `${where}: is required (expected ${issue.expected})`;
      return `${where}: expected ${issue.expected}`;
    }
    case 'unrecognized_keys':
      return (
        `${where}: unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')} ` +
        '(see config/svcsync.example.yaml for the keys)'
      );
    case 'too_small':
      if (issue.origin === 'number') return `${where}: expected a number ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
      return `${where}: ${issue.message.replace(/^Too small: /, '')}`;
    case 'too_big':
      if (issue.origin === 'number') return `${where}: expected a number ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
      return `${where}: ${issue.message.replace(/^Too big: /, '')}`;
    case 'invalid_format':
      if (issue.format === 'url') return `${where}: expected a URL such as https://accounts.example.com`;
      // Custom messages (our regexes) already say what is expected.
      return `${where}: ${issue.format === 'regex' ? issue.message : `expected a valid ${issue.format}`}`;
    default:
      return `${where}: ${issue.message}`;
  }
}

/** Validates an already-parsed document; the messages name key paths and never values. */
export function parseConfig(document: unknown, options: { env?: Env; secrets?: SecretRegistry; source?: string } = {}): Config {
  const source = options.source ?? 'configuration';
  const problems: string[] = [];
  const interpolated = interpolateEnv(document ?? {}, options.env ?? process.env, problems);
  const result = configSchema.safeParse(interpolated);
  if (!result.success) {
    // A key whose environment variable is missing already has its problem; "must not be
    // empty" on top of it would only repeat it.
    const envPaths = new Set(problems.map((p) => p.slice(0, p.indexOf(':'))));
    for (const issue of result.error.issues) {
      if (!envPaths.has(formatPath(issue.path))) problems.push(describeIssue(issue));
    }
  }
  if (result.success) problems.push(...unknownStreams(result.data));
  if (problems.length) {
    throw new ConfigError(`${source} is not valid (${problems.length} problem${problems.length > 1 ? 's' : ''}):`, problems, {
      hint: 'Fix the keys named above; config/svcsync.example.yaml documents every key.',
    });
  }
  const config = result.data!;
  if (options.secrets) {
    for (const c of config.connections) {
      options.secrets.add(c.client_secret);
      options.secrets.add(c.refresh_token);
    }
  }
  return config;
}

/**
 * Stream names the catalog does not know, in a connection's `streams` or its per-stream
 * schedules: a typo there used to run nothing for the stream and exit 0.
 */
function unknownStreams(config: Config): string[] {
  const hint = '(`svcsync schema` lists them; write family.stream or stream, e.g. inventory.sales_orders)';
  const out: string[] = [];
  config.connections.forEach((c, i) =>
    (c.streams ?? []).forEach((name, j) => {
      if (!isStreamName(name)) out.push(`connections[${i}].streams[${j}]: unknown stream "${name}" ${hint}`);
    }),
  );
  const scheduled = (where: string, streams: Record<string, unknown> | undefined): void => {
    for (const name of Object.keys(streams ?? {})) if (!isStreamName(name)) out.push(`${where}.streams.${name}: unknown stream ${hint}`);
  };
  config.connections.forEach((c, i) => scheduled(`connections[${i}].schedules`, c.schedules?.streams));
  // Freshness targets are looked up by the qualified name: a bare one would never match.
  const targets = (where: string, streams: Record<string, unknown> | undefined): void => {
    for (const name of Object.keys(streams ?? {}))
      if (!name.includes('.') || !isStreamName(name)) out.push(`${where}.streams.${name}: unknown stream; write family.stream ${hint}`);
  };
  targets('daemon.freshness', config.daemon.freshness.streams);
  config.connections.forEach((c, i) => targets(`connections[${i}].freshness`, c.freshness?.streams));
  const history = (where: string, setting: Config['history'] | undefined): void => {
    if (!Array.isArray(setting)) return;
    setting.forEach((name, j) => {
      if (!isStreamName(name)) out.push(`${where}[${j}]: unknown stream "${name}" ${hint}`);
    });
  };
  history('history', config.history);
  config.connections.forEach((c, i) => history(`connections[${i}].history`, c.history));
  return out;
}

/**
 * The document with its warehouse URL replaced (`SVCSYNC_WAREHOUSE`): a `warehouse:` object keeps
 * its other keys (schemas, retries), a URL alone or no `warehouse:` becomes the URL.
 */
export function withWarehouseUrl(document: unknown, url: string): unknown {
  const checked = warehouseUrl.safeParse(url);
  if (!checked.success) {
    throw new ConfigError('SVCSYNC_WAREHOUSE is not a warehouse URL.', [], {
      hint: 'Set it to sqlite:PATH or postgres://USER@HOST:PORT/DB, or unset it to use the file\u2019s warehouse.',
    });
  }
  const doc = document && typeof document === 'object' && !Array.isArray(document) ? (document as Record<string, unknown>) : {};
  const current = doc['warehouse'];
  const warehouse =
    current && typeof current === 'object' && !Array.isArray(current) ? { ...(current as Record<string, unknown>), url } : url;
  return { ...doc, warehouse };
}

/** Reads YAML or JSON from disk and validates it; `warehouseUrl` replaces the file's warehouse URL. */
export function loadConfig(
  path: string = DEFAULT_CONFIG_PATH,
  options: { env?: Env; secrets?: SecretRegistry; warehouseUrl?: string } = {},
): Config {
  const full = resolve(path);
  if (!existsSync(full)) {
    throw new ConfigError(`No configuration file at ${full}.`, [], {
      hint: `Create one from config/svcsync.example.yaml, pass --config PATH, or try \`svcsync demo\` first.`,
    });
  }
  const text = readFileSync(full, 'utf8');
  let document: unknown;
  try {
    document = extname(full).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text, { prettyErrors: true });
  } catch (error) {
    const detail = parseErrorText(error);
    throw new ConfigError(`${path} could not be parsed: ${detail}`, [], { hint: 'Check the indentation and quoting near the line named.' });
  }
  if (options.warehouseUrl !== undefined) document = withWarehouseUrl(document, options.warehouseUrl);
  return parseConfig(document, { ...options, source: path });
}

/** What a parse failure says: a YAML error's first line, another error's message. */
function parseErrorText(error: unknown): string | undefined {
  if (error instanceof YAMLParseError) return error.message.split('\n')[0];
  return error instanceof Error ? error.message : String(error);
}

/** True for keys that hold secrets (used by anything that prints configuration). */
export function isSecretKey(key: string): boolean {
  return SECRET_FIELDS.has(key);
}
