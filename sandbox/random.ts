/**
 * Seeded randomness. Every generated value is a pure function of (seed, organization,
 * stream, slot), so record i of a stream can be produced on demand without producing
 * records 0..i-1 — that is what lets the sandbox serve a million records per stream
 * without holding them.
 */

function mix32(a: number): number {
  let t = (a + 0x9e3779b9) | 0;
  t ^= t >>> 16;
  t = Math.imul(t, 0x21f0aaad);
  t ^= t >>> 15;
  t = Math.imul(t, 0x735a2d97);
  t ^= t >>> 15;
  return t >>> 0;
}

/** Hash of four integers (each may exceed 32 bits; the high part is folded in). */
export function hash4(a: number, b: number, c: number, d: number): number {
  let h = 0x811c9dc5;
  h = mix32(h ^ mix32(a | 0) ^ Math.floor(a / 4294967296));
  h = mix32(h ^ mix32(b | 0) ^ Math.floor(b / 4294967296));
  h = mix32(h ^ mix32(c | 0) ^ Math.floor(c / 4294967296));
  h = mix32(h ^ mix32(d | 0) ^ Math.floor(d / 4294967296));
  return h;
}

/** FNV-1a of a string's UTF-16 code units, mixed: a seed for hash4 from text. */
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return mix32(h >>> 0);
}

/** mulberry32: small, fast, good enough for test data. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  range(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  money(min: number, max: number, precision: number): number {
    return round(min + this.next() * (max - min), precision);
  }

  digits(n: number): string {
    let s = String(1 + this.int(9));
    for (let i = 1; i < n; i++) s += String(this.int(10));
    return s;
  }
}

export function round(value: number, precision: number): number {
  const f = 10 ** precision;
  return Math.round(value * f) / f;
}
