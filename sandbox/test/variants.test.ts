import { afterEach, describe, expect, it } from 'vitest';
import { configSnippet, parseVariant, sandboxCommand } from '../../src/cli/sandbox-command.js';
import {
  DEFAULT_VARIANTS,
  HOSTILE_VARIANTS,
  VARIANT_NAMES,
  startSandbox,
  type Family,
  type Sandbox,
  type SandboxOptions,
} from '../index.js';
import { harness, orgRequest, tokenFor, type Harness } from './sandbox-client.js';

type Rec = Record<string, unknown>;

const open: Harness[] = [];
async function start(options: SandboxOptions): Promise<Harness> {
  const h = await harness(options);
  open.push(h);
  return h;
}
afterEach(async () => {
  for (const h of open.splice(0)) await h.sb.stop();
});

/** Any ISO 8601 offset form: `+0530`, `+05:30`, `Z`. */
function instantOf(ts: unknown): number {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(Z|([+-])(\d{2}):?(\d{2}))$/.exec(String(ts));
  if (!m) throw new Error(`not a timestamp: ${String(ts)}`);
  const offset = m[2] === 'Z' ? 0 : (Number(m[4]) * 60 + Number(m[5])) * (m[3] === '-' ? -1 : 1);
  return Date.parse(`${m[1]}Z`) - offset * 60_000;
}

/** Walks a list the way a client must when page_context is absent: next page while the page is full. */
async function walkWithoutContext(h: Harness, family: Family, path: string, key: string, perPage: number, org?: string): Promise<Rec[]> {
  const out: Rec[] = [];
  for (let page = 1; page < 100; page++) {
    const sep = path.includes('?') ? '&' : '?';
    const { status, body } = await h.json(family, `${path}${sep}page=${page}&per_page=${perPage}`, org);
    expect(status).toBe(200);
    expect(body).not.toHaveProperty('page_context');
    const items = body[key] as Rec[];
    out.push(...items);
    if (items.length < perPage) return out;
  }
  throw new Error('no end');
}

