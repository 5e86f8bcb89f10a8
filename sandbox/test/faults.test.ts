import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './sandbox-client.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.sb.stop();
  h = undefined;
});

async function sample(x: Harness, n: number): Promise<Array<{ status: number; parses: boolean; body: string }>> {
  const out: Array<{ status: number; parses: boolean; body: string }> = [];
  for (let i = 0; i < n; i++) {
    const res = await x.get('inventory', '/salesorders?per_page=5');
    const body = await res.text();
    let parses = true;
    try {
      JSON.parse(body);
    } catch {
      parses = false;
    }
    out.push({ status: res.status, parses, body });
  }
  return out;
}

describe('fault knobs', () => {
  it('are off by default', async () => {
    h = await harness({ scale: 10, unlimited: true });
    const results = await sample(h, 300);
    expect(results.every((r) => r.status === 200 && r.parses)).toBe(true);
    expect(h.sb.requestLog().faults).toEqual({ '5xx': 0, '429': 0, truncated: 0, latency: 0, revoked: 0 });
  });

  it('rate5xx answers about that share with 500 code 1000 or 503', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { rate5xx: 0.3 } });
    const results = await sample(h, 400);
    const failed = results.filter((r) => r.status >= 500);
    expect(failed.length).toBeGreaterThan(80);
    expect(failed.length).toBeLessThan(160);
    expect(failed.every((r) => r.status === 500 || r.status === 503)).toBe(true);
    expect(failed.some((r) => r.status === 500 && (JSON.parse(r.body) as { code: number }).code === 1000)).toBe(true);
    expect(h.sb.requestLog().faults['5xx']).toBe(failed.length);
  });

  it('rate429 adds 429s with code 44 or 1070 beyond the limits', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { rate429: 0.2 } });
    const results = await sample(h, 400);
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(40);
    expect(limited.length).toBeLessThan(120);
    const codes = new Set(limited.map((r) => (JSON.parse(r.body) as { code: number }).code));
    expect(codes).toEqual(new Set([44, 1070]));
  });

  it('rateTruncated cuts a 200 body short mid-JSON', async () => {
    h = await harness({ scale: 10, unlimited: true });
    h.sb.setFaults({ rateTruncated: 0.25 });
    const results = await sample(h, 400);
    const broken = results.filter((r) => !r.parses);
    expect(broken.length).toBeGreaterThan(60);
    expect(broken.length).toBeLessThan(140);
    expect(broken.every((r) => r.status === 200 && r.body.startsWith('{"code":0'))).toBe(true);
    h.sb.setFaults({});
    expect((await sample(h, 50)).every((r) => r.parses)).toBe(true);
  });

  it('revokeEverySeconds revokes the token in use once per interval of sandbox time; a refreshed token works again', async () => {
    h = await harness({ scale: 10, unlimited: true, faults: { revokeEverySeconds: 60 } });
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      // Ten requests a sandbox minute.
      if (i > 0 && i % 10 === 0) h.sb.advanceClock(60_000);
      const res = await h.get('inventory', '/salesorders?per_page=5');
      await res.arrayBuffer();
      statuses.push(res.status);
      // A client that meets a refused token gets a new one, as svcsync does.
      if (res.status === 401) await h.refresh();
    }
    // The clock starts at the first request: the first request of each later minute found its token revoked.
    expect(statuses.map((s, i) => (s === 401 ? i : -1)).filter((i) => i >= 0)).toEqual([10, 20, 30, 40]);
    expect(h.sb.requestLog().faults.revoked).toBe(4);
    expect(statuses.filter((s) => s !== 401).every((s) => s === 200)).toBe(true);
    h.sb.setFaults({});
    h.sb.advanceClock(120_000);
    const kept = await h.refresh();
    for (let i = 0; i < 5; i++) expect((await h.get('inventory', '/salesorders?per_page=5')).status).toBe(200);
    expect(h.token).toBe(kept);
  });

  it('rejects rates outside 0..1 and a negative revocation interval', async () => {
    h = await harness({ scale: 1 });
    expect(() => h!.sb.setFaults({ rate5xx: 1.5 })).toThrow(/rate5xx/);
    expect(() => h!.sb.setFaults({ revokeEverySeconds: -1 })).toThrow(/revokeEverySeconds/);
  });
});
