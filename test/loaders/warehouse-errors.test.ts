import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ExitCode, exitCodeFor, WarehouseError, type WarehouseFault } from '../../src/core/errors.js';
import { classifyWarehouseError, faultOf, tableOfStatement, type WarehouseTarget } from '../../src/loaders/warehouse-errors.js';
import { PG_BASE_URL } from '../helpers/dialects.js';

const dir = mkdtempSync(join(tmpdir(), 'svcsync-faults-'));
const SQLITE_TARGET: WarehouseTarget = { dialect: 'sqlite', displayUrl: `sqlite:${join(dir, 'w.db')}` };
const PG_TARGET: WarehouseTarget = { dialect: 'postgres', displayUrl: 'postgres://svc:***@db.example:5432/warehouse' };

/** The error a statement throws. */
function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the statement to fail');
}

async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}

describe('classifyWarehouseError: real SQLite failures', () => {
  const fresh = (name: string): SQLite.Database => new SQLite(join(dir, name));

  it('a full file (max_page_count) is disk_full, names the file and its folder, exit 4', () => {
    const db = fresh('full.db');
    db.exec('CREATE TABLE t (x TEXT)');
    db.pragma('max_page_count = 3');
    const raw = thrownBy(() => {
      for (let i = 0; i < 100; i++) db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(4000));
    });
    const e = classifyWarehouseError(raw, SQLITE_TARGET, 'INSERT INTO "t" ("x") VALUES (?)');
    expect(e.fault).toBe('disk_full');
    expect(e.message).toContain(join(dir, 'w.db'));
    expect(e.message).toContain('(table t)');
    expect(e.hint).toContain(`free space on the disk that holds ${dir}`);
    expect(e.retriable).toBe(false);
    expect(exitCodeFor(e)).toBe(ExitCode.partial);
  });

  it('a write to a file opened read-only is read_only, exit 2', () => {
    fresh('ro.db').exec('CREATE TABLE t (x TEXT)');
    const db = new SQLite(join(dir, 'ro.db'), { readonly: true });
    const e = classifyWarehouseError(
      thrownBy(() => db.exec("INSERT INTO t VALUES ('a')")),
      SQLITE_TARGET,
    );
    expect(e.fault).toBe('read_only');
    expect(e.hint).toMatch(/writable/);
    expect(exitCodeFor(e)).toBe(ExitCode.config);
  });

  it("another connection's write lock past the busy timeout is locked: transient, and says another program holds it", () => {
    fresh('lock.db').exec('CREATE TABLE t (x TEXT)');
    const holder = new SQLite(join(dir, 'lock.db'));
    holder.exec('BEGIN IMMEDIATE');
    const waiter = new SQLite(join(dir, 'lock.db'), { timeout: 10 });
    const e = classifyWarehouseError(
      thrownBy(() => waiter.exec("INSERT INTO t VALUES ('a')")),
      SQLITE_TARGET,
    );
    holder.exec('ROLLBACK');
    expect(e.fault).toBe('locked');
    expect(e.retriable).toBe(true);
    expect(e.message).toContain('another program holds a write lock');
  });

  it('a file that is not a database is not_a_database, exit 2', () => {
    writeFileSync(join(dir, 'notes.txt'), 'warehouse: sqlite:./w.db\n'.repeat(200));
    const db = new SQLite(join(dir, 'notes.txt'));
    const e = classifyWarehouseError(
      thrownBy(() => db.pragma('journal_mode = WAL')),
      SQLITE_TARGET,
    );
    expect(e.fault).toBe('not_a_database');
    expect(exitCodeFor(e)).toBe(ExitCode.config);
  });

  it('a file in a folder that does not exist is missing_folder, exit 2', () => {
    const e = classifyWarehouseError(
      thrownBy(() => new SQLite(join(dir, 'no', 'such', 'w.db'), { fileMustExist: false })),
      SQLITE_TARGET,
    );
    expect(e.fault).toBe('missing_folder');
    expect(exitCodeFor(e)).toBe(ExitCode.config);
  });
});