describe('variant options', () => {
  it('are all off by default, hostile turns every one on (but the page sizes); explicit variants override the preset', async () => {
    const plain = await start({ scale: 1, organizations: 1 });
    expect(plain.sb.variants).toEqual(DEFAULT_VARIANTS);
    const hostile = await start({ scale: 1, organizations: 1, preset: 'hostile' });
    expect(hostile.sb.variants).toEqual(HOSTILE_VARIANTS);
    // perPageCap and fixedPageSize stay off under hostile: with omitPageContext a page smaller
    // than sync.per_page ends walks early unless sync.per_page is set to it (A19); their own tests do.
    // noOrganizationList too: with orgIdPerFamily no other family lists the id it would need (A13).
    // missingRecordCode keeps the spec's 1002: svcsync reads another code only once sync.gone_codes names it.
    // strictUndeclaredLists too: with omitPageContext and undeclaredPageSize no client could read those lists whole.
    // concurrencyPerUser: svcsync keeps to it only once limits.concurrency_scope says so (A46).
    // organizationPageSize as the page sizes above; inactiveOrganizations is read only when named (A22).
    // childChangesKeepParent, embeddedChildrenEmpty, allRefundsOmitted: svcsync's checks find them
    // (A25, A48, A49) and then read the long way, which their own tests count; allRefundsOmitted
    // means nothing beside allRefundsWithoutCredit, which hostile turns on.
    // eventsDeleted: deleted events are found only by a reconcile of the events (A51).
    const offUnderHostile = [
      'perPageCap',
      'fixedPageSize',
      'noOrganizationList',
      'missingRecordCode',
      'strictUndeclaredLists',
      'concurrencyPerUser',
      'organizationPageSize',
      'inactiveOrganizations',
      'uneditedRecords',
      'childChangesKeepParent',
      'embeddedChildrenEmpty',
      'allRefundsOmitted',
      'eventsDeleted',
    ];
    for (const name of VARIANT_NAMES.filter((n) => !offUnderHostile.includes(n)))
      expect(HOSTILE_VARIANTS[name], name).not.toEqual(DEFAULT_VARIANTS[name]);
    expect(HOSTILE_VARIANTS.ignoreSort.length).toBeGreaterThan(0);
    const mixed = await start({ scale: 1, organizations: 1, preset: 'hostile', variants: { numericIds: false, spurious401Rate: 0 } });
    expect(mixed.sb.variants).toEqual({ ...HOSTILE_VARIANTS, numericIds: false, spurious401Rate: 0 });
  });

  it('refuses unknown or ill-typed variants, naming them', async () => {
    const bad = async (options: SandboxOptions): Promise<string> => {
      try {
        const sb = await startSandbox({ scale: 1, organizations: 1, ...options });
        await sb.stop();
        return 'no error';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(await bad({ variants: { nope: true } as never })).toContain('variants.nope');
    expect(await bad({ variants: { spurious401Rate: 2 } })).toContain('spurious401Rate');
    expect(await bad({ variants: { sparseFields: -0.1 } })).toContain('sparseFields');
    expect(await bad({ variants: { changeWhilePagingEvery: 1.5 } })).toContain('changeWhilePagingEvery');
    expect(await bad({ variants: { ignoreSort: ['inventory.nothing'] } })).toContain('inventory.nothing');
    expect(await bad({ variants: { noOrganizationList: ['payroll'] } })).toContain('noOrganizationList');
    expect(await bad({ variants: { missingRecordCode: -1 } })).toContain('missingRecordCode');
    expect(await bad({ variants: { refusedTokenCode: 0 } })).toContain('refusedTokenCode');
    expect(await bad({ variants: { spurious401Run: 0 } })).toContain('spurious401Run');
    expect(await bad({ variants: { refusedTokenCode: 5.7 } })).toContain('refusedTokenCode');
    expect(await bad({ variants: { numericIds: 'yes' as never } })).toContain('numericIds');
    expect(await bad({ preset: 'evil' as never })).toContain('preset');
  });
});

describe('omitPageContext', () => {
  it('leaves page_context out of top-level, child and organization lists, though page 2 exists', async () => {
    const h = await start({ scale: 250, organizations: 1, unlimited: true, variants: { omitPageContext: true } });
    const org = h.orgs[0]!.organization_id;
    const first = await h.json('books', '/users');
    expect(first.body).not.toHaveProperty('page_context');
    expect(first.body['users']).toHaveLength(200);
    const second = await h.json('books', '/users?page=2');
    expect(second.body['users']).toHaveLength(50);
    expect(second.body).not.toHaveProperty('page_context');
    const walked = await walkWithoutContext(h, 'books', '/users', 'users', 200);
    expect(walked.map((u) => u['user_id'])).toEqual(h.sb.truth(org, 'books', 'users').map((u) => u['user_id']));
    // per_page not sent: pages hold 200.
    expect(((await h.json('inventory', '/contacts')).body['contacts'] as unknown[]).length).toBe(200);

    const project = h.sb.truth(org, 'invoice', 'projects')[0]!;
    const tasks = await h.json('invoice', `/projects/${String(project['project_id'])}/tasks?per_page=1`);
    expect(tasks.body).not.toHaveProperty('page_context');
    expect(tasks.body['tasks']).toHaveLength(1);
    expect((await h.json('inventory', '/vendorcredits/refunds?per_page=1')).body).not.toHaveProperty('page_context');
    const orgs = await h.json('books', '/organizations', null as never);
    expect(orgs.body).not.toHaveProperty('page_context');
    expect(orgs.body['organizations']).toHaveLength(1);
  });
});

describe('rateLimitHeaders', () => {
  it('puts the daily quota on every API answer: 200, 500, 401, 404 and organization lists', async () => {
    const h = await start({ scale: 3, organizations: 1, timeScale: 60, variants: { rateLimitHeaders: true } });
    const quota = (res: Response): [string | null, string | null, string | null] => [
      res.headers.get('x-rate-limit-limit'),
      res.headers.get('x-rate-limit-remaining'),
      res.headers.get('x-rate-limit-reset'),
    ];
    const ok = await h.get('books', '/users');
    expect(ok.status).toBe(200);
    const [limit, remaining, reset] = quota(ok);
    expect(limit).toBe('1000');
    expect(remaining).toBe('999');
    // Start 08:00Z: 16 hours to UTC midnight, counted on the sandbox's clock whatever its time scale.
    expect(Number(reset)).toBeGreaterThan(57_000);
    expect(Number(reset)).toBeLessThanOrEqual(57_600);
    expect(quota(await h.get('books', '/users'))[1]).toBe('998');

    h.sb.setFaults({ rate5xx: 1 });
    const failed = await h.get('books', '/users');
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(quota(failed).slice(0, 2)).toEqual(['1000', '997']);
    h.sb.setFaults({});

    const refused = await orgRequest(h.sb, 'books', '/users', h.orgs[0]!.organization_id, 'not-a-token');
    expect(refused.status).toBe(401);
    expect(quota(refused).slice(0, 2)).toEqual(['1000', '997']);
    const unknown = await h.get('books', '/nothing/here');
    expect(unknown.status).toBe(404);
    expect(quota(unknown)[0]).toBe('1000');
    const orgs = await h.get('books', '/organizations', null);
    expect(orgs.status).toBe(200);
    expect(quota(orgs)[0]).toBe('1000');
  });

  it('reports the daily quota on 429s too, and the remaining count falls to 0 when it is used up', async () => {
    const h = await start({ scale: 1, organizations: 1, limits: { per_day: 3 }, variants: { rateLimitHeaders: true } });
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 4; i++) remaining.push((await h.get('books', '/users')).headers.get('x-rate-limit-remaining'));
    expect(remaining).toEqual(['2', '1', '0', '0']);
    const refused = await h.get('books', '/users');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-rate-limit-limit')).toBe('3');
  });

  it('is off by default: a 200 carries no rate-limit headers', async () => {
    const h = await start({ scale: 1, organizations: 1 });
    const ok = await h.get('books', '/users');
    expect(ok.headers.get('x-rate-limit-limit')).toBeNull();
  });
});

describe('localQuotaDay', () => {
  // 16:00Z: 21:30 in Kolkata (the first organization, +05:30), whose day ends at 18:30Z.
  const startTime = '2026-11-20T16:00:00Z';
  const sandboxSeconds = (res: Response): number => Number(res.headers.get('x-rate-limit-reset'));

  it("resets each organization's quota at its local midnight and says when in X-Rate-Limit-Reset", async () => {
    const h = await start({ scale: 1, organizations: 2, startTime, limits: { per_day: 2 }, variants: { localQuotaDay: true } });
    expect(h.orgs.map((o) => o.time_zone)).toEqual(['Asia/Kolkata', 'America/Los_Angeles']);
    const first = await h.get('books', '/users');
    expect(first.status).toBe(200);
    expect(sandboxSeconds(first)).toBeGreaterThan(2.5 * 3600 - 60);
    expect(sandboxSeconds(first)).toBeLessThanOrEqual(2.5 * 3600);
    // Only the reset: the quota figures are rateLimitHeaders'.
    expect(first.headers.get('x-rate-limit-limit')).toBeNull();
    // Los Angeles (-08:00): its day ends at 08:00Z the next morning.
    const la = await h.get('books', '/users', h.orgs[1]!.organization_id);
    expect(sandboxSeconds(la)).toBeGreaterThan(16 * 3600 - 60);
    expect(sandboxSeconds(la)).toBeLessThanOrEqual(16 * 3600);
    expect((await h.get('books', '/users')).status).toBe(200);
    const spent = await h.get('books', '/users');
    expect(spent.status).toBe(429);
    expect(((await spent.json()) as { code: number }).code).toBe(45);
    expect(sandboxSeconds(spent)).toBeLessThanOrEqual(2.5 * 3600);
    expect(sandboxSeconds(spent)).toBeGreaterThan(2.5 * 3600 - 60);
    // An answer that names no organization has no quota day to tell.
    expect((await h.get('books', '/organizations', null)).headers.get('x-rate-limit-reset')).toBeNull();
    h.sb.advanceClock(Date.parse('2026-11-20T18:30:01Z') - h.sb.now());
    await h.refresh();
    // Still the 20th in UTC, but Kolkata's new day has begun.
    const next = await h.get('books', '/users');
    expect(next.status).toBe(200);
    expect(sandboxSeconds(next)).toBeGreaterThan(24 * 3600 - 60);
  });

  it('without it, the quota resets at UTC midnight and answers carry no reset', async () => {
    const h = await start({ scale: 1, organizations: 1, startTime, limits: { per_day: 2 } });
    const first = await h.get('books', '/users');
    expect(first.headers.get('x-rate-limit-reset')).toBeNull();
    await h.get('books', '/users');
    expect((await h.get('books', '/users')).status).toBe(429);
    h.sb.advanceClock(Date.parse('2026-11-20T18:30:01Z') - h.sb.now());
    await h.refresh();
    expect((await h.get('books', '/users')).status).toBe(429);
    h.sb.advanceClock(Date.parse('2026-11-21T00:00:01Z') - h.sb.now());
    await h.refresh();
    expect((await h.get('books', '/users')).status).toBe(200);
  });
});

describe('spurious401Rate', () => {
  it('answers about that share of valid requests 401 code 14, deterministically, without counting them', async () => {
    const statuses = async (): Promise<number[]> => {
      const h = await start({ scale: 2, organizations: 1, seed: 9, limits: { per_minute: 60 }, variants: { spurious401Rate: 0.3 } });
      const out: number[] = [];
      for (let i = 0; i < 100; i++) {
        const res = await h.get('books', '/users');
        if (res.status === 401) expect(await res.json()).toEqual({ code: 14, message: 'Invalid OAuth token' });
        else await res.arrayBuffer();
        out.push(res.status);
      }
      expect(h.sb.requestLog().variants.spurious401).toBe(out.filter((s) => s === 401).length);
      return out;
    };
    const a = await statuses();
    const refused = a.filter((s) => s === 401).length;
    expect(refused).toBeGreaterThan(15);
    expect(refused).toBeLessThan(45);
    // 401s are not counted: exactly per_minute of the others pass, the rest meet the window.
    expect(a.filter((s) => s === 200).length).toBe(60);
    expect(a.filter((s) => s === 429).length).toBe(100 - refused - 60);
    // Same seed, same sequence.
    expect(await statuses()).toEqual(a);
  });
});

describe('noRetryAfter', () => {
  it('sends no Retry-After on limit 429s nor on injected ones', async () => {
    const h = await start({ scale: 1, organizations: 1, limits: { per_minute: 1 }, variants: { noRetryAfter: true } });
    expect((await h.get('books', '/users')).status).toBe(200);
    const refused = await h.get('books', '/users');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(refused.headers.get('x-rate-limit-limit')).toBe('1');
    const plain = await start({ scale: 1, organizations: 1, limits: { per_minute: 1 } });
    await plain.get('books', '/users');
    expect((await plain.get('books', '/users')).headers.get('retry-after')).not.toBeNull();
    const injected = await start({ scale: 1, organizations: 1, unlimited: true, faults: { rate429: 1 }, variants: { noRetryAfter: true } });
    const res = await injected.get('books', '/users');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBeNull();
  });
});

describe('compressAnswers', () => {
  it('gzips API answers when the request takes gzip, and only then', async () => {
    const h = await start({ scale: 3, organizations: 1, variants: { compressAnswers: true } });
    const asked = await h.get('books', '/users', undefined, { 'accept-encoding': 'gzip, deflate, br' });
    expect(asked.status).toBe(200);
    expect(asked.headers.get('content-encoding')).toBe('gzip');
    expect(((await asked.json()) as Rec)['code']).toBe(0);
    for (const refused of ['identity', 'gzip;q=0, br', 'deflate']) {
      const plain = await h.get('books', '/users', undefined, { 'accept-encoding': refused });
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(((await plain.json()) as Rec)['code']).toBe(0);
    }
    expect((await h.get('books', '/users', undefined, { 'accept-encoding': '*' })).headers.get('content-encoding')).toBe('gzip');
    expect(h.sb.requestLog().variants.compressed).toBe(2);
    const off = await start({ scale: 3, organizations: 1 });
    const answer = await off.get('books', '/users', undefined, { 'accept-encoding': 'gzip' });
    expect(answer.headers.get('content-encoding')).toBeNull();
  });
});

describe('ignoreSort', () => {
  it('answers the listed lists in their default order whatever is asked, and says so in page_context', async () => {
    const h = await start({ scale: 30, organizations: 1, variants: { ignoreSort: ['inventory.contacts', 'books.users'] } });
    const ids = (body: Rec, key: string): unknown[] =>
      (body[key] as Rec[]).map((r) => r['contact_id'] ?? r['user_id'] ?? r['salesorder_id']);
    const def = await h.json('inventory', '/contacts');
    const asked = await h.json('inventory', '/contacts?sort_column=contact_name&sort_order=A');
    expect(asked.status).toBe(200);
    expect(ids(asked.body, 'contacts')).toEqual(ids(def.body, 'contacts'));
    const names = (asked.body['contacts'] as Rec[]).map((c) => String(c['contact_name']).toLowerCase());
    expect(names).not.toEqual([...names].sort());
    expect(asked.body['page_context']).toMatchObject({ sort_column: 'created_time', sort_order: 'D' });
    // Not even an unknown column is refused.
    expect((await h.json('inventory', '/contacts?sort_column=bogus')).status).toBe(200);
    const users = await h.json('books', '/users?sort_column=name&sort_order=D');
    expect(users.body['page_context']).toMatchObject({ sort_column: '', sort_order: 'A' });
    expect(ids(users.body, 'users')).toEqual(ids((await h.json('books', '/users')).body, 'users'));
    // Lists not named still sort.
    const so = await h.json('inventory', '/salesorders?sort_column=total&sort_order=A');
    const totals = (so.body['salesorders'] as Rec[]).map((s) => Number(s['total']));
    expect(totals).toEqual([...totals].sort((a, b) => a - b));
    expect(so.body['page_context']).toMatchObject({ sort_column: 'total', sort_order: 'A' });
  });
});

describe('numericIds', () => {
  it('sends every digit-only *_id of every organization as a bare 19-digit JSON number past 2^53, truth as the same digits', async () => {
    const h = await start({ scale: 6, organizations: 3, unlimited: true, variants: { numericIds: true } });
    expect(h.orgs.every((o) => o.idStyle === 'number')).toBe(true);
    for (const o of h.orgs) {
      const org = o.organization_id;
      const texts: string[] = [];
      const paths: Array<[Family, string]> = [
        ['books', '/users'],
        ['books', '/vendorcredits'],
        ['inventory', '/settings/currencies'],
        ['inventory', '/contacts'],
        ['inventory', '/salesorders'],
        ['invoice', '/projects'],
        ['billing', '/plans'],
        ['billing', '/recurringexpenses'],
        ['billing', '/events'],
      ];
      for (const [family, path] of paths) texts.push(await (await h.get(family, path, org)).text());
      const so = h.sb.truth(org, 'inventory', 'sales_orders')[0]!;
      const vc = h.sb.truth(org, 'books', 'vendor_credits')[0]!;
      const detail = await (await h.get('inventory', `/salesorders/${String(so['salesorder_id'])}`, org)).text();
      texts.push(detail, await (await h.get('books', `/vendorcredits/${String(vc['vendor_credit_id'])}`, org)).text());
      const all = texts.join('\n');
      expect(all).not.toMatch(/"(?!organization_id")[A-Za-z_]*_id":"\d+"/);
      const numbers = [...all.matchAll(/"([A-Za-z_]*_id)":(\d+)/g)];
      const fields = new Set(numbers.map((m) => m[1]));
      for (const f of [
        'currency_id',
        'account_id',
        'line_item_id',
        'custom_field_id',
        'item_id',
        'user_id',
        'customer_id',
        'salesorder_id',
        'location_id',
        'tax_id',
      ])
        expect(fields, f).toContain(f);
      expect(numbers.every((m) => m[2]!.length === 19 && BigInt(m[2]!) > 2n ** 53n)).toBe(true);
      // The detail's line item ids are the truth's, digit for digit.
      const served = [...detail.matchAll(/"line_item_id":(\d+)/g)].map((m) => m[1]);
      expect(served).toEqual((so['line_items'] as Rec[]).map((l) => l['line_item_id']));
      expect((so['line_items'] as Rec[]).every((l) => typeof l['line_item_id'] === 'string')).toBe(true);
      expect(all).not.toContain('"organization_id":' + org);
    }
    const orgs = await (await h.get('books', '/organizations', null)).text();
    expect(orgs).toMatch(/"organization_id":"\d+"/);
    expect(orgs).toMatch(/"currency_id":\d{19}[,}]/);
  });
});

