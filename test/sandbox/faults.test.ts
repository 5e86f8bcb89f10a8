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
    expect(h.sb.requestLog().faults).toEqual({ '5xx': 0, '429': 0, truncated: 0, latency: 0 });
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

  it('rejects rates outside 0..1', async () => {
    h = await harness({ scale: 1 });
    expect(() => h!.sb.setFaults({ rate5xx: 1.5 })).toThrow(/rate5xx/);
  });
});
