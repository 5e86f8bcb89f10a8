import { describe, expect, it } from 'vitest';
import { CATALOG, childStreamsOf, findStream, streamsOf, tableDefinitions, validateCatalog } from '../../src/catalog/index.js';
import { isOrganizationList, type StreamSpec } from '../../src/catalog/types.js';

/** The table of issue 4, "Streams (the catalog)". */
const ISSUE_STREAMS: Record<string, string[]> = {
  books: ['organizations', 'users', 'vendor_credits', 'vendor_credit_refunds', 'vendor_credit_bills', 'webhooks'],
  inventory: [
    'organizations',
    'currencies',
    'contacts',
    'contact_persons',
    'contact_comments',
    'sales_orders',
    'vendor_credits',
    'vendor_credit_refunds',
  ],
  invoice: ['organizations', 'projects', 'tasks'],
  billing: ['organizations', 'plans', 'recurring_expenses', 'events'],
};

describe('CATALOG', () => {
  it('passes validateCatalog', () => {
    expect(validateCatalog(CATALOG)).toEqual([]);
  });

  it('has exactly the streams of the issue, one table each named family_stream', () => {
    const expected = Object.entries(ISSUE_STREAMS).flatMap(([family, names]) => names.map((n) => `${family}_${n}`));
    const streamTables = tableDefinitions(CATALOG)
      .filter((t) => t.parentTable === undefined)
      .map((t) => t.name);
    expect(streamTables.sort()).toEqual([...expected].sort());
  });

  it.each([
    ['inventory.sales_orders', '/salesorders', ['salesorders'], 'salesorder_id'],
    ['books.vendor_credit_bills', '/vendorcredits/{vendor_credit_id}/bills', ['bills_credited'], 'vendor_credit_bill_id'],
    ['inventory.contact_comments', '/contacts/{contact_id}/comments', ['contact_comments'], 'comment_id'],
    ['inventory.currencies', '/settings/currencies', ['currencies'], 'currency_id'],
    ['billing.recurring_expenses', '/recurringexpenses', ['recurring_expenses'], 'recurring_expense_id'],
    ['books.webhooks', '/settings/webhooks', ['webhooks'], 'webhook_id'],
    ['invoice.tasks', '/projects/{project_id}/tasks', ['tasks'], 'task_id'],
  ])('%s reads %s under %j keyed by %s', (name, path, recordsKey, primaryKey) => {
    const s = findStream(name);
    expect(s).toBeDefined();
    expect(s?.path).toBe(path);
    expect(s?.recordsKey).toEqual(recordsKey);
    expect(s?.primaryKey).toBe(primaryKey);
  });

  it.each([
    ['books.users', { filter_by: 'Status.All' }],
    ['books.vendor_credits', { filter_by: 'Status.All' }],
    ['inventory.vendor_credits', { filter_by: 'Status.All' }],
    ['inventory.contacts', { filter_by: 'Status.All' }],
    ['billing.recurring_expenses', { filter_by: 'Status.All' }],
    ['billing.plans', { filter_by: 'PlanStatus.All' }],
    ['books.webhooks', { filter_by: 'Entity.All' }],
  ])('%s asks for every status with %j', (name, query) => {
    expect(findStream(name)?.query).toEqual(query);
  });

  const NEWEST_FIRST = { sort_column: 'last_modified_time', sort_order: 'D' };
  it.each([
    ['books.vendor_credits', 'last_modified_time', NEWEST_FIRST],
    ['inventory.vendor_credits', 'last_modified_time', NEWEST_FIRST],
    ['inventory.sales_orders', 'last_modified_time', NEWEST_FIRST],
    ['inventory.contacts', 'last_modified_time', NEWEST_FIRST],
    ['billing.events', 'event_time', {}],
    ['billing.plans', 'updated_time', undefined],
    ['billing.recurring_expenses', 'last_modified_time', undefined],
  ])('%s has cursor %s with sort params %j', (name, field, params) => {
    const s = findStream(name);
    expect(s?.cursor?.field).toBe(field);
    expect(s?.cursor?.sort?.params).toEqual(params);
  });

  it.each([
    ['books.vendor_credit_refunds', false],
    ['books.vendor_credit_bills', false],
    ['inventory.contact_comments', false],
    ['inventory.vendor_credit_refunds', false],
    ['inventory.contact_persons', true],
    ['books.users', true],
    ['billing.events', true],
  ])('%s paginated: %s', (name, paginated) => {
    expect(findStream(name)?.paginated).toBe(paginated);
  });

  it('marks exactly each family\u2019s organizations stream as its organization list', () => {
    const lists = CATALOG.filter((s) => isOrganizationList(s)).map((s) => `${s.family}.${s.name}`);
    expect(lists.sort()).toEqual(['billing.organizations', 'books.organizations', 'inventory.organizations', 'invoice.organizations']);
  });

  it('marks settings streams and transactions', () => {
    const settings = CATALOG.filter((s) => s.kind === 'settings').map((s) => `${s.family}.${s.name}`);
    expect(settings.sort()).toEqual(
      [
        'books.organizations',
        'inventory.organizations',
        'invoice.organizations',
        'billing.organizations',
        'books.users',
        'books.webhooks',
        'inventory.currencies',
        'billing.plans',
      ].sort(),
    );
  });

  it('declares the single-record endpoints, events off by default', () => {
    expect(findStream('inventory.sales_orders')?.detail).toEqual({
      path: '/salesorders/{salesorder_id}',
      recordKeys: ['salesorder', 'sales_order'],
      defaultEnabled: true,
    });
    expect(findStream('inventory.vendor_credits')?.detail?.recordKeys).toEqual(['vendor_credit']);
    expect(findStream('billing.events')?.detail).toEqual({
      path: '/events/{event_id}',
      recordKeys: ['event'],
      defaultEnabled: false,
      setting: 'event_details',
    });
  });

  it('finds streams by family and children by parent', () => {
    expect(streamsOf('invoice').map((s) => s.name)).toEqual(['organizations', 'projects', 'tasks']);
    const credits = findStream('books.vendor_credits');
    expect(credits).toBeDefined();
    expect(childStreamsOf(credits as StreamSpec).map((s) => s.name)).toEqual(['vendor_credit_refunds', 'vendor_credit_bills']);
    expect(childStreamsOf(findStream('inventory.contacts') as StreamSpec).map((s) => s.name)).toEqual([
      'contact_persons',
      'contact_comments',
    ]);
    expect(childStreamsOf(findStream('billing.plans') as StreamSpec)).toEqual([]);
    expect(findStream('inventory.nope')).toBeUndefined();
  });

  it('keeps arrays other streams read out of the vendor credit and contact tables', () => {
    const names = tableDefinitions(CATALOG).map((t) => t.name);
    expect(names).not.toContain('books_vendor_credits__vendor_credit_refunds');
    expect(names).not.toContain('books_vendor_credits__bills_credited');
    expect(names).not.toContain('inventory_vendor_credits__vendor_credit_refunds');
    expect(names).not.toContain('inventory_contacts__contact_persons');
    expect(findStream('books.vendor_credits')?.description).toMatch(/_raw/);
  });

  it('never makes a column of the webhook secret', () => {
    const webhooks = tableDefinitions(CATALOG).find((t) => t.name === 'books_webhooks');
    expect(webhooks?.columns.map((c) => c.name)).not.toContain('secret');
  });
});