describe('mixedOffsets', () => {
  it('writes timestamps in many offset forms whose text order differs from their instant order; instants are unchanged', async () => {
    const options: SandboxOptions = { scale: 1000, organizations: 1, unlimited: true };
    const h = await start({ ...options, variants: { mixedOffsets: true } });
    const plain = await start(options);
    const mixed = await h.all('inventory', '/contacts?sort_column=last_modified_time&sort_order=D', 'contacts');
    const normal = await plain.all('inventory', '/contacts?sort_column=last_modified_time&sort_order=D', 'contacts');
    expect(mixed.map((c) => c['contact_id'])).toEqual(normal.map((c) => c['contact_id']));
    const forms = new Set<string>();
    for (let i = 0; i < mixed.length; i++) {
      for (const f of ['last_modified_time', 'created_time']) {
        const ts = String(mixed[i]![f]);
        forms.add(/(Z|[+-]\d\d:?\d\d)$/.exec(ts)![1]!);
        expect(instantOf(ts)).toBe(instantOf(normal[i]![f]));
      }
    }
    for (const form of ['Z', '+0530', '+05:30', '-1100', '-08:00']) expect(forms).toContain(form);
    // Sorted by instant, newest first; the text is not.
    const instants = mixed.map((c) => instantOf(c['last_modified_time']));
    expect(instants.every((t, i) => i === 0 || t <= instants[i - 1]!)).toBe(true);
    const texts = mixed.map((c) => String(c['last_modified_time']));
    const inversions = texts.filter((t, i) => i > 0 && t > texts[i - 1]!).length;
    expect(inversions).toBeGreaterThan(10);
    // The same record reads the same on every read.
    expect(
      (await h.all('inventory', '/contacts?sort_column=last_modified_time&sort_order=D', 'contacts')).map((c) => c['last_modified_time']),
    ).toEqual(texts);
    const truth = new Map(
      h.sb.truth(h.orgs[0]!.organization_id, 'inventory', 'contacts').map((c) => [c['contact_id'], c['last_modified_time']]),
    );
    expect(mixed.every((c) => truth.get(c['contact_id']) === c['last_modified_time'])).toBe(true);
  });

  it('keeps the order by change time an order by instant after mutations', async () => {
    const h = await start({ scale: 40, organizations: 1, unlimited: true, variants: { mixedOffsets: true } });
    h.sb.mutate({ modify: 5, create: 3, families: ['inventory'], streams: ['sales_orders'] });
    const list = await h.all('inventory', '/salesorders?sort_column=last_modified_time&sort_order=A', 'salesorders');
    const instants = list.map((s) => instantOf(s['last_modified_time']));
    expect(instants.every((t, i) => i === 0 || t >= instants[i - 1]!)).toBe(true);
    expect(list).toHaveLength(43);
  });
});

