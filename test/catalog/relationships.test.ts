import { describe, expect, it } from 'vitest';
import {
  CATALOG,
  columnReferences,
  relationships,
  renderDictionary,
  renderErd,
  tableDefinitions,
  validateCatalog,
  type StreamSpec,
} from '../../src/catalog/index.js';

const rels = relationships(CATALOG);
const summary = (kind: string): string[] =>
  rels.filter((r) => r.kind === kind).map((r) => `${r.fromTable}(${r.fromColumns.join(',')}) -> ${r.toTable}(${r.toColumns.join(',')})`);

describe('relationships(CATALOG)', () => {
  it('joins each child table to its parent table on the organization and the parent key', () => {
    const fks = summary('foreign_key');
    expect(fks).toContain(
      'inventory_sales_orders__line_items(organization_id,salesorder_id) -> inventory_sales_orders(organization_id,salesorder_id)',
    );
    // A grandchild joins its parent element on the whole of that element's key.
    expect(fks).toContain(
      'books_vendor_credits__line_items__tags(organization_id,vendor_credit_id,line_item_id) -> ' +
        'books_vendor_credits__line_items(organization_id,vendor_credit_id,line_item_id)',
    );
    // A grandchild of a keyed element carries the element's key.
    expect(fks).toContain(
      'billing_plans__addons__price_brackets(organization_id,plan_code,addon_code) -> ' +
        'billing_plans__addons(organization_id,plan_code,addon_code)',
    );
  });

  it('publishes the references between streams of one family: child streams and the columns the catalog marks', () => {
    const refs = summary('reference');
    expect(refs).toEqual(
      expect.arrayContaining([
        'inventory_sales_orders(organization_id,customer_id) -> inventory_contacts(organization_id,contact_id)',
        'invoice_tasks(organization_id,project_id) -> invoice_projects(organization_id,project_id)',
        'books_vendor_credit_refunds(organization_id,vendor_credit_id) -> books_vendor_credits(organization_id,vendor_credit_id)',
        'inventory_vendor_credit_refunds(organization_id,vendor_credit_id) -> inventory_vendor_credits(organization_id,vendor_credit_id)',
        'books_vendor_credit_bills(organization_id,vendor_credit_id) -> books_vendor_credits(organization_id,vendor_credit_id)',
        'inventory_contact_persons(organization_id,contact_id) -> inventory_contacts(organization_id,contact_id)',
        'inventory_contact_comments(organization_id,contact_id) -> inventory_contacts(organization_id,contact_id)',
        'inventory_vendor_credits(organization_id,vendor_id) -> inventory_contacts(organization_id,contact_id)',
        'inventory_contacts(organization_id,primary_contact_id) -> inventory_contact_persons(organization_id,contact_person_id)',
        'inventory_sales_orders__contact_persons_associated(organization_id,contact_person_id) -> ' +
          'inventory_contact_persons(organization_id,contact_person_id)',
      ]),
    );
    // Every reference stays inside its family.
    for (const r of rels) expect(r.toTable.split('_')[0], r.name).toBe(r.fromTable.split('_')[0]);
    // The shared vendor-credit columns reference only where the family has the stream (books has no contacts).
    expect(refs.filter((r) => r.startsWith('books_vendor_credits('))).toEqual([]);
  });

  it('names each constraint once, and maps columns to what they point to', () => {
    expect(new Set(rels.map((r) => r.name)).size).toBe(rels.length);
    const byColumn = columnReferences(rels);
    expect(byColumn.get('inventory_sales_orders')?.get('customer_id')).toEqual({
      table: 'inventory_contacts',
      column: 'contact_id',
      kind: 'reference',
    });
    expect(byColumn.get('inventory_sales_orders__line_items')?.get('salesorder_id')?.kind).toBe('foreign_key');
  });
});

describe('validateCatalog: references', () => {
  const contacts = CATALOG.find((s) => s.family === 'inventory' && s.name === 'contacts')!;
  const withReference = (column: string, references: string, stream: StreamSpec = contacts): StreamSpec[] =>
    CATALOG.map((s) => (s === stream ? { ...s, columns: s.columns.map((c) => (c.name === column ? { ...c, references } : c)) } : s));

  it.each<[string, StreamSpec[], RegExp]>([
    [
      'a stream that does not exist',
      withReference('location_id', 'inventory.locations'),
      /references inventory.locations, which is not a stream/,
    ],
    ['a stream of another family', withReference('currency_id', 'books.users'), /a stream of another family/],
    ['an organization list', withReference('location_id', 'inventory.organizations'), /an organization list/],
    ['a column that is not an id', withReference('contact_name', 'inventory.contacts'), /contact_name declares references but is text/],
    ['the primary key', withReference('contact_id', 'inventory.contacts'), /is the primary key and cannot declare references/],
  ])('%s', (_case, catalog, problem) => {
    expect(validateCatalog(catalog).join('\n')).toMatch(problem);
  });

  it('a reference on a column that never reaches the warehouse (redacted)', () => {
    const catalog = CATALOG.map((s) =>
      s === contacts
        ? {
            ...s,
            redact: ['website'],
            columns: s.columns.map((c) => (c.name === 'website' ? { ...c, references: 'inventory.contacts' } : c)),
          }
        : s,
    );
    expect(validateCatalog(catalog).join('\n')).toMatch(/declares references on a column that has no warehouse column/);
  });

  it('the parent key declared again', () => {
    const persons = CATALOG.find((s) => s.family === 'inventory' && s.name === 'contact_persons')!;
    expect(validateCatalog(withReference('contact_id', 'inventory.contacts', persons)).join('\n')).toMatch(/is the parent key/);
  });
});

describe('the dictionary and the diagram show the relationships', () => {
  const defs = tableDefinitions(CATALOG);

  it('schema --json lists every relationship, with its kind, from and to', () => {
    const doc = JSON.parse(renderDictionary(defs, 'postgres', 'json')) as {
      relationships: { name: string; kind: string; from: { table: string; columns: string[] }; to: { table: string; columns: string[] } }[];
    };
    expect(doc.relationships.length).toBe(rels.length);
    expect(doc.relationships).toContainEqual({
      name: 'inventory_sales_orders.customer_id',
      kind: 'reference',
      from: { table: 'inventory_sales_orders', columns: ['organization_id', 'customer_id'] },
      to: { table: 'inventory_contacts', columns: ['organization_id', 'contact_id'] },
      origin: 'column',
    });
    expect(doc.relationships.filter((r) => r.kind === 'foreign_key').length).toBe(defs.filter((d) => d.parentTable).length);
  });

  it('the text dictionary names them under each table', () => {
    const text = renderDictionary(defs, 'sqlite', 'text');
    expect(text).toContain('- references (organization_id, project_id) \u2192 invoice_projects (organization_id, project_id)');
    expect(text).toContain('- foreign key (organization_id, salesorder_id) \u2192 inventory_sales_orders (organization_id, salesorder_id)');
  });

  it('the Mermaid diagram has one block per family, every table, and a line per relationship', () => {
    const md = renderErd(defs).join('\n');
    expect(md.match(/```mermaid\nerDiagram/g)?.length).toBe(4);
    for (const d of defs) expect(md).toContain(`  ${d.name} {`);
    expect(md).toContain('  inventory_sales_orders ||--o{ inventory_sales_orders__line_items : "salesorder_id"');
    expect(md).toContain('  inventory_contacts |o..o{ inventory_sales_orders : "customer_id"');
    expect(md).toContain('    id customer_id FK');
    expect(md.split('\n').filter((l) => /\|\|--o\{|\|o\.\.o\{/.test(l)).length).toBe(rels.length);
  });
});
