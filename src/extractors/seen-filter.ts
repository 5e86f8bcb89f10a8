/**
 * The ids a pass has written so far, as a Bloom filter of fixed size (1 MiB).
 *
 * A pass over a table that held none of the organization's rows when it began (a first
 * sync) has nothing stored to compare a record with, except the rows it wrote itself, which
 * a record repeated on a later page (the list shifted while it was read) would meet. Asking
 * the warehouse for every page's 200 ids costs a query per page; asking only for the ids this
 * filter might have seen costs none on almost every page. A false positive only adds an id
 * to the query; a false negative cannot happen. Memory stays fixed however many records pass
 * (at 1,000,000 ids about 2 % of ids are false positives, still a few ids per page).
 */
export class SeenFilter {
  private readonly bits: Uint32Array;
  private readonly mask: number;

  constructor(
    bitsLog2 = 23,
    private readonly hashes = 4,
  ) {
    this.bits = new Uint32Array(2 ** bitsLog2 / 32);
    this.mask = 2 ** bitsLog2 - 1;
  }

  add(id: string): void {
    const [h1, h2] = hashPair(id);
    for (let i = 0; i < this.hashes; i++) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
  }

  /** False only for ids never added. */
  mightHave(id: string): boolean {
    const [h1, h2] = hashPair(id);
    for (let i = 0; i < this.hashes; i++) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/** Two 32-bit FNV-1a hashes with different offsets, for double hashing. */
function hashPair(text: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  // An odd step visits every bit position.
  return [a >>> 0, (b | 1) >>> 0];
}