describe('sparseFields', () => {
  it('makes optional fields absent, null or "" deterministically, never keys or change times, and truth shows the same', async () => {
    const options: SandboxOptions = { scale: 40, organizations: 1, unlimited: true };
    const h = await start({ ...options, variants: { sparseFields: 0.3 } });
    const plain = await start(options);
    const org = h.orgs[0]!.organization_id;
    const list = await h.all('inventory', '/salesorders', 'salesorders');
    const full = await plain.all('inventory', '/salesorders', 'salesorders');
    let absent = 0;
    let nulls = 0;
    let empty = 0;
    for (let i = 0; i < list.length; i++) {
      const rec = list[i]!;
      expect(rec['salesorder_id']).toBeTruthy();
      expect(rec['last_modified_time']).toMatch(/^\d{4}-/);
      for (const key of Object.keys(full[i]!)) {
        if (!(key in rec)) absent++;
        else if (rec[key] === null) nulls++;
        else if (rec[key] === '' && full[i]![key] !== '') empty++;
      }
    }
    expect(absent).toBeGreaterThan(20);
    expect(nulls).toBeGreaterThan(20);
    expect(empty).toBeGreaterThan(20);
    // Stable across reads, and the truth is what is served.
    expect(await h.all('inventory', '/salesorders', 'salesorders')).toEqual(list);
    const truth = h.sb.truth(org, 'inventory', 'sales_orders');
    const detail = (await h.json('inventory', `/salesorders/${String(truth[3]!['salesorder_id'])}`)).body['salesorder'];
    expect(detail).toEqual(truth[3]);
    // Child records keep their own and their parent's key.
    for (const p of h.sb.truth(org, 'inventory', 'contact_persons')) {
      expect(p['contact_person_id']).toBeTruthy();
      expect(p['contact_id']).toBeTruthy();
    }
    for (const p of h.sb.truth(org, 'billing', 'plans')) {
      expect(p['plan_code']).toBeTruthy();
      expect(p['updated_time']).toBeTruthy();
    }
  });
});

describe('extraFields', () => {
  it('adds unknown x_new_field_* fields (string, number, nested object) to records and line items; truth includes them', async () => {
    const h = await start({ scale: 20, organizations: 1, unlimited: true, variants: { extraFields: true } });
    const org = h.orgs[0]!.organization_id;
    const list = (await h.json('inventory', '/salesorders')).body['salesorders'] as Rec[];
    const extras = list.flatMap((s) => Object.entries(s).filter(([k]) => k.startsWith('x_new_field_')));
    expect(extras.some(([, v]) => typeof v === 'string')).toBe(true);
    expect(extras.some(([, v]) => typeof v === 'number')).toBe(true);
    expect(extras.some(([, v]) => typeof v === 'object' && v !== null && !Array.isArray(v))).toBe(true);
    const truth = h.sb.truth(org, 'inventory', 'sales_orders');
    const withExtras = truth.find((s) => Object.keys(s).some((k) => k.startsWith('x_new_field_')))!;
    const detail = (await h.json('inventory', `/salesorders/${String(withExtras['salesorder_id'])}`)).body['salesorder'] as Rec;
    expect(detail).toEqual(withExtras);
    const items = truth.flatMap((s) => s['line_items'] as Rec[]);
    expect(items.some((l) => Object.keys(l).some((k) => k.startsWith('x_new_field_')))).toBe(true);
    // Child records too.
    expect(h.sb.truth(org, 'invoice', 'tasks').some((t) => Object.keys(t).some((k) => k.startsWith('x_new_field_')))).toBe(true);
  });
});

describe('inverseExchangeRate', () => {
  it('quotes exchange_rate the other way (1 / the default), bcy_total unchanged; truth holds what is served', async () => {
    const plain = await start({ scale: 20, organizations: 3, unlimited: true });
    const inverse = await start({ scale: 20, organizations: 3, unlimited: true, variants: { inverseExchangeRate: true } });
    let foreign = 0;
    for (const org of inverse.orgs.map((o) => o.organization_id)) {
      // The sales-order list sends bcy_total, the single record exchange_rate (spec 2.x).
      const list = (await inverse.json('inventory', '/salesorders', org)).body['salesorders'] as Rec[];
      const plainList = (await plain.json('inventory', '/salesorders', org)).body['salesorders'] as Rec[];
      const a = plain.sb.truth(org, 'inventory', 'sales_orders');
      const b = inverse.sb.truth(org, 'inventory', 'sales_orders');
      expect(b.map((s) => s['salesorder_number'])).toEqual(a.map((s) => s['salesorder_number']));
      for (const s of a.filter((x) => typeof x['exchange_rate'] === 'number' && x['exchange_rate'] !== 1)) {
        foreign++;
        const number = s['salesorder_number'];
        const t = b.find((x) => x['salesorder_number'] === number)!;
        expect(t['exchange_rate']).toBeCloseTo(1 / Number(s['exchange_rate']), 12);
        const served = (await inverse.json('inventory', `/salesorders/${String(t['salesorder_id'])}`, org)).body['salesorder'] as Rec;
        expect(served['exchange_rate']).toBe(t['exchange_rate']);
        const listed = list.find((x) => x['salesorder_number'] === number)!;
        expect(listed['bcy_total']).toBe(plainList.find((x) => x['salesorder_number'] === number)!['bcy_total']);
        // bcy_total is total at the default reading's rate: now nearer total ÷ exchange_rate.
        const total = Number(t['total']);
        const rate = Number(t['exchange_rate']);
        const bcy = Number(listed['bcy_total']);
        expect(Math.abs(bcy - total / rate)).toBeLessThan(Math.abs(bcy - total * rate));
      }
    }
    expect(foreign).toBeGreaterThan(0);
  });
});

