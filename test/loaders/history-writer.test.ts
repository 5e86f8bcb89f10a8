import type { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { FatalError } from '../../src/core/errors.js';
import { historyPlan, type StreamHistory } from '../../src/loaders/derived/history-tables.js';
import { HistoryWriter } from '../../src/loaders/history-writer.js';
import { POSTGRES, SQLITE } from '../../src/loaders/sql-dialect.js';

// Pure: the statements the history writer compiles, without a database. That they run, and
// write the versions they should, is the end-to-end history suite's (test/e2e/history.test.ts).

const plan = historyPlan(CATALOG, 'all');
const stream = (name: string): StreamHistory => plan.get(name)!;
/** A change column and five child tables. */
const orders = stream('inventory.sales_orders');
/** No change column, one child table. */
const users = stream('books.users');

// Values that would break the text if they were spliced into it.
const ORG = `o"1'`;
const IDS = [`a'; DROP TABLE "books_users"; --`, 'b"b', 'id-3'];
const NOW = '2026-12-04T10:00:00.000Z';
const RUN = `run'7`;

/** The placeholders of a statement, in text order. */
function placeholders(q: CompiledQuery): string[] {
  return q.sql.match(/\$\d+|\?/g) ?? [];
}

describe.each([
  ['sqlite', SQLITE],
  ['postgres', POSTGRES],
] as const)('HistoryWriter on %s', (dialect, sqlDialect) => {
  const writer = new HistoryWriter(sqlDialect);

  it('binds every value and numbers one placeholder per parameter', () => {
    const queries = writer.recordQueries(orders, { kind: 'ids', organizationId: ORG, ids: IDS }, NOW, RUN);
    // Completed in place (run and change column), the new version, the superseded closed, 3 per child table.
    expect(queries).toHaveLength(3 + 3 * orders.children.length);
    for (const q of queries) {
      for (const value of [ORG, ...IDS, RUN]) expect(q.sql).not.toContain(value);
      const marks = placeholders(q);
      expect(marks).toHaveLength(q.parameters.length);
      if (dialect === 'postgres') expect(marks).toEqual(q.parameters.map((_, i) => `$${i + 1}`));
      else expect(marks.every((m) => m === '?')).toBe(true);
      expect(q.parameters).toContain(ORG);
      expect(q.parameters).toEqual(expect.arrayContaining(IDS));
    }
    const [complete, version] = queries;
    expect(complete!.parameters).toContain(RUN);
    expect(version!.parameters).toEqual(expect.arrayContaining([RUN, NOW]));
  });

  it('quotes the catalog names and spells the comparisons and instants of its dialect', () => {
    const [, version] = writer.recordQueries(orders, { kind: 'ids', organizationId: ORG, ids: IDS }, NOW, null);
    expect(version!.sql).toMatch(/^INSERT INTO "inventory_sales_orders_history" \("organization_id", /);
    expect(version!.sql).toContain(
      'FROM "inventory_sales_orders" AS t LEFT JOIN "inventory_sales_orders_history" AS o ' +
        'ON o."organization_id" = t."organization_id" AND o."salesorder_id" = t."salesorder_id"',
    );
    if (dialect === 'postgres') {
      expect(version!.sql).toContain('IS DISTINCT FROM');
      expect(version!.sql).toMatch(/COALESCE\(t\."last_modified_time", CAST\(\$\d+ AS timestamptz\)\)/);
      expect(version!.sql).toContain(`(o."_valid_from" + interval '1 millisecond')`);
      expect(version!.sql).toMatch(/COALESCE\(CAST\(\$\d+ AS text\), t\."_run_id"\)/);
    } else {
      expect(version!.sql).not.toContain('DISTINCT');
      expect(version!.sql).not.toContain('CAST(');
      expect(version!.sql).toContain(' IS NOT ');
      expect(version!.sql).toContain(`strftime('%Y-%m-%dT%H:%M:%fZ', o."_valid_from", '+0.001 seconds')`);
      expect(version!.sql).toContain('COALESCE(?, t."_run_id")');
    }
  });

  it('writes no statement that completes a version when neither a run nor a change time could tell it', () => {
    const queries = writer.recordQueries(users, { kind: 'ids', organizationId: ORG, ids: IDS }, NOW, null);
    expect(queries).toHaveLength(2 + 3 * users.children.length);
    expect(queries[0]!.sql).toMatch(/^INSERT INTO "books_users_history"/);
    expect(queries.some((q) => q.sql.startsWith('UPDATE "books_users_history" AS h SET "email"'))).toBe(false);
  });

  it('scopes deletions by the instant they were marked at, bound as an instant', () => {
    const at = '2026-12-04T09:00:00.000Z';
    const queries = writer.deletionQueries(users, { kind: 'deletedAt', organizationId: ORG, at }, RUN);
    expect(queries).toHaveLength(2 + 3 * users.children.length);
    for (const q of queries) {
      expect(q.parameters).toEqual(expect.arrayContaining([ORG, at]));
      expect(q.sql).toContain('"_deleted_at" = ' + (dialect === 'postgres' ? 'CAST($' : '?'));
      expect(placeholders(q)).toHaveLength(q.parameters.length);
    }
    expect(queries[0]!.sql).toContain(`'deleted'`);
  });

  it('covers every record of the organization in the "all" scope, with its one parameter', () => {
    const [close] = writer.deletionQueries(users, { kind: 'all', organizationId: ORG }, null).slice(1);
    expect(close!.sql).toMatch(/^UPDATE "books_users_history" AS h SET "_valid_to"/);
    expect(close!.parameters).toEqual([ORG]);
  });

  it('splits a long list of ids into statements of at most 5,000', () => {
    const ids = Array.from({ length: 5_001 }, (_, i) => `id${i}`);
    const queries = writer.recordQueries(users, { kind: 'ids', organizationId: ORG, ids }, NOW, null);
    const perChunk = 2 + 3 * users.children.length;
    expect(queries).toHaveLength(2 * perChunk);
    expect(queries[0]!.parameters).toContain('id4999');
    expect(queries[0]!.parameters).not.toContain('id5000');
    expect(queries[perChunk]!.parameters).toContain('id5000');
    expect(writer.recordQueries(users, { kind: 'ids', organizationId: ORG, ids: [] }, NOW, null)).toEqual([]);
  });

  it('refuses a table or column name that is not a catalog name', () => {
    const bad: StreamHistory = { ...users, top: { ...users.top, compared: [...users.top.compared, 'x" = 1 OR "y'] } };
    expect(() => writer.recordQueries(bad, { kind: 'ids', organizationId: ORG, ids: IDS }, NOW, null)).toThrow(FatalError);
  });
});