// A small sound catalog; each case below breaks one thing in a copy of it.
function base(): StreamSpec[] {
  return [
    {
      name: 'parents',
      family: 'books',
      path: '/parents',
      recordsKey: ['parents'],
      primaryKey: 'parent_id',
      paginated: true,
      cursor: { field: 'last_modified_time' },
      detail: { path: '/parents/{parent_id}', recordKeys: ['parent'], defaultEnabled: true },
      kind: 'transaction',
      columns: [
        { name: 'parent_id', type: 'id' },
        { name: 'last_modified_time', type: 'timestamp' },
        { name: 'discount', type: 'text', amountOrPercentage: true, sources: ['detail'] },
      ],
      children: [
        {
          field: 'items',
          key: 'item_id',
          sources: ['detail'],
          columns: [
            { name: 'item_id', type: 'id' },
            { name: 'parent_id', type: 'id' },
          ],
          children: [{ field: 'parts', columns: [{ name: 'part_name', type: 'text' }] }],
        },
      ],
      spec: 'test',
      description: 'Parents.',
    },
    {
      name: 'kids',
      family: 'books',
      path: '/parents/{parent_id}/kids',
      recordsKey: ['kids'],
      primaryKey: 'kid_id',
      paginated: false,
      parent: { stream: 'parents', key: 'parent_id' },
      kind: 'transaction',
      columns: [
        { name: 'kid_id', type: 'id' },
        { name: 'parent_id', type: 'id' },
      ],
      children: [],
      spec: 'test',
      description: 'Kids.',
    },
  ];
}

