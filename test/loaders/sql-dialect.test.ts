import { describe, expect, it } from 'vitest';
import { POSTGRES, SQL_DIALECTS, SQLITE, ident, statisticsStale, type SqlDialect } from '../../src/loaders/sql-dialect.js';
import type { Dialect } from '../../src/loaders/sql-dialect.js';
import type { SqlValue } from '../../src/normalize/normalize.js';

// Pure: the texts and values each dialect object produces, without a database. That these
// texts run is covered by the TableWriter suites (test/loaders/table-writer.test.ts) and the
// end-to-end syncs, on both dialects.

describe('SQL_DIALECTS', () => {
  it('has one object per dialect, named after it', () => {
    expect(SQL_DIALECTS.sqlite).toBe(SQLITE);
    expect(SQL_DIALECTS.postgres).toBe(POSTGRES);
    expect(SQLITE.name).toBe('sqlite');
    expect(POSTGRES.name).toBe('postgres');
  });

  it.each(['sqlite', 'postgres'] as Dialect[])(
    '%s binds at most 30,000 parameters per statement (under both servers\u2019 limits)',
    (name) => {
      const sql = SQL_DIALECTS[name];
      expect(sql.maxParams).toBe(30_000);
      expect(sql.maxParams).toBeLessThan(32_766);
    },
  );
});

describe('placeholders', () => {
  it.each([
    // dialect, n, param(n)
    ['sqlite', 1, '?'],
    ['sqlite', 7, '?'],
    ['postgres', 1, '$1'],
    ['postgres', 7, '$7'],
    ['postgres', 30_000, '$30000'],
  ] as Array<[Dialect, number, string]>)('%s: param(%i) is %s', (name, n, expected) => {
    expect(SQL_DIALECTS[name].param(n)).toBe(expected);
  });

  it.each([
    // dialect, count, start, params(count, start)
    ['sqlite', 0, 1, []],
    ['sqlite', 3, 1, ['?', '?', '?']],
    ['sqlite', 2, 5, ['?', '?']],
    ['postgres', 0, 1, []],
    ['postgres', 3, 1, ['$1', '$2', '$3']],
    ['postgres', 2, 5, ['$5', '$6']],
  ] as Array<[Dialect, number, number, string[]]>)('%s: params(%i, %i) is %j', (name, count, start, expected) => {
    expect(SQL_DIALECTS[name].params(count, start)).toEqual(expected);
  });

  it('param can be passed around unbound', () => {
    const { param } = POSTGRES;
    expect([1, 2].map(param)).toEqual(['$1', '$2']);
  });
});

describe('bind', () => {
  it.each([
    // value, SQLite binds, Postgres binds
    [true, 1, true],
    [false, 0, false],
    [null, null, null],
    [0, 0, 0],
    [1.5, 1.5, 1.5],
    ['true', 'true', 'true'],
    ['', '', ''],
  ] as Array<[SqlValue, SqlValue, SqlValue]>)('%#: %j binds as %j on SQLite and %j on Postgres', (value, sqlite, postgres) => {
    expect(SQLITE.bind(value)).toStrictEqual(sqlite);
    expect(POSTGRES.bind(value)).toStrictEqual(postgres);
  });
});

describe('repeated keys in one upsert', () => {
  it('Postgres refuses them (the writer keeps the last copy); SQLite applies rows in order', () => {
    expect(POSTGRES.upsertAcceptsRepeatedKeys).toBe(false);
    expect(SQLITE.upsertAcceptsRepeatedKeys).toBe(true);
  });
});

