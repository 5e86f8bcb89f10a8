import { allChildLayouts, ORGANIZATION_ID, streamLayout, type LaidColumn } from './layout.js';
import { foreignKeyName } from './relationships.js';
import {
  isOrganizationList,
  qualifiedName,
  streamSources,
  type ChildSpec,
  type ColumnSpec,
  type Source,
  type StreamSpec,
} from './types.js';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** Postgres truncates longer identifiers silently, which would merge tables or columns. */
const MAX_IDENTIFIER = 63;
const PLACEHOLDER = /\{([^}]*)\}/g;

/** Where a check reports a problem of the stream it looks at. */
type Report = (message: string) => void;

/**
 * Mistakes in the catalog, one message each (empty when it is sound). A test runs this on
 * CATALOG, so a broken entry fails the build instead of a sync.
 */
export function validateCatalog(catalog: readonly StreamSpec[]): string[] {
  const problems: string[] = [];
  const byName = indexByName(catalog, problems);
  const claim = tableClaims(problems);
  const organizationLists = new Map<string, string>();
  for (const stream of catalog) {
    const name = qualifiedName(stream);
    const p: Report = (message) => {
      problems.push(`${name}: ${message}`);
    };
    const sources = streamSources(stream);
    checkPrimaryKey(stream, sources, p);
    checkRedaction(stream, p);
    checkOrganizationList(stream, name, organizationLists, p);
    checkColumns(stream.columns, sources, p, 'column');
    checkCursor(stream, p);
    checkParent(stream, byName, p);
    checkDetail(stream, p);
    for (const child of stream.children) checkChild(child, sources, [stream.primaryKey], p);
    checkReferences(stream, byName, catalog, p);
    checkTables(stream, (table) => claim(table, name), p);
  }
  return problems;
}

/** The streams by `family.stream`, each name declared once. */
function indexByName(catalog: readonly StreamSpec[], problems: string[]): Map<string, StreamSpec> {
  const byName = new Map<string, StreamSpec>();
  for (const stream of catalog) {
    const name = qualifiedName(stream);
    if (byName.has(name)) problems.push(`${name}: declared twice`);
    byName.set(name, stream);
  }
  return byName;
}

/** Claims a table for the stream that produces it: one stream a table, and a name Postgres keeps whole. */
function tableClaims(problems: string[]): (table: string, owner: string) => void {
  const tables = new Map<string, string>();
  return (table, owner) => {
    const previous = tables.get(table);
    if (previous !== undefined) problems.push(`${owner}: table ${table} is also produced by ${previous}`);
    else tables.set(table, owner);
    if (!IDENTIFIER.test(table)) problems.push(`${owner}: table name ${table} is not a lower-case identifier`);
    if (table.length > MAX_IDENTIFIER) problems.push(`${owner}: table name ${table} is longer than ${MAX_IDENTIFIER} characters`);
  };
}

function checkPrimaryKey(stream: StreamSpec, sources: readonly Source[], p: Report): void {
  if (stream.recordsKey.length === 0) p('recordsKey is empty');
  const pk = stream.columns.find((c) => c.name === stream.primaryKey);
  if (!pk) p(`primary key ${stream.primaryKey} is not a column`);
  else {
    if (pk.type !== 'id') p(`primary key ${stream.primaryKey} is ${pk.type}, not an id column`);
    if (pk.sources && !sources.every((s) => pk.sources?.includes(s))) p(`primary key ${stream.primaryKey} must come from every response`);
  }
}

function checkRedaction(stream: StreamSpec, p: Report): void {
  if ((stream.redact ?? []).includes(stream.primaryKey)) p('the primary key cannot be redacted');
  const byNameRule = stream.redactByName;
  if (!byNameRule) return;
  for (const field of byNameRule.urls)
    if (!stream.columns.some((c) => c.name === field && c.type === 'text')) p(`redactByName.urls: ${field} is not a text column`);
  for (const field of byNameRule.pairs) {
    const child = stream.children.find((c) => c.field === field);
    if (!child) p(`redactByName.pairs: ${field} is not a child array`);
    else if (![byNameRule.name, byNameRule.value].every((n) => child.columns.some((c) => c.name === n)))
      p(`redactByName.pairs: ${field} has no ${byNameRule.name} and ${byNameRule.value} columns`);
  }
}