describe('line items\u2019 bcy_rate', () => {
  it('is the rate in the base currency (rate × the default reading of exchange_rate), and omitLineBcyRate leaves it out', async () => {
    const plain = await start({ scale: 20, organizations: 3, unlimited: true });
    const omitted = await start({ scale: 20, organizations: 3, unlimited: true, variants: { omitLineBcyRate: true } });
    let foreign = 0;
    for (const org of plain.orgs.map((o) => o.organization_id)) {
      const orders = plain.sb.truth(org, 'inventory', 'sales_orders');
      const credits = plain.sb.truth(org, 'inventory', 'vendor_credits');
      for (const record of [...orders, ...credits]) {
        const rate = record['exchange_rate'] === '' ? 1 : Number(record['exchange_rate']);
        const precision = Number(record['price_precision']);
        for (const line of record['line_items'] as Rec[]) {
          expect(Math.abs(Number(line['bcy_rate']) - Number(line['rate']) * rate)).toBeLessThanOrEqual(0.51 * 10 ** -precision);
          if (rate !== 1) foreign++;
        }
      }
      const served = (await omitted.json('inventory', `/salesorders/${String(orders[0]!['salesorder_id'])}`, org)).body[
        'salesorder'
      ] as Rec;
      const lines = served['line_items'] as Rec[];
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).not.toHaveProperty('bcy_rate');
      for (const record of omitted.sb.truth(org, 'books', 'vendor_credits'))
        for (const line of record['line_items'] as Rec[]) expect(line).not.toHaveProperty('bcy_rate');
    }
    expect(foreign).toBeGreaterThan(0);
  });
});

describe('arrayQuirks', () => {
  it('sends one line item as an object and documents as strings; truth counts the rows a client should keep', async () => {
    const options: SandboxOptions = { scale: 60, organizations: 1, unlimited: true };
    const h = await start({ ...options, variants: { arrayQuirks: true } });
    const plain = await start(options);
    const org = h.orgs[0]!.organization_id;
    const truth = h.sb.truth(org, 'books', 'vendor_credits');
    const plainTruth = plain.sb.truth(org, 'books', 'vendor_credits');
    let singles = 0;
    let stringDocs = 0;
    let singleRefunds = 0;
    for (let i = 0; i < truth.length; i++) {
      const t = truth[i]!;
      const served = (await h.json('books', `/vendorcredits/${String(t['vendor_credit_id'])}`)).body['vendor_credit'] as Rec;
      const lines = served['line_items'];
      expect(Array.isArray(t['line_items'])).toBe(true);
      if (!Array.isArray(lines)) {
        singles++;
        expect(typeof lines).toBe('object');
        expect(t['line_items']).toEqual([lines]);
      } else expect(t['line_items']).toEqual(lines);
      expect((t['line_items'] as unknown[]).length).toBe((plainTruth[i]!['line_items'] as unknown[]).length);
      const docs = served['documents'] as unknown[];
      if (docs.some((d) => typeof d === 'string')) {
        stringDocs++;
        expect(docs).toEqual(['document_id', 'file_name']);
        expect(t['documents']).toEqual([]);
      }
      const refunds = served['vendor_credit_refunds'];
      if (!Array.isArray(refunds)) {
        singleRefunds++;
        expect(t['vendor_credit_refunds']).toEqual([refunds]);
      }
    }
    expect(singles).toBeGreaterThan(3);
    expect(stringDocs).toBeGreaterThan(3);
    expect(singleRefunds).toBeGreaterThan(3);
    // Sales orders too.
    const so = h.sb.truth(org, 'inventory', 'sales_orders').find((s) => (s['line_items'] as unknown[]).length === 1)!;
    const served = (await h.json('inventory', `/salesorders/${String(so['salesorder_id'])}`)).body['salesorder'] as Rec;
    expect(Array.isArray(served['line_items'])).toBe(false);
    expect(served['line_items']).toEqual((so['line_items'] as unknown[])[0]);
  });
});

