import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, orgRequest, type Harness } from './sandbox-client.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.sb.stop();
  h = undefined;
});

const A = 'svcsync/1.0.0 (host-a/101)';
const B = 'svcsync/1.0.0 (host-b/202)';

/** A GET of inventory sales orders (books vendor credits) of `org` sent as `caller`, its body read to the end. */
async function call(x: Harness, caller: string, org: string, family: 'inventory' | 'books' = 'inventory'): Promise<number> {
  const path = family === 'inventory' ? '/salesorders?per_page=5' : '/vendorcredits?per_page=5';
  const res = await orgRequest(x.sb, family, path, org, x.token, { 'user-agent': caller });
  await res.text();
  return res.status;
}

/** A GET with no User-Agent header at all (fetch always sends one). */
function bare(x: Harness, org: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${x.sb.url}/inventory/v1/salesorders?per_page=5&organization_id=${org}`);
    const req = http.get(url, { headers: { authorization: `Svc-oauthtoken ${x.token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

/** Until the sandbox holds a request in its latency fault (it has received it). */
async function waitInFlight(x: Harness): Promise<void> {
  while (x.sb.requestLog().faults.latency < 1) await new Promise((r) => setTimeout(r, 5));
}

describe('request log: callers and overlaps', () => {
  it('two callers in flight on one organization at once: an overlap with both', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { latencyMs: 400 } });
    const org = h.orgs[0]!.organization_id;
    expect(await Promise.all([call(h, A, org), call(h, B, org)])).toEqual([200, 200]);
    const log = h.sb.requestLog();
    expect(log.byCaller).toEqual({ [A]: 1, [B]: 1 });
    expect(log.overlapCount).toBe(1);
    expect(log.overlaps).toHaveLength(1);
    const [o] = log.overlaps;
    expect(o!.organizationId).toBe(org);
    expect([...o!.callers].sort()).toEqual([A, B]);
    expect(o!.at).toBeGreaterThanOrEqual(h.sb.now() - 5_000);
    expect(o!.at).toBeLessThanOrEqual(h.sb.now());
  });

  it('the same two callers one after the other: none', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { latencyMs: 100 } });
    const org = h.orgs[0]!.organization_id;
    for (let i = 0; i < 3; i++) {
      expect(await call(h, A, org)).toBe(200);
      expect(await call(h, B, org)).toBe(200);
    }
    const log = h.sb.requestLog();
    expect(log.byCaller).toEqual({ [A]: 3, [B]: 3 });
    expect(log.overlapCount).toBe(0);
    expect(log.overlaps).toEqual([]);
  });

  it('two callers at once on different organizations, or one caller twice at once on one: none', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { latencyMs: 400 } });
    const [one, two] = [h.orgs[0]!.organization_id, h.orgs[1]!.organization_id];
    await Promise.all([call(h, A, one), call(h, B, two), call(h, A, one), call(h, B, two)]);
    const log = h.sb.requestLog();
    expect(log.byCaller).toEqual({ [A]: 2, [B]: 2 });
    expect(log.byOrganization).toEqual({ [one]: 2, [two]: 2 });
    expect(log.overlapCount).toBe(0);
  });

  it('keys an organization by its business, whichever family id a request names (variant orgIdPerFamily)', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { latencyMs: 400 }, variants: { orgIdPerFamily: true } });
    const org = h.orgs[0]!;
    expect(org.ids.inventory).not.toBe(org.ids.books);
    await Promise.all([call(h, A, org.ids.inventory), call(h, B, org.ids.books, 'books')]);
    const log = h.sb.requestLog();
    expect(log.overlapCount).toBe(1);
    expect(log.overlaps[0]!.organizationId).toBe(org.organization_id);
  });

  it('counts every arrival while another caller is in flight, keeps the first 100', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { latencyMs: 2_000 } });
    const org = h.orgs[0]!.organization_id;
    const slow = call(h, A, org);
    await waitInFlight(h);
    h.sb.setFaults({});
    for (let i = 0; i < 110; i++) expect(await call(h, B, org)).toBe(200);
    await slow;
    const log = h.sb.requestLog();
    // Each B request arrived while A's was in flight; A's arrived first, so none of its own.
    expect(log.overlapCount).toBe(110);
    expect(log.overlaps).toHaveLength(100);
    expect(log.overlaps.every((o) => o.organizationId === org && o.callers[0] === A && o.callers[1] === B)).toBe(true);
  });

  it('a request without a User-Agent is from "unknown"; token calls are counted apart; reset clears both', async () => {
    h = await harness({ scale: 10, unlimited: true });
    const org = h.orgs[0]!.organization_id;
    expect(await bare(h, org)).toBe(200);
    expect(await call(h, '', org)).toBe(200);
    await fetch(`${h.sb.accountsUrl}/oauth/v2/token`, {
      method: 'POST',
      headers: { 'user-agent': A },
      body: new URLSearchParams({ grant_type: 'refresh_token', ...h.sb.credentials }),
    });
    // Organization lists name no organization: not counted under a caller.
    await (await h.get('inventory', '/organizations', null, { 'user-agent': B })).text();
    let log = h.sb.requestLog();
    expect(log.byCaller).toEqual({ unknown: 2 });
    expect(log.tokenByCaller[A]).toBe(1);
    expect(log.byCaller[A]).toBeUndefined();
    h.sb.resetRequestLog();
    log = h.sb.requestLog();
    expect([log.byCaller, log.tokenByCaller, log.overlaps, log.overlapCount]).toEqual([{}, {}, [], 0]);
  });

  it('a request in flight across a reset still overlaps a later one', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { latencyMs: 1_000 } });
    const org = h.orgs[0]!.organization_id;
    const slow = call(h, A, org);
    await waitInFlight(h);
    h.sb.setFaults({});
    h.sb.resetRequestLog();
    await call(h, B, org);
    await slow;
    const log = h.sb.requestLog();
    expect(log.overlaps).toEqual([expect.objectContaining({ organizationId: org, callers: [A, B] })]);
  });
});