describe('upsert', () => {
  const columns = ['organization_id', 'webhook_id', 'webhook_name', 'is_active'];
  const keys = ['organization_id', 'webhook_id'];

  // The texts differ only in their placeholders.
  const insert = 'INSERT INTO "books_webhooks" ("organization_id", "webhook_id", "webhook_name", "is_active") VALUES ';
  const onConflict =
    ' ON CONFLICT ("organization_id", "webhook_id") DO UPDATE SET ' +
    '"webhook_name" = excluded."webhook_name", "is_active" = excluded."is_active"';

  it.each([
    // dialect, rows, the tuples after VALUES
    ['sqlite', 1, '(?, ?, ?, ?)'],
    ['sqlite', 2, '(?, ?, ?, ?), (?, ?, ?, ?)'],
    ['postgres', 1, '($1, $2, $3, $4)'],
    ['postgres', 2, '($1, $2, $3, $4), ($5, $6, $7, $8)'],
  ] as Array<[Dialect, number, string]>)('%s, %i rows: VALUES %s', (name, rows, tuples) => {
    expect(SQL_DIALECTS[name].upsert('books_webhooks', columns, keys, rows)).toBe(insert + tuples + onConflict);
  });

  it.each([
    ['sqlite', 'INSERT INTO "t" ("a", "b") VALUES (?, ?) ON CONFLICT ("a", "b") DO NOTHING'],
    ['postgres', 'INSERT INTO "t" ("a", "b") VALUES ($1, $2) ON CONFLICT ("a", "b") DO NOTHING'],
  ] as Array<[Dialect, string]>)('%s: does nothing on a conflict when every column is a key', (name, expected) => {
    expect(SQL_DIALECTS[name].upsert('t', ['a', 'b'], ['a', 'b'], 1)).toBe(expected);
  });

  it('refuses a name that is not a catalog identifier, on both', () => {
    for (const sql of [SQLITE, POSTGRES]) {
      expect(() => sql.upsert('t; DROP TABLE x', ['a'], ['a'], 1)).toThrow(/not a catalog name/);
      expect(() => sql.upsert('t', ['a', 'b"c'], ['a'], 1)).toThrow(/not a catalog name/);
    }
  });
});

describe('ident', () => {
  it.each([
    ['books_webhooks', '"books_webhooks"'],
    ['_synced_at', '"_synced_at"'],
    ['A1', '"A1"'],
  ])('quotes %s as %s', (name, expected) => {
    expect(ident(name)).toBe(expected);
  });

  it.each(['', '1a', 'a-b', 'a b', 'a"b', 'a;b'])('refuses %j', (name) => {
    expect(() => ident(name)).toThrow(/not a catalog name/);
  });
});

describe('migrationSchema', () => {
  type MigratorDb = Parameters<SqlDialect['migrationSchema']>[0];

  it('is undefined on SQLite without asking the database', async () => {
    const db = { executeQuery: () => Promise.reject(new Error('must not query')) } as unknown as MigratorDb;
    await expect(SQLITE.migrationSchema(db)).resolves.toBeUndefined();
  });

  it('is the current schema on Postgres', async () => {
    const seen: string[] = [];
    const db = {
      executeQuery: (q: { sql: string }) => (seen.push(q.sql), Promise.resolve({ rows: [{ s: 't_run_1' }] })),
    } as unknown as MigratorDb;
    await expect(POSTGRES.migrationSchema(db)).resolves.toBe('t_run_1');
    expect(seen).toEqual(['SELECT current_schema() AS s']);
  });
});

describe('statisticsStale', () => {
  it.each([
    // written, estimated rows (pg_class.reltuples), stale
    [999, -1, false], // too few rows to matter, even never analyzed
    [1000, -1, true], // never analyzed (Postgres 14+)
    [1000, 0, true], // never analyzed (Postgres 13 and earlier) or analyzed empty
    [2000, 20_000, false], // a tenth of the rows: not yet
    [2001, 20_000, true],
    [20_000, 20_000, true], // a second organization's first sync doubles the table
    [5000, 1_000_000, false],
  ] as Array<[number, number, boolean]>)('written %i onto an estimate of %i rows: %s', (written, estimated, stale) => {
    expect(statisticsStale(written, estimated)).toBe(stale);
  });
});