describe('orgIdPerFamily', () => {
  it('gives the business another organization id in each family; each family lists and accepts only its own', async () => {
    const h = await start({ scale: 5, organizations: 2, variants: { orgIdPerFamily: true } });
    const families: Family[] = ['books', 'inventory', 'invoice', 'billing'];
    for (const o of h.orgs) {
      expect(o.ids.books).toBe(o.organization_id);
      expect(new Set(Object.values(o.ids)).size).toBe(4);
    }
    expect(new Set(h.orgs.flatMap((o) => Object.values(o.ids))).size).toBe(8);
    for (const family of families) {
      const listed = ((await h.json(family, '/organizations', null as never)).body['organizations'] as Rec[]).map(
        (r) => r['organization_id'],
      );
      expect(listed).toEqual(h.orgs.map((o) => o.ids[family]));
    }
    const o = h.orgs[1]!;
    const ok = await h.json('inventory', '/contacts', o.ids.inventory);
    expect(ok.status).toBe(200);
    expect(ok.body['contacts']).toHaveLength(5);
    const wrong = await h.json('inventory', '/contacts', o.ids.books);
    expect(wrong.status).toBe(400);
    expect(wrong.body['code']).toBe(6041);
    expect((await h.json('billing', '/plans', o.ids.billing)).status).toBe(200);
    expect((await h.json('billing', '/plans', o.ids.invoice)).status).toBe(400);
    expect((await h.json('invoice', '/projects', o.ids.invoice)).status).toBe(200);
    // truth, count and mutate take the family's id (and the books id).
    const servedIds = [...(await (await h.get('inventory', '/contacts', o.ids.inventory)).text()).matchAll(/"contact_id":"?(\d+)/g)].map(
      (m) => m[1],
    );
    expect(h.sb.truth(o.ids.inventory, 'inventory', 'contacts').map((c) => c['contact_id'])).toEqual(servedIds);
    expect(h.sb.count(o.ids.invoice, 'invoice', 'projects')).toBe(5);
    expect(h.sb.truth(o.ids.billing, 'billing', 'organizations')[0]!['organization_id']).toBe(o.ids.billing);
    expect(() => h.sb.truth(o.ids.billing, 'inventory', 'contacts')).toThrow(RangeError);
    const summary = h.sb.mutate({ create: 1, organizationId: o.ids.inventory, families: ['inventory'], streams: ['contacts'] });
    expect(summary.created).toBe(1);
    expect(h.sb.count(o.ids.inventory, 'inventory', 'contacts')).toBe(6);
    expect(h.sb.count(h.orgs[0]!.ids.inventory, 'inventory', 'contacts')).toBe(5);
    // The config snippet lets every family's id through.
    const snippet = configSnippet(h.sb.url, h.sb.credentials, { plan: 'free', timeScale: 1, unlimited: false }, h.orgs, h.sb.variants);
    for (const id of h.orgs.flatMap((g) => Object.values(g.ids))) expect(snippet).toContain(`"${id}"`);
    expect(snippet).toContain('orgIdPerFamily=true');
  });

  it('keeps one id for all four families by default', async () => {
    const h = await start({ scale: 1, organizations: 1 });
    const o = h.orgs[0]!;
    expect(Object.values(o.ids)).toEqual([o.organization_id, o.organization_id, o.organization_id, o.organization_id]);
    expect(h.sb.count(o.organization_id, 'billing', 'plans')).toBe(1);
  });
});

describe('defaultFiltersHide', () => {
  it('hides inactive, void, stopped ... records unless filter_by is sent; an explicit All lists everything', async () => {
    const h = await start({ scale: 80, organizations: 1, unlimited: true, variants: { defaultFiltersHide: true } });
    const org = h.orgs[0]!.organization_id;
    const cases: Array<[Family, string, string, string, string, string[]]> = [
      ['inventory', '/contacts', 'contacts', 'contacts', 'Status.All', ['inactive']],
      ['inventory', '/salesorders', 'salesorders', 'sales_orders', 'Status.All', ['void', 'closed']],
      ['books', '/vendorcredits', 'vendor_credits', 'vendor_credits', 'Status.All', ['void', 'closed']],
      ['books', '/users', 'users', 'users', 'Status.All', ['inactive', 'deleted']],
      ['invoice', '/projects', 'projects', 'projects', 'Status.All', ['inactive']],
      ['billing', '/plans', 'plans', 'plans', 'PlanStatus.All', ['inactive']],
      ['billing', '/recurringexpenses', 'recurring_expenses', 'recurring_expenses', 'Status.All', ['stopped', 'expired']],
    ];
    for (const [family, path, key, stream, all, hidden] of cases) {
      const shown = await h.all(family, path, key);
      const truth = h.sb.truth(org, family, stream);
      expect(shown.length, path).toBeLessThan(truth.length);
      expect(
        shown.some((r) => hidden.includes(String(r['status']))),
        path,
      ).toBe(false);
      expect(shown.length, path).toBe(truth.filter((r) => !hidden.includes(String(r['status']))).length);
      expect((await h.all(family, `${path}?filter_by=${all}`, key)).length, path).toBe(truth.length);
    }
    const hooks = await h.all('books', '/settings/webhooks', 'webhooks');
    expect(hooks.every((w) => w['is_active'] === true)).toBe(true);
    expect((await h.all('books', '/settings/webhooks?filter_by=Entity.All', 'webhooks')).length).toBe(80);
    // Lists without filter_by are whole.
    expect((await h.all('billing', '/events', 'events')).length).toBe(80);
  });
});

describe('changeWhilePagingEvery', () => {
  it('modifies one record and creates one after every Nth list page, so a walk by change time misses a record', async () => {
    const h = await start({ scale: 30, organizations: 1, unlimited: true, variants: { changeWhilePagingEvery: 2 } });
    const org = h.orgs[0]!.organization_id;
    const before = h.sb.truth(org, 'inventory', 'sales_orders');
    const seen: unknown[] = [];
    let pages = 0;
    for (let page = 1; ; page++) {
      const { body } = await h.json('inventory', `/salesorders?sort_column=last_modified_time&sort_order=A&per_page=5&page=${page}`);
      pages++;
      seen.push(...(body['salesorders'] as Rec[]).map((s) => s['salesorder_id']));
      if (!(body['page_context'] as Rec)['has_more_page']) break;
    }
    const changes = Math.floor(pages / 2);
    expect(changes).toBeGreaterThan(2);
    expect(h.sb.requestLog().variants.pagingMutations).toBe(changes);
    expect(h.sb.count(org, 'inventory', 'sales_orders')).toBe(30 + changes);
    const after = h.sb.truth(org, 'inventory', 'sales_orders');
    const modified = after.filter((s) =>
      before.some((b) => b['salesorder_id'] === s['salesorder_id'] && b['last_modified_time'] !== s['last_modified_time']),
    );
    expect(modified.length).toBeGreaterThan(0);
    // Some record of the final truth was never served during the walk.
    expect(after.some((s) => !seen.includes(s['salesorder_id']))).toBe(true);
    // Child lists and streams without a change field do not count.
    const base = h.sb.requestLog().variants.pagingMutations;
    for (let i = 0; i < 4; i++) await h.json('books', '/users');
    expect(h.sb.requestLog().variants.pagingMutations).toBe(base);
  });
});

describe('spurious401Rate per request', () => {
  it('refuses each request at the same arrivals whatever arrives beside it, with the refused-token answer', async () => {
    const pattern = async (between: number): Promise<number[]> => {
      const h = await start({
        scale: 2,
        organizations: 1,
        seed: 3,
        unlimited: true,
        variants: { spurious401Rate: 0.3, refusedTokenCode: 57 },
      });
      const out: number[] = [];
      for (let i = 0; i < 40; i++) {
        const res = await h.get('books', '/users?per_page=1');
        if (res.status === 401) expect(await res.json()).toEqual({ code: 57, message: 'invalid or expired OAuth token' });
        else await res.arrayBuffer();
        out.push(res.status);
        // Other requests in between, and a refused token, move nothing for /users.
        for (let j = 0; j < between; j++) await (await h.get('inventory', `/contacts?per_page=${j + 1}`)).arrayBuffer();
        if (between > 0)
          await (await h.get('books', '/users?per_page=1', undefined, { authorization: 'Svc-oauthtoken expired' })).arrayBuffer();
      }
      return out;
    };
    const alone = await pattern(0);
    expect(alone.filter((s) => s === 401).length).toBeGreaterThan(4);
    expect(alone.filter((s) => s === 200).length).toBeGreaterThan(20);
    expect(await pattern(3)).toEqual(alone);
  });

  it('spurious401Run: a refusal lasts that many arrivals of the request, fresh tokens included; the next is let through', async () => {
    for (const run of [1, 2, 3]) {
      const h = await start({
        scale: 2,
        organizations: 1,
        seed: 3,
        unlimited: true,
        variants: { spurious401Rate: 0.2, spurious401Run: run },
      });
      let refusedInARow = 0;
      const runs: number[] = [];
      for (let i = 0; i < 120; i++) {
        const res = await h.get('books', '/users?per_page=1');
        await res.arrayBuffer();
        if (res.status === 401) {
          refusedInARow++;
          await h.refresh();
        } else {
          if (refusedInARow > 0) runs.push(refusedInARow);
          refusedInARow = 0;
        }
      }
      expect(runs.length, `run ${run}`).toBeGreaterThan(5);
      expect(new Set(runs), `run ${run}`).toEqual(new Set([run]));
      expect(h.sb.requestLog().variants.spurious401).toBe(runs.reduce((a, n) => a + n, 0) + refusedInARow);
    }
  });
});

describe('hostile preset', () => {
  it('turns everything on at once', async () => {
    const h = await start({ scale: 30, organizations: 2, unlimited: true, preset: 'hostile', variants: { spurious401Rate: 0 } });
    const o = h.orgs[1]!;
    expect(o.ids.inventory).not.toBe(o.ids.books);
    const res = await h.get('inventory', '/salesorders?per_page=10', o.ids.inventory);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-rate-limit-limit')).toBe('1000');
    const text = await res.text();
    expect(text).not.toContain('page_context');
    expect(text).toMatch(/"salesorder_id":\d{19}[,}]/);
    expect(text).toMatch(/"x_new_field_/);
    const body = JSON.parse(text) as Rec;
    expect((body['salesorders'] as Rec[]).map((s) => s['status'])).not.toContain('void');
    const contacts = await h.json('inventory', '/contacts?per_page=5&sort_column=contact_name', o.ids.inventory);
    expect(contacts.status).toBe(200);
  });
});

describe('svcsync sandbox --preset / --variant', () => {
  async function parseError(args: string[]): Promise<string> {
    const cmd = sandboxCommand()
      .exitOverride()
      .configureOutput({ writeErr: () => {}, writeOut: () => {} });
    try {
      await cmd.parseAsync(args, { from: 'user' });
    } catch (e) {
      return String((e as Error).message);
    }
    return 'no error';
  }

  it('parses name[=value], the hostile value when none is given', () => {
    let v = parseVariant('numericIds');
    v = parseVariant('sparseFields=0.25', v);
    v = parseVariant('omitPageContext=false', v);
    v = parseVariant('ignoreSort=inventory.contacts,billing.recurring_expenses', v);
    v = parseVariant('changeWhilePagingEvery=3', v);
    v = parseVariant('spurious401Rate', v);
    v = parseVariant('noOrganizationList=billing,invoice', v);
    v = parseVariant('refusedTokenCode', v);
    expect(v).toEqual({
      refusedTokenCode: 57,
      noOrganizationList: ['billing', 'invoice'],
      numericIds: true,
      sparseFields: 0.25,
      omitPageContext: false,
      ignoreSort: ['inventory.contacts', 'billing.recurring_expenses'],
      changeWhilePagingEvery: 3,
      spurious401Rate: HOSTILE_VARIANTS.spurious401Rate,
    });
  });

  it('turns a switch the hostile preset leaves off on when named alone, and asks a value of the other variants it leaves off', async () => {
    expect(parseVariant('strictUndeclaredLists')).toEqual({ strictUndeclaredLists: true });
    expect(parseVariant('concurrencyPerUser')).toEqual({ concurrencyPerUser: true });
    for (const name of ['perPageCap', 'missingRecordCode', 'noOrganizationList', 'organizationPageSize']) {
      const message = await parseError(['--variant', name]);
      expect(message, name).toContain(`--variant ${name}: the hostile preset leaves it off: give a value`);
    }
  });

  it('names the bad option and the bad variant', async () => {
    for (const [arg, word] of [
      ['nope', 'nope'],
      ['sparseFields=2', 'sparseFields'],
      ['numericIds=maybe', 'numericIds'],
      ['changeWhilePagingEvery=-1', 'changeWhilePagingEvery'],
      ['ignoreSort=books.nothing', 'books.nothing'],
      ['noOrganizationList=payroll', 'noOrganizationList'],
      ['spurious401Rate=abc', 'spurious401Rate'],
    ]) {
      const message = await parseError(['--variant', arg!]);
      expect(message, arg).toContain('--variant');
      expect(message, arg).toContain(word);
    }
    expect(await parseError(['--preset', 'evil'])).toContain('hostile');
  });

  it('prints the variants in force in the config snippet, which stays valid', async () => {
    const sb: Sandbox = await startSandbox({ scale: 1, organizations: 1, variants: { numericIds: true } });
    try {
      const text = configSnippet(sb.url, sb.credentials, { plan: 'free', timeScale: 1, unlimited: false }, sb.organizations(), sb.variants);
      expect(text).toContain('# sandbox variants: numericIds=true');
      expect(text).toContain(`organizations: ["${sb.organizations()[0]!.organization_id}"]`);
      expect(
        await (await orgRequest(sb, 'books', '/users', sb.organizations()[0]!.organization_id, await tokenFor(sb))).json(),
      ).toMatchObject({ code: 0 });
    } finally {
      await sb.stop();
    }
  });
});

describe('oddText', () => {
  it('ends a name of about one record in four in NUL and an unpaired surrogate; keys untouched; truth holds what is served', async () => {
    const h = await start({ scale: 40, organizations: 1, unlimited: true, variants: { oddText: true } });
    const org = h.orgs[0]!.organization_id;
    const contacts = (await h.json('inventory', '/contacts?per_page=200', org)).body['contacts'] as Rec[];
    const odd = contacts.filter((c) => Object.values(c).some((v) => typeof v === 'string' && v.endsWith('\u0000\ud800')));
    expect(odd.length).toBeGreaterThan(contacts.length / 8);
    expect(odd.length).toBeLessThan(contacts.length / 2);
    for (const c of odd) {
      const field = Object.keys(c).find((k) => String(c[k]).endsWith('\u0000\ud800'))!;
      expect(field).toMatch(/(name|description|notes)$/);
      expect(String(c['contact_id'])).toMatch(/^\d+$/);
    }
    const truth = h.sb.truth(org, 'inventory', 'contacts');
    const served = odd[0]!;
    const field = Object.keys(served).find((k) => String(served[k]).endsWith('\u0000\ud800'))!;
    expect(truth.find((t) => t['contact_id'] === served['contact_id'])![field]).toBe(served[field]);
    // Off by default.
    const plain = await start({ scale: 40, organizations: 1, unlimited: true });
    const plainContacts = (await plain.json('inventory', '/contacts?per_page=200', org)).body['contacts'] as Rec[];
    expect(plainContacts.some((c) => Object.values(c).some((v) => typeof v === 'string' && v.includes('\u0000')))).toBe(false);
  });
});

describe('hoursAsNumbers', () => {
  const HOURS = /^\d+:\d{2}$/;
  const hoursOf = (rec: Rec): unknown[] =>
    ['total_hours', 'billed_hours', 'un_billed_hours', 'log_time'].filter((f) => f in rec).map((f) => rec[f]);

  it('sends project and task hours as decimal numbers, also after a change; off, as hh:mm text', async () => {
    const h = await start({ scale: 10, organizations: 1, unlimited: true, variants: { hoursAsNumbers: true } });
    const org = h.orgs[0]!.organization_id;
    const projects = (await h.json('invoice', '/projects', org)).body['projects'] as Rec[];
    const tasks = (await h.json('invoice', `/projects/${String(projects[0]!['project_id'])}/tasks`, org)).body['tasks'] as Rec[];
    expect(projects.length * tasks.length).toBeGreaterThan(0);
    for (const rec of [...projects, ...tasks]) {
      expect(hoursOf(rec).length).toBe(3);
      for (const v of hoursOf(rec)) expect(typeof v).toBe('number');
    }
    // 15-minute steps come out exact: a task's log time is its billed plus unbilled hours.
    for (const t of tasks) expect(t['log_time']).toBeCloseTo((t['billed_hours'] as number) + (t['un_billed_hours'] as number), 3);
    h.sb.mutate({ modify: 20, streams: ['tasks'], families: ['invoice'] });
    for (const t of h.sb.truth(org, 'invoice', 'tasks')) for (const v of hoursOf(t)) expect(typeof v).toBe('number');
    const plain = await start({ scale: 10, organizations: 1, unlimited: true });
    for (const p of (await plain.json('invoice', '/projects', org)).body['projects'] as Rec[])
      for (const v of hoursOf(p)) expect(String(v)).toMatch(HOURS);
  });
});

describe('invoiceOrgInQuery', () => {
  it('takes the organization of the invoice projects list from organization_id alone; the task endpoints keep the header', async () => {
    const h = await start({ scale: 5, organizations: 1, unlimited: true, variants: { invoiceOrgInQuery: true } });
    const org = h.orgs[0]!.organization_id;
    const send = async (path: string, how: { header?: boolean; query?: boolean }): Promise<{ status: number; body: Rec }> => {
      const url = `${h.sb.url}/invoice/v3${path}${how.query ? `${path.includes('?') ? '&' : '?'}organization_id=${org}` : ''}`;
      const headers: Record<string, string> = { authorization: `Svc-oauthtoken ${h.token}` };
      if (how.header) headers['X-com-svc-invoice-organizationid'] = org;
      const res = await fetch(url, { headers });
      return { status: res.status, body: (await res.json()) as Rec };
    };
    const headerOnly = await send('/projects', { header: true });
    expect(headerOnly.status).toBe(400);
    expect(headerOnly.body).toMatchObject({ code: 2 });
    expect(String(headerOnly.body['message'])).toContain('organization_id');
    const projects = (await send('/projects', { query: true })).body['projects'] as Rec[];
    expect(projects.length).toBeGreaterThan(0);
    expect((await send('/projects', { query: true, header: true })).status).toBe(200);
    const tasks = `/projects/${String(projects[0]!['project_id'])}/tasks`;
    expect((await send(tasks, { header: true })).status).toBe(200);
    expect((await send(tasks, { query: true })).status).toBe(400);
    // Off: the header, as everywhere in the family.
    const plain = await start({ scale: 5, organizations: 1, unlimited: true });
    expect((await plain.get('invoice', '/projects', org)).status).toBe(200);
  });
});

describe('noOrganizationList', () => {
  it("answers the named families' organization list as an unknown path; their other endpoints and the other lists work", async () => {
    const h = await start({ scale: 5, organizations: 1, unlimited: true, variants: { noOrganizationList: ['billing'] } });
    const org = h.orgs[0]!.organization_id;
    const gone = await h.json('billing', '/organizations');
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ code: 5 });
    expect((await h.get('billing', '/plans', org)).status).toBe(200);
    const books = await h.json('books', '/organizations');
    expect(books.status).toBe(200);
    expect((books.body['organizations'] as Rec[]).map((o) => o['organization_id'])).toEqual([org]);
    // Off: billing lists its organizations like the others.
    const plain = await start({ scale: 5, organizations: 1, unlimited: true });
    expect((await plain.json('billing', '/organizations')).status).toBe(200);
  });
});

