import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Family, type Sandbox } from '../index.js';
import { harness, instant, orgRequest, tokenFor, type Harness } from './sandbox-client.js';

const started: Array<{ sb: Sandbox }> = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((x) => x.sb.stop()));
});
async function open(opts: Parameters<typeof harness>[0]): Promise<Harness> {
  const h = await harness(opts);
  started.push(h);
  return h;
}

const PATHS: Array<[Family, string]> = [
  ['inventory', '/salesorders?per_page=50&sort_column=last_modified_time&sort_order=D'],
  ['inventory', '/contacts'],
  ['books', '/vendorcredits'],
  ['books', '/users'],
  ['invoice', '/projects'],
  ['billing', '/recurringexpenses'],
  ['billing', '/events'],
];

async function texts(h: Harness, org: string): Promise<string[]> {
  const out: string[] = [];
  for (const [family, path] of PATHS) out.push(await (await h.get(family, path, org)).text());
  return out;
}

describe('determinism', () => {
  it('serves identical bytes from two sandboxes with the same seed, different bytes with another seed', async () => {
    const a = await open({ seed: 7, scale: 60 });
    const b = await open({ seed: 7, scale: 60 });
    const c = await open({ seed: 8, scale: 60 });
    expect(a.orgs).toEqual(b.orgs);
    for (let i = 0; i < 3; i++) {
      const ta = await texts(a, a.orgs[i]!.organization_id);
      expect(ta).toEqual(await texts(b, b.orgs[i]!.organization_id));
      const tc = await texts(c, c.orgs[i]!.organization_id);
      for (let k = 0; k < PATHS.length; k++) expect(tc[k]).not.toEqual(ta[k]);
    }
  });
});

