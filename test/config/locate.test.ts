import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { configSearchPath, describeLocation, loadLocatedConfig, locateConfig } from '../../src/config/locate.js';
import { ConfigError } from '../../src/core/errors.js';

const CONNECTION = [
  'connections:',
  '  - name: acme',
  '    region: eu',
  '    client_id: id',
  '    client_secret: s3cret-value',
  '    refresh_token: r3fresh-value',
];

describe('where the configuration is found', () => {
  let root: string;
  let cwd: string;
  let home: string;
  let xdg: string;
  let systemDir: string;
  const file = (path: string, lines: string[] = ['warehouse: sqlite:./from-file.db', ...CONNECTION]): string => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, `${lines.join('\n')}\n`);
    return path;
  };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'svcsync-locate-'));
    cwd = join(root, 'work');
    home = join(root, 'home');
    xdg = join(root, 'xdg');
    systemDir = join(root, 'etc', 'svcsync');
    for (const d of [cwd, home, xdg, systemDir]) mkdirSync(d, { recursive: true });
  });
  const options = (env: Record<string, string | undefined> = {}) => ({ env, cwd, home, systemDir });

  it('looks in ./svcsync.yaml, then $XDG_CONFIG_HOME/svcsync/, then /etc/svcsync/', () => {
    expect(configSearchPath(options({ XDG_CONFIG_HOME: xdg }))).toEqual([
      join(cwd, 'svcsync.yaml'),
      join(xdg, 'svcsync', 'svcsync.yaml'),
      join(systemDir, 'svcsync.yaml'),
    ]);
    // Unset, or not an absolute path (the XDG specification says to ignore it then): ~/.config.
    for (const value of [undefined, '', 'relative/dir'])
      expect(configSearchPath(options({ XDG_CONFIG_HOME: value }))[1]).toBe(join(home, '.config', 'svcsync', 'svcsync.yaml'));
    expect(configSearchPath({ env: {}, cwd, home })[2]).toBe('/etc/svcsync/svcsync.yaml');
  });

  it('takes the first file of the lookup that exists', () => {
    const system = file(join(systemDir, 'svcsync.yaml'));
    expect(locateConfig(undefined, options({ XDG_CONFIG_HOME: xdg }))).toMatchObject({ path: system, from: 'lookup' });
    const user = file(join(xdg, 'svcsync', 'svcsync.yaml'));
    expect(locateConfig(undefined, options({ XDG_CONFIG_HOME: xdg })).path).toBe(user);
    // Without XDG_CONFIG_HOME the user's file is under ~/.config, which holds none yet.
    expect(locateConfig(undefined, options({})).path).toBe(system);
    const local = file(join(cwd, 'svcsync.yaml'));
    expect(locateConfig(undefined, options({ XDG_CONFIG_HOME: xdg }))).toEqual({
      path: local,
      from: 'lookup',
      searched: configSearchPath(options({ XDG_CONFIG_HOME: xdg })),
    });
  });

  it('SVCSYNC_CONFIG names the file ahead of the lookup, and --config ahead of both', () => {
    file(join(cwd, 'svcsync.yaml'));
    const named = file(join(root, 'mounted', 'config.yaml'));
    expect(locateConfig(undefined, options({ SVCSYNC_CONFIG: named }))).toEqual({ path: named, from: 'env', searched: [] });
    // A relative name is taken from the working directory.
    expect(locateConfig(undefined, options({ SVCSYNC_CONFIG: '../mounted/config.yaml' })).path).toBe(named);
    expect(locateConfig('other.yaml', options({ SVCSYNC_CONFIG: named }))).toEqual({
      path: join(cwd, 'other.yaml'),
      from: 'flag',
      searched: [],
    });
    // An empty variable names nothing.
    expect(locateConfig(undefined, options({ SVCSYNC_CONFIG: '' })).from).toBe('lookup');
  });

  it('no file anywhere: a configuration error naming every place it looked', () => {
    let error: unknown;
    try {
      locateConfig(undefined, options({ XDG_CONFIG_HOME: xdg }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = `${(error as ConfigError).message} ${(error as ConfigError).problems.join(' ')} ${(error as ConfigError).hint ?? ''}`;
    for (const p of configSearchPath(options({ XDG_CONFIG_HOME: xdg }))) expect(text).toContain(p);
    expect(text).toContain('SVCSYNC_CONFIG');
  });

  it('SVCSYNC_WAREHOUSE replaces the warehouse URL and keeps the file\u2019s other warehouse keys', () => {
    const plain = file(join(cwd, 'plain.yaml'));
    const url = 'postgres://svcsync@db.internal:5432/warehouse';
    const moved = loadLocatedConfig(plain, { env: { SVCSYNC_WAREHOUSE: url }, cwd });
    expect(moved.warehouseFromEnv).toBe(true);
    expect(moved.config.warehouse.url).toBe(url);
    expect(loadLocatedConfig(plain, { env: {}, cwd })).toMatchObject({
      warehouseFromEnv: false,
      config: { warehouse: { url: 'sqlite:./from-file.db' } },
    });

    const detailed = file(join(cwd, 'detailed.yaml'), [
      'warehouse:',
      '  url: postgres://svcsync@localhost/w',
      '  schema: raw',
      '  views_schema: analytics',
      '  retry_s: 5',
      ...CONNECTION,
    ]);
    expect(loadLocatedConfig(detailed, { env: { SVCSYNC_WAREHOUSE: url }, cwd }).config.warehouse).toMatchObject({
      url,
      schema: 'raw',
      views_schema: 'analytics',
      retry_s: 5,
    });

    const none = file(join(cwd, 'none.yaml'), CONNECTION);
    expect(loadLocatedConfig(none, { env: { SVCSYNC_WAREHOUSE: 'sqlite:/data/w.db' }, cwd }).config.warehouse.url).toBe(
      'sqlite:/data/w.db',
    );
  });

  it('a SVCSYNC_WAREHOUSE that is not a warehouse URL is named, never echoed', () => {
    const plain = file(join(cwd, 'plain.yaml'));
    expect(() => loadLocatedConfig(plain, { env: { SVCSYNC_WAREHOUSE: 'mysql://root:hunter2@db/w' }, cwd })).toThrowError(ConfigError);
    try {
      loadLocatedConfig(plain, { env: { SVCSYNC_WAREHOUSE: 'mysql://root:hunter2@db/w' }, cwd });
    } catch (e) {
      const error = e as ConfigError;
      expect(error.message).toContain('SVCSYNC_WAREHOUSE');
      expect(`${error.message} ${error.hint ?? ''}`).not.toContain('hunter2');
    }
  });

  it('says where the configuration came from', () => {
    const searched = configSearchPath(options({}));
    expect(describeLocation({ path: searched[0]!, from: 'lookup', searched }, false)).toEqual([
      `configuration: ${searched[0]} (found by the lookup (${searched.join(', then ')}))`,
    ]);
    expect(describeLocation({ path: '/run/cfg.yaml', from: 'env', searched: [] }, true)).toEqual([
      'configuration: /run/cfg.yaml (named by SVCSYNC_CONFIG)',
      "warehouse: from SVCSYNC_WAREHOUSE, in place of the file's warehouse URL",
    ]);
  });
});