// An organization list (each family's GET /organizations), for the cases about organizationList.
const organizations: StreamSpec = {
  name: 'organizations',
  family: 'books',
  path: '/organizations',
  recordsKey: ['organizations'],
  primaryKey: 'organization_id',
  organizationList: true,
  paginated: false,
  kind: 'settings',
  columns: [{ name: 'organization_id', type: 'id' }],
  children: [],
  spec: 'test',
  description: 'Organizations.',
};

type Mutation = (c: StreamSpec[]) => StreamSpec[];
const parents = (c: StreamSpec[]): StreamSpec => c[0] as StreamSpec;
const kids = (c: StreamSpec[]): StreamSpec => c[1] as StreamSpec;
const edit =
  (pick: (c: StreamSpec[]) => StreamSpec, change: Partial<StreamSpec>): Mutation =>
  (c) =>
    c.map((s) => (s === pick(c) ? { ...s, ...change } : s));

describe('validateCatalog', () => {
  it('accepts the sound fixture', () => {
    expect(validateCatalog(base())).toEqual([]);
    expect(validateCatalog([organizations, ...base()])).toEqual([]);
  });

  const cases: [string, Mutation, RegExp][] = [
    ['a stream declared twice', (c) => [...c, parents(c)], /declared twice/],
    [
      'two tables with one name',
      (c) => [...c, { ...kids(c), name: 'parents__items', parent: undefined, path: '/x', family: 'books' }],
      /table books_parents__items is also produced/,
    ],
    [
      'a parent that does not exist',
      edit(kids, { parent: { stream: 'ghosts', key: 'parent_id' } }),
      /parent ghosts is not a stream of the books family/,
    ],
    [
      'a parent in another family',
      (c) => c.map((s) => (s === parents(c) ? { ...s, family: 'inventory' as const } : s)),
      /parent parents is not a stream of the books family/,
    ],
    [
      "a parent key that is not the parent's primary key",
      edit(kids, { parent: { stream: 'parents', key: 'kid_id' }, path: '/parents/{kid_id}/kids' }),
      /not books\.parents's primary key/,
    ],
    ['a primary key that is not a column', edit(kids, { primaryKey: 'missing_id' }), /primary key missing_id is not a column/],
    [
      'a primary key that is not an id',
      edit(kids, {
        columns: [
          { name: 'kid_id', type: 'integer' },
          { name: 'parent_id', type: 'id' },
        ],
      }),
      /kid_id is integer, not an id column/,
    ],
    [
      'a path placeholder that does not match the parent key',
      edit(kids, { path: '/parents/{id}/kids' }),
      /exactly the placeholder \{parent_id\}/,
    ],
    ['a placeholder without a parent', edit(parents, { path: '/parents/{x}' }), /has placeholders but the stream has no parent/],
    [
      'a detail path without the primary key',
      edit(parents, { detail: { path: '/parents/{id}', recordKeys: ['parent'], defaultEnabled: true } }),
      /detail path/,
    ],
    [
      'a child key that is not a column of the child',
      edit(parents, { children: [{ field: 'items', key: 'line_id', columns: [{ name: 'item_id', type: 'id' }] }] }),
      /key line_id is not a column of the child/,
    ],
    [
      'a child key that repeats the parent key',
      edit(parents, { children: [{ field: 'items', key: 'parent_id', columns: [{ name: 'parent_id', type: 'id' }] }] }),
      /key parent_id is also a key column of the parent/,
    ],
    [
      'a duplicate column',
      edit(kids, {
        columns: [
          { name: 'kid_id', type: 'id' },
          { name: 'parent_id', type: 'id' },
          { name: 'parent_id', type: 'text' },
        ],
      }),
      /two columns named parent_id/,
    ],
    [
      'a column named like a system column',
      edit(kids, {
        columns: [
          { name: 'kid_id', type: 'id' },
          { name: 'parent_id', type: 'id' },
          { name: '_hash', type: 'text' },
        ],
      }),
      /two columns named _hash/,
    ],
    [
      'a column that repeats a discount part',
      edit(parents, { columns: [...base()[0]!.columns, { name: 'discount__amount', type: 'number', sources: ['detail'] }] }),
      /two columns named discount__amount/,
    ],
    [
      'a child column named _position',
      edit(parents, { children: [{ field: 'items', columns: [{ name: '_position', type: 'integer' }] }] }),
      /two columns named _position/,
    ],
    [
      'an organization_id column on a stream keyed otherwise',
      edit(kids, {
        columns: [
          { name: 'kid_id', type: 'id' },
          { name: 'parent_id', type: 'id' },
          { name: 'organization_id', type: 'id' },
        ],
      }),
      /organization_id/,
    ],
    [
      'a detail-only column on a stream without detail',
      edit(kids, {
        columns: [
          { name: 'kid_id', type: 'id' },
          { name: 'parent_id', type: 'id' },
          { name: 'x', type: 'text', sources: ['detail'] },
        ],
      }),
      /detail response, which the stream does not read/,
    ],
    [
      'a cursor that is not a timestamp',
      edit(parents, { cursor: { field: 'parent_id' } }),
      /cursor field parent_id is id, not a timestamp/,
    ],
    ['a child stream without its parent column', edit(kids, { columns: [{ name: 'kid_id', type: 'id' }] }), /has no column parent_id/],
    ['a table name too long for Postgres', edit(kids, { name: 'k'.repeat(70) }), /longer than 63/],
    [
      'an amount-or-percentage column that is not text',
      edit(kids, {
        columns: [
          { name: 'kid_id', type: 'id' },
          { name: 'parent_id', type: 'id' },
          { name: 'd', type: 'number', amountOrPercentage: true },
        ],
      }),
      /amountOrPercentage and must be text/,
    ],
    [
      'a redactByName URL that is not a text column',
      edit(parents, { redactByName: { urls: ['nowhere'], pairs: [], name: 'n', value: 'v' } }),
      /redactByName\.urls: nowhere is not a text column/,
    ],
    [
      'redactByName pairs that are not a child array, or lack the name and value columns',
      edit(parents, { redactByName: { urls: [], pairs: ['ghosts', 'items'], name: 'param_name', value: 'param_value' } }),
      /redactByName\.pairs: ghosts is not a child array[\s\S]*redactByName\.pairs: items has no param_name and param_value columns/,
    ],
    [
      'an organization list keyed otherwise',
      (c) => [...c, { ...organizations, primaryKey: 'org_id', columns: [{ name: 'org_id', type: 'id' }] }],
      /organization list, so its primary key must be organization_id, not org_id/,
    ],
    [
      'an organization list with a parent',
      (c) => [
        ...c,
        {
          ...organizations,
          path: '/parents/{parent_id}/organizations',
          parent: { stream: 'parents', key: 'parent_id' },
          columns: [
            { name: 'organization_id', type: 'id' },
            { name: 'parent_id', type: 'id' },
          ],
        },
      ],
      /organization list and cannot have a parent/,
    ],
    [
      'two organization lists in one family',
      (c) => [...c, organizations, { ...organizations, name: 'orgs' }],
      /books\.orgs: is a second organization list of the books family \(books\.organizations is one\)/,
    ],
    [
      'a stream keyed by organization_id that is not marked an organization list',
      (c) => [...c, { ...organizations, organizationList: undefined }],
      /keyed by organization_id: if its records are organizations, set organizationList: true/,
    ],
  ];

  it.each(cases)('catches %s', (_what, mutate, message) => {
    const problems = validateCatalog(mutate(base()));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.join('\n')).toMatch(message);
  });
});
