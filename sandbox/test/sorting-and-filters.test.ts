import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harness, instant, type Harness } from './sandbox-client.js';

let h: Harness;
beforeAll(async () => {
  h = await harness({ scale: 120, organizations: 2 });
});
afterAll(() => h.sb.stop());

const isSorted = (values: number[], dir: 1 | -1): boolean => values.every((v, i) => i === 0 || (v - values[i - 1]!) * dir >= 0);

describe('sort_column and sort_order', () => {
  it('orders sales orders by last_modified_time descending and ascending', async () => {
    const desc = await h.all('inventory', '/salesorders?sort_column=last_modified_time&sort_order=D', 'salesorders');
    const asc = await h.all('inventory', '/salesorders?sort_column=last_modified_time&sort_order=A', 'salesorders');
    expect(desc).toHaveLength(120);
    expect(
      isSorted(
        desc.map((r) => instant(r['last_modified_time'])),
        -1,
      ),
    ).toBe(true);
    expect(
      isSorted(
        asc.map((r) => instant(r['last_modified_time'])),
        1,
      ),
    ).toBe(true);
    expect(asc.map((r) => r['salesorder_id'])).toEqual(desc.map((r) => r['salesorder_id']).reverse());
    const { body } = await h.json('inventory', '/salesorders?sort_column=last_modified_time&sort_order=D&per_page=1');
    expect(body['page_context']).toMatchObject({ sort_column: 'last_modified_time', sort_order: 'D' });
  });

  it('sorts vendor credits and contacts by other named columns', async () => {
    const byTotal = await h.all('inventory', '/vendorcredits?sort_column=total&sort_order=A', 'vendor_credits');
    expect(
      isSorted(
        byTotal.map((r) => r['total'] as number),
        1,
      ),
    ).toBe(true);
    const contacts = await h.all('inventory', '/contacts?sort_column=last_modified_time&sort_order=D', 'contacts');
    expect(
      isSorted(
        contacts.map((r) => instant(r['last_modified_time'])),
        -1,
      ),
    ).toBe(true);
    const books = await h.all('books', '/vendorcredits?sort_column=created_time&sort_order=D', 'vendor_credits');
    expect(
      isSorted(
        books.map((r) => instant(r['created_time'])),
        -1,
      ),
    ).toBe(true);
  });

  it('refuses a sort column the list does not name, and a bad sort_order', async () => {
    for (const [family, path] of [
      ['inventory', '/salesorders?sort_column=bogus'],
      ['books', '/users?sort_column=last_modified_time'],
      ['billing', '/recurringexpenses?sort_column=last_modified_time'],
      ['inventory', '/salesorders?sort_column=total&sort_order=X'],
    ] as const) {
      const { status, body } = await h.json(family, path);
      expect(status, path).toBe(400);
      expect(body['code']).toBe(2);
    }
  });

  it('serves events newest first and plans in a stable order that is not by updated_time', async () => {
    const events = await h.all('billing', '/events', 'events');
    expect(
      isSorted(
        events.map((e) => instant(e['event_time'])),
        -1,
      ),
    ).toBe(true);
    const plans = await h.all('billing', '/plans', 'plans');
    const again = await h.all('billing', '/plans', 'plans');
    expect(again).toEqual(plans);
    const times = plans.map((p) => instant(p['updated_time']));
    expect(isSorted(times, 1)).toBe(false);
    expect(isSorted(times, -1)).toBe(false);
    const expenses = await h.all('billing', '/recurringexpenses', 'recurring_expenses');
    expect(
      isSorted(
        expenses.map((e) => instant(e['last_modified_time'])),
        -1,
      ),
    ).toBe(false);
  });
});

describe('filter_by', () => {
  const org = (): string => h.orgs[0]!.organization_id;

  it('filters users by status; no filter means all', async () => {
    const truth = h.sb.truth(org(), 'books', 'users');
    const all = await h.all('books', '/users', 'users');
    expect(all).toHaveLength(truth.length);
    for (const status of ['Active', 'Inactive', 'Invited', 'Deleted']) {
      const got = await h.all('books', `/users?filter_by=Status.${status}`, 'users');
      const want = truth.filter((u) => u['status'] === status.toLowerCase());
      expect(got.map((u) => u['user_id'])).toEqual(want.map((u) => u['user_id']));
    }
    expect(await h.all('books', '/users?filter_by=Status.All', 'users')).toEqual(all);
  });

  it('filters vendor credits, plans, recurring expenses, webhooks and currencies', async () => {
    const open = await h.all('inventory', '/vendorcredits?filter_by=Status.Open', 'vendor_credits');
    expect(open.length).toBeGreaterThan(0);
    expect(open.every((v) => v['status'] === 'open')).toBe(true);
    expect(open.length).toBe(h.sb.truth(org(), 'inventory', 'vendor_credits').filter((v) => v['status'] === 'open').length);
    const active = await h.all('billing', '/plans?filter_by=PlanStatus.ACTIVE', 'plans');
    expect(active.every((p) => p['status'] === 'active')).toBe(true);
    const inactive = await h.all('billing', '/plans?filter_by=PlanStatus.INACTIVE', 'plans');
    expect(active.length + inactive.length).toBe(120);
    const product = active[0]!['product_id'] as string;
    const ofProduct = await h.all('billing', `/plans?product_id=${product}`, 'plans');
    expect(ofProduct.length).toBeGreaterThan(0);
    expect(ofProduct.every((p) => p['product_id'] === product)).toBe(true);
    const stopped = await h.all('billing', '/recurringexpenses?filter_by=Status.Stopped', 'recurring_expenses');
    expect(stopped.every((e) => e['status'] === 'stopped')).toBe(true);
    const invoices = await h.all('books', '/settings/webhooks?filter_by=Entity.Invoice', 'webhooks');
    expect(invoices.length).toBeGreaterThan(0);
    expect(invoices.every((w) => w['entity'] === 'invoice')).toBe(true);
    const currencies = await h.all('inventory', '/settings/currencies', 'currencies');
    const foreign = await h.all('inventory', '/settings/currencies?filter_by=Currencies.ExcludeBaseCurrency', 'currencies');
    expect(currencies.filter((c) => c['is_base_currency'] === true)).toHaveLength(1);
    expect(foreign).toHaveLength(currencies.length - 1);
  });

  it('refuses an unknown filter value with code 2', async () => {
    const { status, body } = await h.json('books', '/users?filter_by=Status.Sleeping');
    expect(status).toBe(400);
    expect(body['code']).toBe(2);
    expect(String(body['message'])).toContain('filter_by');
  });
});
