// What a migrated warehouse holds of the objects svcsync derives from the catalog (views, the
// dictionary rows, Postgres comments and foreign keys), and an SQL dump of the whole warehouse.
// Plain JavaScript so that scripts/write-derived-fixtures.mjs (run with node, against dist/) and
// the tests (through warehouse-snapshot.d.mts) read a warehouse the same way.
//
// `query(text)` runs one statement on the warehouse and resolves to its rows.

/** Rows sorted by the given keys (text compared by code point, so the order is the same everywhere). */
function sortBy(rows, keys) {
  const rank = (v) => (v === null ? 0 : 1);
  const cmp = (a, b) => {
    if (a === b) return 0;
    if (a === null || b === null) return rank(a) - rank(b);
    return a < b ? -1 : 1;
  };
  return [...rows].sort((x, y) => {
    for (const k of keys) {
      const c = cmp(x[k], y[k]);
      if (c !== 0) return c;
    }
    return 0;
  });
}

/** Numbers as numbers (Postgres sends bigint as text), so both dialects' rows compare alike. */
function columnRow(r) {
  return {
    table_name: r.table_name,
    column_name: r.column_name,
    position: Number(r.position),
    type: r.type,
    catalog_type: r.catalog_type,
    nullable: Number(r.nullable),
    api_field: r.api_field,
    description: r.description,
    references_table: r.references_table,
    references_column: r.references_column,
    relationship: r.relationship,
  };
}

/**
 * The derived objects of a warehouse: every view's name and SQL (SQLite: the text it was created
 * with, whitespace collapsed; Postgres: `pg_views.definition`), every `_svcsync_tables` and
 * `_svcsync_columns` row, every comment on a table or column (Postgres), every foreign key.
 */
export async function derivedSnapshot(dialect, query) {
  const tables = sortBy(
    (await query('SELECT table_name, kind, stream, parent_table, description FROM _svcsync_tables')).map((r) => ({
      table_name: r.table_name,
      kind: r.kind,
      stream: r.stream,
      parent_table: r.parent_table,
      description: r.description,
    })),
    ['table_name'],
  );
  const columns = sortBy((await query('SELECT * FROM _svcsync_columns')).map(columnRow), ['table_name', 'position']);
  if (dialect === 'sqlite') {
    const views = (await query("SELECT name, sql FROM sqlite_master WHERE type = 'view'")).map((r) => ({
      name: r.name,
      sql: String(r.sql).replace(/\s+/g, ' ').trim(),
    }));
    const foreignKeys = await query(
      'SELECT m.name AS tbl, f.id, f.seq, f."table" AS ref, f."from" AS col, f."to" AS refcol, f.on_delete ' +
        "FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'",
    );
    const byKey = new Map();
    for (const f of sortBy(foreignKeys, ['tbl', 'id', 'seq'])) {
      const key = `${f.tbl}#${f.id}`;
      const fk = byKey.get(key) ?? {
        name: null,
        table: f.tbl,
        columns: [],
        references: f.ref,
        referencedColumns: [],
        onDelete: f.on_delete,
      };
      fk.columns.push(f.col);
      fk.referencedColumns.push(f.refcol);
      byKey.set(key, fk);
    }
    return { dialect, views: sortBy(views, ['name']), tables, columns, comments: [], foreignKeys: [...byKey.values()] };
  }
  const views = await query('SELECT viewname AS name, definition AS sql FROM pg_views WHERE schemaname = current_schema()');
  const comments = await query(
    `SELECT c.relname AS "table", a.attname AS "column", d.description AS comment
       FROM pg_description d
       JOIN pg_class c ON d.classoid = 'pg_class'::regclass AND c.oid = d.objoid
       LEFT JOIN pg_attribute a ON d.objsubid > 0 AND a.attrelid = c.oid AND a.attnum = d.objsubid
      WHERE c.relnamespace = current_schema()::regnamespace`,
  );
  const foreignKeys = await query(
    `SELECT c.conname AS name, c.conrelid::regclass::text AS "table",
            (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n) AS columns,
            c.confrelid::regclass::text AS "references",
            (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
               JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n) AS "referencedColumns",
            c.confdeltype AS "onDelete"
       FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`,
  );
  return {
    dialect,
    views: sortBy(
      views.map((r) => ({ name: r.name, sql: r.sql })),
      ['name'],
    ),
    tables,
    columns,
    comments: sortBy(
      comments.map((r) => ({ table: r.table, column: r.column, comment: r.comment })),
      ['table', 'column'],
    ),
    foreignKeys: sortBy(
      foreignKeys.map((r) => ({ ...r, onDelete: r.onDelete === 'c' ? 'CASCADE' : r.onDelete })),
      ['name'],
    ),
  };
}

/** A snapshot as text: one JSON line per entry, so a change shows as the lines it changes. */
export function snapshotText(snapshot) {
  const parts = Object.entries(snapshot).map(([key, value]) => {
    if (!Array.isArray(value)) return `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`;
    if (value.length === 0) return `  ${JSON.stringify(key)}: []`;
    return `  ${JSON.stringify(key)}: [\n${value.map((v) => `    ${JSON.stringify(v)}`).join(',\n')}\n  ]`;
  });
  return `{\n${parts.join(',\n')}\n}\n`;
}

/** A value as an SQLite literal. */
function sqliteLiteral(value) {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (Buffer.isBuffer(value)) return `X'${value.toString('hex')}'`;
  return `'${String(value).replace(/'/g, "''")}'`;
}

/**
 * A SQLite warehouse as SQL: every CREATE statement of sqlite_master in the order it was made,
 * then INSERTs for svcsync's own tables that hold rows (migration records, the dictionary).
 */
export async function sqliteDump(query) {
  const objects = await query(
    "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
  );
  const out = [];
  for (const o of objects) out.push(`${o.sql};`);
  for (const o of objects) {
    if (o.type !== 'table' || !o.name.startsWith('_svcsync_')) continue;
    const rows = await query(`SELECT * FROM "${o.name}" ORDER BY rowid`);
    for (const r of rows) {
      const cols = Object.keys(r);
      out.push(
        `INSERT INTO "${o.name}" (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${cols.map((c) => sqliteLiteral(r[c])).join(', ')});`,
      );
    }
  }
  return `${out.join('\n')}\n`;
}

/** The placeholder a Postgres dump holds where the schema's name was. */
export const SCHEMA_PLACEHOLDER = '__svcsync_schema__';

/**
 * pg_dump's output, made loadable into any schema: the schema's name becomes the placeholder,
 * and what belongs to the dumping session or server (SET, set_config, psql's \restrict, owners,
 * the CREATE SCHEMA, comments and blank lines) is left out.
 */
export function rewritePgDump(text, schema) {
  const kept = text
    .split('\n')
    .filter(
      (line) =>
        line.trim() !== '' &&
        !line.startsWith('--') &&
        !line.startsWith('\\') &&
        !/^SET /.test(line) &&
        !/set_config\(/.test(line) &&
        !/^CREATE SCHEMA /.test(line) &&
        !/ OWNER TO /.test(line),
    )
    .join('\n');
  return `${kept.split(`${schema}.`).join(`${SCHEMA_PLACEHOLDER}.`)}\n`;
}
