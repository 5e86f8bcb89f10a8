import { childStreamsOf } from '../catalog/index.js';
import type { StreamSpec } from '../catalog/types.js';
import type { RawRecord } from './pager.js';

/** A child stream whose entries a single record carries in full. */
export interface ProvenChildren {
  child: StreamSpec;
  entries: RawRecord[];
}

/** A number sent as a JSON number or as numeric text; null for anything else (an empty string too). */
function amountOf(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}

/** Amounts carry at most three decimals (spec 2.8's currencies): closer than this is equal. */
const SAME_AMOUNT = 0.0005;

/**
 * The child lists a single record proves complete: its embedded array (or a lone object, which
 * some servers send for one entry) whose entries' `amount` add up to the record's total for it.
 * An array cut short, empty while the total is not, missing, or with an entry or a total that
 * is not a number proves nothing, and that child's list is read per parent as usual.
 */
export function provenEmbedded(stream: StreamSpec, raw: RawRecord, wanted: (child: StreamSpec) => boolean): ProvenChildren[] {
  const out: ProvenChildren[] = [];
  for (const e of stream.detail?.embeddedChildren ?? []) {
    const child = childStreamsOf(stream).find((c) => c.name === e.stream);
    if (!child || !wanted(child)) continue;
    const v = raw[e.field];
    const entries: unknown[] = Array.isArray(v) ? v : [v];
    if (!entries.every((x): x is RawRecord => x !== null && typeof x === 'object' && !Array.isArray(x))) continue;
    const total = amountOf(raw[e.total]);
    const amounts = entries.map((x) => amountOf(x['amount']));
    if (total === null || amounts.some((a) => a === null)) continue;
    const sum = amounts.reduce<number>((a, b) => a + b!, 0);
    if (Math.abs(sum - total) < SAME_AMOUNT) out.push({ child, entries });
  }
  return out;
}