describe('missingRecordCode', () => {
  it('answers a single read, and a child list, of a record that does not exist with 404 and that code', async () => {
    const h = await start({ scale: 5, organizations: 1, unlimited: true, variants: { missingRecordCode: 2 } });
    const org = h.orgs[0]!.organization_id;
    for (const path of ['/salesorders/999', '/contacts/999/contactpersons']) {
      const answer = await h.json('inventory', path, org);
      expect(answer.status, path).toBe(404);
      expect(answer.body, path).toMatchObject({ code: 2 });
    }
    const plain = await start({ scale: 5, organizations: 1, unlimited: true });
    expect((await plain.json('inventory', '/salesorders/999', plain.orgs[0]!.organization_id)).body).toMatchObject({ code: 1002 });
  });
});

describe('otherListKeys', () => {
  it('lists the books per-credit refunds under refunds; the inventory ones keep the key spec 4.8 shows', async () => {
    const h = await start({ scale: 30, organizations: 1, unlimited: true, variants: { otherListKeys: true } });
    const org = h.orgs[0]!.organization_id;
    const credit = h.sb.truth(org, 'books', 'vendor_credits')[0]!;
    const books = await h.json('books', `/vendorcredits/${String(credit['vendor_credit_id'])}/refunds`, org);
    expect(Object.keys(books.body)).toContain('refunds');
    expect(Object.keys(books.body)).not.toContain('vendor_credit_refunds');
    const other = h.sb.truth(org, 'inventory', 'vendor_credits')[0]!;
    const inventory = await h.json('inventory', `/vendorcredits/${String(other['vendor_credit_id'])}/refunds`, org);
    expect(Object.keys(inventory.body)).toContain('vendor_credit_refunds');
  });
});