describe('classifyWarehouseError: real Postgres failures', () => {
  const client = async (url = PG_BASE_URL): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => undefined);
    await c.connect();
    return c;
  };

  it('a statement past statement_timeout names the table and the setting; transient', async () => {
    const c = await client();
    await c.query('SET statement_timeout = 50');
    const raw = await rejectionOf(c.query('SELECT pg_sleep(1)'));
    await c.end();
    const e = classifyWarehouseError(raw, PG_TARGET, 'UPDATE "inventory_contacts" SET "_deleted_at" = $1');
    expect(e.fault).toBe('statement_timeout');
    expect(e.message).toContain('table inventory_contacts');
    expect(e.message).toContain('statement_timeout');
    expect(e.hint).toContain('statement_timeout');
    expect(e.retriable).toBe(true);
  });

  it('a session ended by pg_terminate_backend is connection_lost; transient', async () => {
    const victim = await client();
    const admin = await client();
    const pid = (victim as unknown as { processID: number }).processID;
    const pending = rejectionOf(victim.query('SELECT pg_sleep(5)'));
    await new Promise((r) => setTimeout(r, 100));
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await admin.end();
    const e = classifyWarehouseError(await pending, PG_TARGET);
    expect(e.fault).toBe('connection_lost');
    expect(e.retriable).toBe(true);
    expect(e.message).toContain('postgres://svc:***@db.example:5432/warehouse');
  });

  it('a lock past lock_timeout is lock_timeout; transient', async () => {
    const holder = await client();
    const waiter = await client();
    const table = `lock_probe_${process.pid}_${Date.now()}`;
    await holder.query(`CREATE TABLE ${table} (x int)`);
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    await waiter.query('SET lock_timeout = 50');
    const raw = await rejectionOf(waiter.query(`SELECT * FROM ${table}`));
    await holder.query('ROLLBACK');
    await holder.query(`DROP TABLE ${table}`);
    await holder.end();
    await waiter.end();
    const e = classifyWarehouseError(raw, PG_TARGET, `SELECT * FROM "${table}"`);
    expect(e.fault).toBe('lock_timeout');
    expect(e.message).toContain(`table ${table}`);
    expect(e.retriable).toBe(true);
  });

  it('an unknown database is unknown_database, exit 2', async () => {
    const url = new URL(PG_BASE_URL);
    url.pathname = '/svcsync_no_such_database';
    const raw = await rejectionOf(client(url.toString()));
    const e = classifyWarehouseError(raw, PG_TARGET);
    expect(e.fault).toBe('unknown_database');
    expect(exitCodeFor(e)).toBe(ExitCode.config);
  });

  it('a refused connection (nothing listens) is connection_lost; transient', async () => {
    const raw = await rejectionOf(client('postgres://postgres@127.0.0.1:1/test'));
    expect(classifyWarehouseError(raw, PG_TARGET).fault).toBe('connection_lost');
  });
});

describe('faultOf: codes that are hard to cause on a shared server', () => {
  const withCode = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });
  const cases: Array<[string, unknown, WarehouseFault]> = [
    ['Postgres disk full', withCode('53100', 'could not extend file'), 'disk_full'],
    ['Postgres read-only transaction (a standby)', withCode('25006', 'cannot execute INSERT in a read-only transaction'), 'read_only'],
    ['Postgres starting up', withCode('57P03', 'the database system is starting up'), 'shutting_down'],
    ['Postgres crash shutdown', withCode('57P02'), 'shutting_down'],
    ['Postgres smart shutdown', withCode('57P01', 'terminating connection due to administrator command: shutdown'), 'shutting_down'],
    ['Postgres too many connections', withCode('53300'), 'too_many_connections'],
    ['Postgres deadlock', withCode('40P01'), 'conflict'],
    ['Postgres wrong password', withCode('28P01'), 'permission'],
    ['Postgres missing grant', withCode('42501'), 'permission'],
    ['a write to a read-only file system', withCode('EROFS'), 'read_only'],
    ['no permission on the folder', withCode('EACCES'), 'permission'],
    ['a path through a file', withCode('ENOTDIR'), 'missing_folder'],
    ['a full file system', withCode('ENOSPC'), 'disk_full'],
    ['an unknown host', withCode('ENOTFOUND'), 'unreachable'],
    ['pg: a dead client', new Error('Client has encountered a connection error and is not queryable'), 'connection_lost'],
    ['pg: a cut connection', new Error('Connection terminated unexpectedly'), 'connection_lost'],
    ['pg: its connect timeout', new Error('timeout expired'), 'connection_lost'],
    ['a cause two levels down', Object.assign(new Error('outer'), { cause: withCode('SQLITE_FULL') }), 'disk_full'],
    ['anything else', new Error('syntax error at or near "SELEC"'), 'other'],
  ];
  it.each(cases)('%s', (_name, error, fault) => {
    expect(faultOf(error)).toBe(fault);
  });
});

describe('what a warehouse error shows', () => {
  it('never a password, even when the driver repeats the URL', () => {
    const e = classifyWarehouseError(new Error('could not connect to postgres://svc:s3cret@db.example/warehouse'), PG_TARGET);
    expect(e.message).not.toContain('s3cret');
    expect(e.describe()).not.toContain('s3cret');
  });

  it('a WarehouseError comes back as it is (classified once)', () => {
    const e = new WarehouseError('x', { fault: 'locked', warehouse: 'sqlite:/w.db' });
    expect(classifyWarehouseError(e, SQLITE_TARGET)).toBe(e);
  });

  it('names the table of the statement that failed', () => {
    expect(tableOfStatement('insert into "books_users" ("a") values (?)')).toBe('books_users');
    expect(tableOfStatement('UPDATE "inventory_contacts" SET x = 1')).toBe('inventory_contacts');
    expect(tableOfStatement('select "a" from "billing_plans" where x')).toBe('billing_plans');
    expect(tableOfStatement(undefined)).toBeUndefined();
  });
});
