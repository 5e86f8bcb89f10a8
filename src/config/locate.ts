import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError } from '../core/errors.js';
import type { SecretRegistry } from '../core/secrets.js';
import { loadConfig } from './load.js';
import type { Config } from './schema.js';

type Env = Record<string, string | undefined>;

/** The environment variable naming the configuration file (containers set it instead of --config). */
export const CONFIG_ENV = 'SVCSYNC_CONFIG';
/** The environment variable that replaces the file's `warehouse` URL (its other warehouse keys stay). */
export const WAREHOUSE_ENV = 'SVCSYNC_WAREHOUSE';

/** Where the configuration came from: `--config`, `SVCSYNC_CONFIG`, or the first file of the lookup. */
export interface ConfigLocation {
  /** Absolute path of the file read. */
  path: string;
  from: 'flag' | 'env' | 'lookup';
  /** The lookup's files, in order (empty when a flag or the variable named the file). */
  searched: string[];
}

export interface LocateOptions {
  env?: Env;
  cwd?: string;
  home?: string;
  /** The system-wide folder, `/etc/svcsync` (tests point it elsewhere). */
  systemDir?: string;
}

/**
 * The files looked at when neither `--config` nor `SVCSYNC_CONFIG` names one: `./svcsync.yaml`,
 * then `$XDG_CONFIG_HOME/svcsync/svcsync.yaml` (`~/.config` when unset or not absolute, as the
 * XDG base directory specification says), then `/etc/svcsync/svcsync.yaml`.
 */
export function configSearchPath(options: LocateOptions = {}): string[] {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const xdg = env['XDG_CONFIG_HOME'];
  const configHome = xdg && isAbsolute(xdg) ? xdg : join(options.home ?? homedir(), '.config');
  return [
    resolve(cwd, 'svcsync.yaml'),
    join(configHome, 'svcsync', 'svcsync.yaml'),
    join(options.systemDir ?? '/etc/svcsync', 'svcsync.yaml'),
  ];
}

/** The configuration file to read, or a ConfigError naming every place looked at. */
export function locateConfig(flag: string | undefined, options: LocateOptions = {}): ConfigLocation {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  if (flag !== undefined && flag !== '') return { path: resolve(cwd, flag), from: 'flag', searched: [] };
  const named = env[CONFIG_ENV];
  if (named !== undefined && named !== '') return { path: resolve(cwd, named), from: 'env', searched: [] };
  const searched = configSearchPath(options);
  const found = searched.find((p) => existsSync(p));
  if (found === undefined) {
    throw new ConfigError('No configuration file found. Looked for:', searched, {
      hint:
        `Create one from config/svcsync.example.yaml in one of these places, name it with --config PATH or ${CONFIG_ENV}, ` +
        'or try `svcsync demo` first.',
    });
  }
  return { path: found, from: 'lookup', searched };
}

/** What `svcsync check` says about where its configuration came from. */
export function describeLocation(location: ConfigLocation, warehouseFromEnv: boolean): string[] {
  const how = {
    flag: 'named by --config',
    env: `named by ${CONFIG_ENV}`,
    lookup: `found by the lookup (${location.searched.join(', then ')})`,
  }[location.from];
  const lines = [`configuration: ${location.path} (${how})`];
  if (warehouseFromEnv) lines.push(`warehouse: from ${WAREHOUSE_ENV}, in place of the file's warehouse URL`);
  return lines;
}

export interface LocatedConfig {
  config: Config;
  location: ConfigLocation;
  /** Whether `SVCSYNC_WAREHOUSE` replaced the file's warehouse URL. */
  warehouseFromEnv: boolean;
}

/** Finds the configuration (flag, variable, lookup), reads it, and applies `SVCSYNC_WAREHOUSE`. */
export function loadLocatedConfig(flag: string | undefined, options: LocateOptions & { secrets?: SecretRegistry } = {}): LocatedConfig {
  const env = options.env ?? process.env;
  const location = locateConfig(flag, options);
  const warehouse = env[WAREHOUSE_ENV];
  const warehouseFromEnv = warehouse !== undefined && warehouse !== '';
  const config = loadConfig(location.path, {
    env,
    ...(options.secrets ? { secrets: options.secrets } : {}),
    ...(warehouseFromEnv ? { warehouseUrl: warehouse } : {}),
  });
  return { config, location, warehouseFromEnv };
}
