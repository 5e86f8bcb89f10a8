/**
 * The per-minute window as one owner hands it to the next (issue 12, on a clean lease release):
 * the instants, on the limiters' clock (epoch ms), at which each slot still held frees, and any
 * instant before which no request may start (a 429 code 44 pause). Plain JSON.
 */
export interface WindowState {
  freeAt: number[];
  notBefore: number | null;
}