describe('perPageCap', () => {
  it('cuts every page to the cap whatever per_page asked, pages counted at the cap, page_context telling the size used', async () => {
    const h = await start({ scale: 20, organizations: 1, unlimited: true, variants: { perPageCap: 7 } });
    const org = h.orgs[0]!.organization_id;
    const truth = h.sb.truth(org, 'inventory', 'contacts').length;
    const ids: unknown[] = [];
    for (let page = 1; ; page++) {
      const { status, body } = await h.json('inventory', `/contacts?page=${page}&per_page=10`, org);
      expect(status).toBe(200);
      const rows = body['contacts'] as Rec[];
      const context = body['page_context'] as Rec;
      expect(context['per_page']).toBe(7);
      expect(rows.length).toBe(Math.min(7, truth - ids.length));
      ids.push(...rows.map((r) => r['contact_id']));
      if (context['has_more_page'] !== true) break;
    }
    expect(new Set(ids).size).toBe(truth);
    expect(truth).toBeGreaterThan(14);
    // A per_page under the cap is served as asked.
    expect(((await h.json('inventory', '/contacts?per_page=5', org)).body['contacts'] as Rec[]).length).toBe(5);
  });

  it.each([-1, 2.5, 201, 'x'])('refuses %j', async (value) => {
    await expect(start({ variants: { perPageCap: value as number } })).rejects.toThrow(
      /perPageCap must be an integer from 0 \(off\) to 200/,
    );
  });
});

describe('fixedPageSize', () => {
  it('serves pages of its size whatever per_page asked, more or fewer, page_context telling the size', async () => {
    const h = await start({ scale: 40, organizations: 1, unlimited: true, variants: { fixedPageSize: 15 } });
    const org = h.orgs[0]!.organization_id;
    const truth = h.sb.truth(org, 'inventory', 'contacts').length;
    for (const asked of [5, 15, 200]) {
      const first = (await h.json('inventory', `/contacts?per_page=${asked}`, org)).body;
      expect((first['contacts'] as Rec[]).length).toBe(Math.min(15, truth));
      expect((first['page_context'] as Rec)['per_page']).toBe(15);
    }
    const second = (await h.json('inventory', '/contacts?page=2&per_page=5', org)).body['contacts'] as Rec[];
    expect(second.length).toBe(Math.min(15, truth - 15));
    // Off by default, and it wins over perPageCap.
    const both = await start({ scale: 40, organizations: 1, unlimited: true, variants: { fixedPageSize: 15, perPageCap: 7 } });
    expect(((await both.json('inventory', '/contacts?per_page=10', org)).body['contacts'] as Rec[]).length).toBe(15);
  });
});
