import { resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, CompiledQuery, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { ConfigError } from '../core/errors.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Warehouse {
  // Data tables are defined by the catalog at run time, so queries against them are built
  // from catalog names; the typed view of the internal tables lives in src/state.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  db: Kysely<any>;
  dialect: Dialect;
  /** The URL without any password, for messages and logs. */
  displayUrl: string;
  close(): Promise<void>;
}

/** Masks a password in a postgres URL so it can be shown. */
export function displayWarehouseUrl(url: string): string {
  return url.replace(/(postgres(?:ql)?:\/\/[^:/@]+):[^@]*@/, '$1:***@');
}

// Postgres sends int8 and date as text by default; ints that fit a double become numbers,
// and dates stay yyyy-mm-dd text (a Date would shift them by the local zone).
let pgTypesSet = false;
function setPgTypeParsers(): void {
  if (pgTypesSet) return;
  pgTypesSet = true;
  pg.types.setTypeParser(20, (v: string) => {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : v;
  });
  pg.types.setTypeParser(1082, (v: string) => v);
}

/**
 * Kysely prepares every query anew; a page of upserts repeats the same few statements, and
 * preparing a 200-row insert costs more than running it. Statements are kept by their text
 * (values are always bound parameters, so the texts are few), least recently used dropped.
 */
export function withStatementCache(database: SQLite.Database, size = 256): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => {
      cache.clear();
      database.close();
    },
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (stmt) {
        cache.delete(sql);
      } else {
        stmt = database.prepare(sql);
        if (cache.size >= size) cache.delete(cache.keys().next().value as string);
      }
      cache.set(sql, stmt);
      return stmt as unknown as SqliteStatement;
    },
  };
}

export async function openWarehouse(url: string, options: { poolSize?: number } = {}): Promise<Warehouse> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length) || './warehouse.db';
    const file = path === ':memory:' ? path : resolve(path);
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    let database: SQLite.Database;
    try {
      database = new SQLite(file);
    } catch (error) {
      throw new ConfigError(`Cannot open the SQLite warehouse at ${file}: ${(error as Error).message}`, [], {
        hint: 'Check that the folder exists and is writable, or set `warehouse:` to another path.',
      });
    }
    // WAL lets `svcsync status` read while a sync writes; NORMAL sync is durable at
    // checkpoints and keeps per-page commits cheap.
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    database.pragma('busy_timeout = 10000');
    database.pragma('foreign_keys = OFF');
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
    return { db, dialect: 'sqlite', displayUrl: `sqlite:${file}`, close: () => db.destroy() };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    setPgTypeParsers();
    const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
    try {
      await db.executeQuery(CompiledQuery.raw('SELECT 1'));
    } catch (error) {
      await db.destroy().catch(() => undefined);
      throw new ConfigError(`Cannot connect to the Postgres warehouse at ${displayWarehouseUrl(url)}: ${(error as Error).message}`, [], {
        hint: 'Check that the server is running and that the URL, user and database in `warehouse:` are right.',
      });
    }
    return { db, dialect: 'postgres', displayUrl: displayWarehouseUrl(url), close: () => db.destroy() };
  }
  throw new ConfigError(`warehouse: "${url}" is not supported`, [], { hint: 'Use sqlite:PATH or postgres://USER@HOST:PORT/DB.' });
}
