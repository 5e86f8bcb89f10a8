import { sqlType, type Dialect, type TableDef } from './tables.js';

/**
 * The data dictionary: what `svcsync schema [--json]` prints and what docs/warehouse.md
 * lists. Generated from the table definitions, so it cannot drift from the warehouse.
 */
export function renderDictionary(defs: readonly TableDef[], dialect: Dialect, format: 'text' | 'json'): string {
  if (format === 'json') {
    return `${JSON.stringify(
      {
        dialect,
        tables: defs.map((t) => ({
          name: t.name,
          stream: t.stream,
          parent: t.parentTable ?? null,
          primaryKey: t.primaryKey,
          description: t.description,
          columns: t.columns.map((c) => ({
            name: c.name,
            type: sqlType(c.type, dialect),
            catalogType: c.type,
            nullable: c.nullable,
            source: c.source,
            description: c.description ?? null,
          })),
        })),
      },
      null,
      2,
    )}\n`;
  }
  const out: string[] = [`# Warehouse tables (${dialect})`, ''];
  for (const t of defs) {
    out.push(...tableHeading(t), '');
    out.push(
      ...markdownTable(
        ['column', 'type', 'null', 'from', 'description'],
        t.columns.map((c) => [c.name, sqlType(c.type, dialect), c.nullable ? 'yes' : 'no', c.source, c.description ?? '']),
      ),
      '',
    );
  }
  return out.join('\n');
}

/** The tables part of docs/warehouse.md: an index, then every table with both dialects' types. */
export function renderWarehouseMarkdown(defs: readonly TableDef[]): string {
  const out: string[] = ['## Tables', ''];
  out.push(
    ...markdownTable(
      ['table', 'stream', 'parent', 'primary key'],
      defs.map((t) => [`[${t.name}](#${t.name})`, t.stream, t.parentTable ?? '', t.primaryKey.join(', ')]),
    ),
    '',
  );
  for (const t of defs) {
    out.push(...tableHeading(t, '###'), '');
    out.push(
      ...markdownTable(
        ['column', 'SQLite', 'Postgres', 'null', 'from', 'description'],
        t.columns.map((c) => [
          `\`${c.name}\``,
          sqlType(c.type, 'sqlite'),
          sqlType(c.type, 'postgres'),
          c.nullable ? 'yes' : 'no',
          c.source === '(svcsync)' ? c.source : `\`${c.source}\``,
          c.description ?? '',
        ]),
      ),
      '',
    );
  }
  return out.join('\n');
}

function tableHeading(t: TableDef, level = '##'): string[] {
  const lines = [`${level} ${t.name}`, '', t.description, '', `- stream: ${t.stream}`, `- primary key: ${t.primaryKey.join(', ')}`];
  if (t.parentTable !== undefined) lines.push(`- parent: ${t.parentTable}`);
  return lines;
}

/** A markdown table padded so it also lines up in a terminal. */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const cells = [header, ...rows].map((r) => r.map((c) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ')));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`.trimEnd();
  const [head, ...body] = cells;
  return [line(head ?? []), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)];
}