describe('data shapes', () => {
  it('sends ids of the number-style organization as bare JSON numbers beyond 2^53, exactly as the truth strings', async () => {
    const h = await open({ scale: 20 });
    const numeric = h.orgs.find((o) => o.idStyle === 'number')!;
    const text = await (
      await h.get('inventory', '/salesorders?sort_column=last_modified_time&sort_order=D', numeric.organization_id)
    ).text();
    const ids = [...text.matchAll(/"salesorder_id":(\d+)/g)].map((m) => m[1]!);
    expect(ids).toHaveLength(20);
    expect(ids.every((id) => id.length === 19 && BigInt(id) > 2n ** 53n)).toBe(true);
    const truth = h.sb.truth(numeric.organization_id, 'inventory', 'sales_orders').map((s) => s['salesorder_id']);
    expect(truth.every((id) => typeof id === 'string')).toBe(true);
    expect(new Set(ids)).toEqual(new Set(truth));
    // organization_id stays a string even there.
    const orgs = await (await h.get('books', '/organizations', null)).text();
    expect(orgs).toContain(`"organization_id":"${numeric.organization_id}"`);
    const strings = await (await h.get('inventory', '/salesorders', h.orgs[0]!.organization_id)).text();
    expect(strings).toMatch(/"salesorder_id":"\d{15}"/);
    // A single record is fetched by the exact digits.
    const detail = await h.get('inventory', `/salesorders/${ids[3]}`, numeric.organization_id);
    expect(detail.status).toBe(200);
    expect(await detail.text()).toContain(`"salesorder_id":${ids[3]},`);
  });

  it("stamps timestamps with each organization's own offset and no colon", async () => {
    const h = await open({ scale: 5 });
    const offsets = ['+0530', '-0800', '+0100'];
    for (let i = 0; i < 3; i++) {
      const { body } = await h.json('inventory', '/contacts', h.orgs[i]!.organization_id);
      for (const c of body['contacts'] as Array<Record<string, unknown>>) {
        expect(String(c['last_modified_time'])).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\${offsets[i]}$`));
        expect(instant(c['last_modified_time'])).toBeLessThan(h.sb.now());
      }
    }
  });

  it('sends list fields in lists and full records in single-record responses', async () => {
    const h = await open({ scale: 30 });
    const org = h.orgs[0]!.organization_id;
    const { body } = await h.json('inventory', '/salesorders');
    const item = (body['salesorders'] as Array<Record<string, unknown>>)[0]!;
    expect(item).not.toHaveProperty('line_items');
    expect(item).toHaveProperty('bcy_total');
    expect(item).toHaveProperty('custom_fields');
    const detail = await h.json('inventory', `/salesorders/${String(item['salesorder_id'])}`);
    const so = detail.body['salesorder'] as Record<string, unknown>;
    expect((so['line_items'] as unknown[]).length).toBeGreaterThan(0);
    expect(so).toHaveProperty('billing_address.city');
    expect(so).not.toHaveProperty('bcy_total');
    expect(so).toEqual(h.sb.truth(org, 'inventory', 'sales_orders').find((s) => s['salesorder_id'] === item['salesorder_id']));
    const vc = ((await h.json('books', '/vendorcredits')).body['vendor_credits'] as Array<Record<string, unknown>>)[0]!;
    expect(vc).not.toHaveProperty('line_items');
    const vcDetail = (await h.json('books', `/vendorcredits/${String(vc['vendor_credit_id'])}`)).body['vendor_credit'] as Record<
      string,
      unknown
    >;
    expect(vcDetail['line_items']).toBeInstanceOf(Array);
    expect(vcDetail['vendor_credit_refunds']).toEqual(
      (await h.json('books', `/vendorcredits/${String(vc['vendor_credit_id'])}/refunds`)).body['vendor_credit_refunds'],
    );
    const event = ((await h.json('billing', '/events')).body['events'] as Array<Record<string, unknown>>)[0]!;
    expect(Object.keys(event)).toEqual(['event_id', 'event_type', 'event_time']);
    const full = (await h.json('billing', `/events/${String(event['event_id'])}`)).body['event'] as Record<string, unknown>;
    expect(typeof full['payload']).toBe('string');
    expect(JSON.parse(String(full['payload']))).toHaveProperty('event_type', event['event_type']);
    expect(full['webhooks']).toBeInstanceOf(Array);
    const user = ((await h.json('books', '/users')).body['users'] as Array<Record<string, unknown>>)[0]!;
    expect(user).toHaveProperty('is_current_user');
    const single = (await h.json('books', `/users/${String(user['user_id'])}`)).body['user'] as Record<string, unknown>;
    expect(single).toHaveProperty('email_ids');
    expect(single).not.toHaveProperty('is_current_user');
  });

  it('has the spec quirks: hh:mm hours, discounts as amount or percent text, empty strings for numbers, unicode names', async () => {
    const h = await open({ scale: 200, organizations: 1 });
    const org = h.orgs[0]!.organization_id;
    const projects = h.sb.truth(org, 'invoice', 'projects');
    const tasks = (await h.json('invoice', `/projects/${String(projects[0]!['project_id'])}/tasks`)).body['tasks'] as Array<
      Record<string, unknown>
    >;
    expect(tasks.length).toBeGreaterThan(0);
    expect(tasks[0]!['billed_hours']).toMatch(/^\d+:\d\d$/);
    expect(tasks[0]!['project_id']).toBe(projects[0]!['project_id']);
    const task = (await h.json('invoice', `/projects/${String(projects[0]!['project_id'])}/tasks/${String(tasks[0]!['task_id'])}`)).body[
      'task'
    ] as Record<string, unknown>;
    expect(task).toHaveProperty('is_billable');
    expect(tasks[0]).not.toHaveProperty('is_billable');
    const orders = h.sb.truth(org, 'inventory', 'sales_orders');
    expect(orders.some((o) => typeof o['discount'] === 'string' && /%$/.test(String(o['discount'])))).toBe(true);
    expect(orders.some((o) => typeof o['discount'] === 'number' && o['discount'] > 0)).toBe(true);
    expect(orders.some((o) => o['discount_type'] === 'item_level')).toBe(true);
    expect(orders.some((o) => o['adjustment'] === '')).toBe(true);
    expect(orders.some((o) => String(o['customer_name']).includes('"'))).toBe(true);
    // Some name has a character outside ASCII (a UTF-16 code unit above 0x7f).
    expect(orders.some((o) => /[\u0080-\uffff]/.test(String(o['customer_name'])))).toBe(true);
    const expense = h.sb.truth(org, 'billing', 'recurring_expenses')[0]!;
    expect(expense['line_item']).toBeTypeOf('object');
    expect(expense).not.toHaveProperty('line_items');
    const persons = h.sb.truth(org, 'inventory', 'contact_persons');
    expect(persons.length).toBeGreaterThan(0);
    expect(persons.every((p) => typeof p['contact_id'] === 'string')).toBe(true);
    expect(h.sb.count(org, 'inventory', 'currencies')).toBe(40);
  });

  it('serves a million records per stream without building them', async () => {
    const h = await open({ scale: 1_000_000, organizations: 1, unlimited: true });
    const org = h.orgs[0]!.organization_id;
    expect(h.sb.count(org, 'inventory', 'sales_orders')).toBe(1_000_000);
    const { body } = await h.json('inventory', '/salesorders?sort_column=last_modified_time&sort_order=D&page=4000&per_page=200');
    const page = body['salesorders'] as Array<Record<string, unknown>>;
    expect(page).toHaveLength(200);
    expect((body['page_context'] as Record<string, unknown>)['has_more_page']).toBe(true);
    const last = await h.json('inventory', '/salesorders?sort_column=last_modified_time&sort_order=D&page=5000&per_page=200');
    expect((last.body['page_context'] as Record<string, unknown>)['has_more_page']).toBe(false);
    expect((await h.get('inventory', `/salesorders/${String(page[0]!['salesorder_id'])}`)).status).toBe(200);
  });
});

describe('streamScale', () => {
  it('gives the streams it names their own record counts, the others the scale', async () => {
    const h = await open({ scale: 30, organizations: 1, streamScale: { 'billing.events': 450, 'invoice.projects': 7 } });
    const org = h.orgs[0]!.organization_id;
    expect(h.sb.count(org, 'billing', 'events')).toBe(450);
    expect(h.sb.count(org, 'invoice', 'projects')).toBe(7);
    expect(h.sb.count(org, 'inventory', 'sales_orders')).toBe(30);
    expect(await h.all('billing', '/events', 'events', org)).toHaveLength(450);
    const projects = await h.all('invoice', '/projects', 'projects', org);
    expect(projects.map((p) => String(p['project_id'])).sort()).toEqual(
      h.sb
        .truth(org, 'invoice', 'projects')
        .map((p) => String(p['project_id']))
        .sort(),
    );
  });

  it('refuses a name that is not a top-level stream, and a count out of range', async () => {
    await expect(startSandbox({ streamScale: { 'invoice.tasks': 5 } })).rejects.toThrow(
      /streamScale: invoice.tasks is not a top-level stream/,
    );
    await expect(startSandbox({ streamScale: { events: 5 } })).rejects.toThrow(/streamScale: events/);
    await expect(startSandbox({ streamScale: { 'billing.events': -1 } })).rejects.toThrow(/streamScale.billing.events must be/);
  });
});

describe('tokens from a second client', () => {
  it('works with orgRequest and tokenFor directly', async () => {
    const sb = await startSandbox({ scale: 1 });
    started.push({ sb });
    const res = await orgRequest(sb, 'billing', '/events', sb.organizations()[0]!.organization_id, await tokenFor(sb));
    expect(res.status).toBe(200);
  });
});