/** An organization list is keyed by organization_id, has no parent, and is its family's only one. */
function checkOrganizationList(stream: StreamSpec, name: string, organizationLists: Map<string, string>, p: Report): void {
  if (isOrganizationList(stream)) {
    if (stream.primaryKey !== ORGANIZATION_ID)
      p(`is an organization list, so its primary key must be ${ORGANIZATION_ID}, not ${stream.primaryKey}`);
    if (stream.parent) p('is an organization list and cannot have a parent');
    const other = organizationLists.get(stream.family);
    if (other !== undefined) p(`is a second organization list of the ${stream.family} family (${other} is one)`);
    else organizationLists.set(stream.family, name);
  } else if (stream.primaryKey === ORGANIZATION_ID) {
    p(`is keyed by ${ORGANIZATION_ID}: if its records are organizations, set organizationList: true`);
  }
}

function checkCursor(stream: StreamSpec, p: Report): void {
  if (!stream.cursor) return;
  const cursor = stream.columns.find((c) => c.name === stream.cursor?.field);
  if (!cursor) p(`cursor field ${stream.cursor.field} is not a column`);
  else {
    if (cursor.type !== 'timestamp') p(`cursor field ${cursor.name} is ${cursor.type}, not a timestamp`);
    if (cursor.sources && !cursor.sources.includes('list')) p(`cursor field ${cursor.name} must come from the list`);
  }
}

/** A child stream names its parent's primary key, in its path and in a column; a stream without one has no placeholder. */
function checkParent(stream: StreamSpec, byName: ReadonlyMap<string, StreamSpec>, p: Report): void {
  const placeholders = [...stream.path.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
  if (stream.parent) {
    const parent = byName.get(`${stream.family}.${stream.parent.stream}`);
    if (!parent) p(`parent ${stream.parent.stream} is not a stream of the ${stream.family} family`);
    else {
      if (parent === stream) p('is its own parent');
      if (parent.primaryKey !== stream.parent.key)
        p(`parent key ${stream.parent.key} is not ${qualifiedName(parent)}'s primary key ${parent.primaryKey}`);
    }
    if (placeholders.length !== 1 || placeholders[0] !== stream.parent.key) {
      p(`path ${stream.path} must contain exactly the placeholder {${stream.parent.key}}`);
    }
    if (!stream.columns.some((c) => c.name === stream.parent?.key)) p(`has no column ${stream.parent.key} naming its parent`);
  } else if (placeholders.length > 0) {
    p(`path ${stream.path} has placeholders but the stream has no parent`);
  }
}

function checkDetail(stream: StreamSpec, p: Report): void {
  if (!stream.detail) return;
  const detailPlaceholders = [...stream.detail.path.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
  if (detailPlaceholders.length !== 1 || detailPlaceholders[0] !== stream.primaryKey) {
    p(`detail path ${stream.detail.path} must contain exactly the placeholder {${stream.primaryKey}}`);
  }
  if (stream.detail.recordKeys.length === 0) p('detail recordKeys is empty');
}

/** The warehouse tables the stream lays out: each claimed, its columns and foreign key named soundly. */
function checkTables(stream: StreamSpec, claim: (table: string) => void, p: Report): void {
  const layout = streamLayout(stream);
  claim(layout.table);
  checkTableColumns(layout.table, layout.columns, p);
  if (stream.primaryKey !== ORGANIZATION_ID && stream.columns.some((c) => c.name === ORGANIZATION_ID)) {
    p(`column ${ORGANIZATION_ID} clashes with the column svcsync adds`);
  }
  for (const child of allChildLayouts(layout)) {
    claim(child.table);
    if (foreignKeyName(child.table).length > MAX_IDENTIFIER) p(`foreign key name ${foreignKeyName(child.table)} is too long`);
    checkTableColumns(child.table, child.columns, p);
  }
}

/**
 * `references` on a column (the stream's own or a child table's) names a stream of the same
 * family, by `family.stream`, whose primary key the column holds.
 */
function checkReferences(stream: StreamSpec, byName: ReadonlyMap<string, StreamSpec>, catalog: readonly StreamSpec[], p: Report): void {
  const layout = streamLayout(stream);
  const tables = [{ table: layout.table, columns: layout.columns }, ...allChildLayouts(layout)];
  const declared = (columns: readonly ColumnSpec[]): number => columns.filter((c) => c.references !== undefined).length;
  const walk = (children: readonly ChildSpec[]): number => children.reduce((n, c) => n + declared(c.columns) + walk(c.children ?? []), 0);
  let laid = 0;
  for (const { table, columns } of tables) {
    for (const c of columns) {
      const target = c.spec?.references;
      if (target === undefined || c.role === 'amount' || c.role === 'percentage') continue;
      laid++;
      const where = `${table}.${c.name}`;
      // byName holds the streams declared so far; a reference may point forward in the catalog.
      const to = byName.get(target) ?? catalog.find((s) => qualifiedName(s) === target);
      if (c.role === 'key' && table === layout.table) p(`${where} is the primary key and cannot declare references`);
      if (c.type !== 'id') p(`${where} declares references but is ${c.type}, not an id column`);
      if (!to) p(`${where} references ${target}, which is not a stream (write family.stream)`);
      else {
        if (to.family !== stream.family) p(`${where} references ${target}, a stream of another family`);
        if (isOrganizationList(to)) p(`${where} references ${target}, an organization list (every row has its organization_id)`);
      }
      if (table === layout.table && c.name === stream.parent?.key) p(`${where} is the parent key; parent already declares the reference`);
    }
  }
  // A column that is dropped from its table (redacted, or a child's copy of its parent's key) keeps no reference.
  if (laid !== declared(stream.columns) + walk(stream.children)) p('declares references on a column that has no warehouse column');
}

function checkColumns(columns: readonly ColumnSpec[], sources: readonly Source[], p: Report, what: string): void {
  for (const c of columns) {
    if (!IDENTIFIER.test(c.name)) p(`${what} ${c.name} is not a lower-case identifier`);
    if (c.name.length > MAX_IDENTIFIER) p(`${what} ${c.name} is longer than ${MAX_IDENTIFIER} characters`);
    if (c.path && c.path.length === 0) p(`${what} ${c.name} has an empty path`);
    if (c.alsoAt?.some((at) => at.length === 0)) p(`${what} ${c.name} has an empty path in alsoAt`);
    for (const s of c.sources ?? [])
      if (!sources.includes(s)) p(`${what} ${c.name} comes from the ${s} response, which the stream does not read`);
    if (c.amountOrPercentage && c.type !== 'text') p(`${what} ${c.name} is amountOrPercentage and must be text`);
  }
}

function checkChild(child: ChildSpec, sources: readonly Source[], parentKeys: readonly string[], p: Report): void {
  const where = `child ${child.field}`;
  const own = child.sources ?? sources;
  for (const s of own) if (!sources.includes(s)) p(`${where} comes from the ${s} response, which the stream does not read`);
  if (child.key !== undefined) {
    if (!child.columns.some((c) => c.name === child.key)) p(`${where}: key ${child.key} is not a column of the child`);
    if (parentKeys.includes(child.key)) p(`${where}: key ${child.key} is also a key column of the parent`);
  }
  for (const c of child.columns) {
    if (c.sources) p(`${where}: column ${c.name} sets sources; set them on the child instead`);
  }
  checkColumns(child.columns, own, (m) => p(`${where}: ${m}`), 'column');
  for (const grandchild of child.children ?? []) {
    if (grandchild.sources && grandchild.sources.some((s) => !own.includes(s))) {
      p(`${where}: child ${grandchild.field} comes from a response its parent does not`);
    }
    checkChild(grandchild, own, [...parentKeys, ...(child.key ? [child.key] : [])], (m) => p(`${where}: ${m}`));
  }
}

function checkTableColumns(table: string, columns: readonly LaidColumn[], p: Report): void {
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) p(`table ${table} has two columns named ${c.name}`);
    seen.add(c.name);
  }
}
