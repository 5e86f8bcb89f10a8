/**
 * Generated records plus an overlay of changes. Record `slot` of a stream is produced on demand;
 * the overlay holds, per modified or created record, only the fields that differ from the
 * generated one (a patch), and deleted slots are in a set.
 * Ordered views (arrays of slots) and serialized JSON are cached until the stream changes.
 * Every change is copy-on-write: the record or child list it replaces is kept as a past
 * version (record-versions.ts), so the store answers what it held at any instant.
 */
import { OrgGen, type Family, type IdStyle, type OrgInfo } from './organizations.js';
import { Rng, hash4 } from './random.js';
import { baseTimes } from './generators.js';
import { STREAMS, findStream } from './stream-catalog.js';
import type { Rec, SortOrder, StreamDef, Times } from './stream-types.js';
import { applyValueForms, DEFAULT_VARIANTS, isExtraField, normalizeArrays, shapeRecord, type Variants } from './variants.js';
import { currentAt, VersionLedger, type Change, type StoredList, type StoredVersion, type Version } from './record-versions.js';

/** Children per parent are numbered parentSlot * CHILD_STRIDE + k. */
export const CHILD_STRIDE = 64;
const LIST_CACHE_MAX = 250_000;
/** A vendor credit's total of each embedded list (spec 2.8). */
const EMBED_TOTALS: Readonly<Record<string, string>> = {
  vendor_credit_refunds: 'total_refunded_amount',
  bills_credited: 'total_credits_used',
};

/** The sum of the entries' `amount`, to the currency's precision. */
function sumAmounts(rows: readonly Rec[], precision: number): number {
  const scale = 10 ** precision;
  return Math.round(rows.reduce((a, r) => a + (typeof r['amount'] === 'number' ? r['amount'] : 0), 0) * scale) / scale;
}
const DETAIL_CACHE_MAX = 50_000;
const PAGE_CACHE_MAX = 400;

export interface MutationCounts {
  modified: number;
  created: number;
  deleted: number;
  restored: number;
}
export interface MutationSummary extends MutationCounts {
  /** Counts per `family.stream`, summed over organizations. */
  streams: Record<string, MutationCounts>;
}
/** A number of records, or a share of those the stream holds (`"5%"`; deleted ones for `restore`), rounded up. */
export type Amount = number | `${number}%`;

export interface MutateOptions {
  modify?: Amount;
  create?: Amount;
  delete?: Amount;
  /** Brings back deleted top-level records (their children with them), as they were when deleted. */
  restore?: Amount;
  families?: Family[];
  streams?: string[];
  organizationId?: string;
}

const ID_FIELD = /"(?!organization_id")([A-Za-z_]*_id)":"(\d+)"/g;

/** JSON text; number-style organizations send digit-only `*_id` values as bare JSON numbers. */
export function toJson(value: unknown, idStyle: IdStyle): string {
  const text = JSON.stringify(value);
  return idStyle === 'number' ? text.replace(ID_FIELD, '"$1":$2') : text;
}

function pickFields(rec: Rec, fields: readonly string[], extras = false): Rec {
  const out: Rec = {};
  for (const f of fields) if (f in rec) out[f] = rec[f];
  // Variant extraFields: unknown fields travel in every shape of the record.
  if (extras) for (const f of Object.keys(rec)) if (isExtraField(f)) out[f] = rec[f];
  return out;
}

class StreamState {
  version = 0;
  nextSlot: number;
  /** Per changed or created slot, the fields that differ from its generated record (never changed once stored). */
  readonly overlay = new Map<number, Rec>();
  readonly meta = new Map<number, Times>();
  readonly deleted = new Set<number>();
  readonly childOverlay = new Map<number, Rec[]>();
  readonly listJson = new Map<number, string>();
  /** List JSON texts kept before the cache starts over; `warm(def, true)` raises it to the whole stream. */
  listCacheMax = LIST_CACHE_MAX;
  readonly detailJson = new Map<number, string>();
  readonly views = new Map<string, Int32Array>();
  /** Encoded list pages, keyed by view and page; valid until the stream changes. */
  readonly pages = new Map<string, Buffer>();
  allChildren: { version: string; parents: Int32Array; index: Int32Array } | undefined;
  /** Top-level: the versions of every slot that ever changed, the current one last (others: one generated version). */
  readonly history = new Map<number, StoredVersion[]>();
  /** Child: the lists of every parent whose children ever changed, the current one last. */
  readonly lists = new Map<number, StoredList[]>();

  constructor(
    readonly def: StreamDef,
    readonly baseCount: number,
  ) {
    this.nextSlot = baseCount;
  }

  changed(slot?: number): void {
    this.version++;
    this.views.clear();
    this.pages.clear();
    if (slot !== undefined) {
      this.listJson.delete(slot);
      this.detailJson.delete(slot);
    }
  }
}

export interface ViewRequest {
  filterKey: string;
  predicate: ((rec: Rec) => boolean) | undefined;
  column: string | undefined;
  order: SortOrder;
}

export class OrgData {
  readonly g: OrgGen;
  private readonly states = new Map<string, StreamState>();
  /** Versions that closed before this instant were dropped (the ledger's bound); truth before it is unknown. */
  horizon = -Infinity;
  /** Told of every change to a top-level record (the sandbox's change log). */
  onChange: ((def: StreamDef, id: string, change: Change, at: number) => void) | null = null;

  /** Whether records pass through shapeRecord (some record-changing variant is on). */
  private readonly shaped: boolean;

  constructor(
    seed: number,
    readonly org: OrgInfo,
    scale: number,
    startMs: number,
    readonly variants: Variants = DEFAULT_VARIANTS,
    private readonly ledger: VersionLedger = new VersionLedger(Number.MAX_SAFE_INTEGER),
    streamCounts: Readonly<Record<string, number>> = {},
  ) {
    this.g = new OrgGen(seed, org, scale, startMs, variants.uneditedRecords, streamCounts);
    this.shaped =
      variants.sparseFields > 0 ||
      variants.arrayQuirks ||
      variants.extraFields ||
      variants.inverseExchangeRate ||
      variants.omitLineBcyRate ||
      variants.oddText ||
      variants.hoursAsNumbers ||
      variants.otherSpellings;
    for (const def of STREAMS) {
      this.states.set(`${def.family}.${def.stream}`, new StreamState(def, def.kind === 'top' ? this.g.countOf(def) : 0));
    }
  }

  state(def: StreamDef): StreamState {
    const s = this.states.get(`${def.family}.${def.stream}`);
    if (!s) throw new Error(`unknown stream ${def.family}.${def.stream}`);
    return s;
  }

  parentDef(def: StreamDef): StreamDef {
    const p = def.parentStream ? findStream(def.family, def.parentStream) : undefined;
    if (!p) throw new Error(`stream ${def.stream} has no parent`);
    return p;
  }

  // ------------------------------------------------------------ top-level records

  isLive(def: StreamDef, slot: number): boolean {
    const s = this.state(def);
    if (!Number.isInteger(slot) || slot < 0 || slot >= s.nextSlot || s.deleted.has(slot)) return false;
    return slot < s.baseCount || s.overlay.has(slot);
  }

  /** The full record, a new object (its nested values may be shared: callers must not change those). */
  record(def: StreamDef, slot: number): Rec {
    return this.materialize(def, slot, this.state(def).overlay.get(slot));
  }

  /** The generated record with a patch applied. */
  private materialize(def: StreamDef, slot: number, patch: Rec | undefined): Rec {
    const rec = this.generate(def, slot, undefined);
    return patch ? Object.assign(rec, patch) : rec;
  }

  /** A freshly generated record, with the record-changing variants applied. */
  private generate(def: StreamDef, slot: number, parent: Rec | undefined): Rec {
    const rec = def.generate(this.g, slot, parent);
    return this.shaped ? shapeRecord(this.variants, this.g, def, slot, rec) : rec;
  }

  times(def: StreamDef, slot: number): Times {
    return this.state(def).meta.get(slot) ?? baseTimes(this.g, def, slot);
  }

  slotOfId(def: StreamDef, id: string): number | undefined {
    const slot = this.g.slotOf(def.space, id);
    return slot !== undefined && this.isLive(def, slot) ? slot : undefined;
  }

  listShape(def: StreamDef, rec: Rec): Rec {
    return def.listFields ? pickFields(rec, def.listFields, this.variants.extraFields) : rec;
  }

  /** The detail record with its embedded child lists (by default the current ones). */
  detailShape(
    def: StreamDef,
    slot: number,
    rec: Rec,
    embedded = (child: StreamDef, _index: number): Rec[] => this.children(child, slot),
  ): Rec {
    let out: Rec;
    if (def.detailFields) out = pickFields(rec, def.detailFields, this.variants.extraFields);
    else if (def.detailOmit) {
      out = {};
      for (const k of Object.keys(rec)) if (!def.detailOmit.has(k)) out[k] = rec[k];
    } else out = { ...rec };
    for (const [index, embed] of (def.embeds ?? []).entries()) {
      const child = findStream(def.family, embed.stream);
      if (!child) continue;
      const rows = embedded(child, index);
      // The credit's totals are what its refunds and credited bills add up to (spec 2.8).
      const total = EMBED_TOTALS[embed.field];
      if (total && total in out) out[total] = sumAmounts(rows, this.g.profile.price_precision);
      // Variant arrayQuirks: one embedded child is sent as an object, not an array of one.
      out[embed.field] = this.variants.arrayQuirks && rows.length === 1 ? rows[0] : rows;
    }
    return out;
  }

  /**
   * The detail record as served: variant embeddedChildrenDropped leaves entries off its embedded
   * lists; embeddedChildrenEmpty sends them empty, with zero totals.
   */
  private served(def: StreamDef, out: Rec): Rec {
    if (this.variants.embeddedChildrenEmpty) {
      for (const embed of def.embeds ?? []) {
        out[embed.field] = [];
        const total = EMBED_TOTALS[embed.field];
        if (total && total in out) out[total] = 0;
      }
      return out;
    }
    const share = this.variants.embeddedChildrenDropped;
    if (share <= 0) return out;
    for (const embed of def.embeds ?? []) {
      const v = out[embed.field];
      let rows: unknown[] = [];
      if (Array.isArray(v)) rows = v;
      else if (v !== undefined && v !== null) rows = [v];
      out[embed.field] = rows.slice(0, rows.length - Math.ceil(rows.length * share));
    }
    return out;
  }

  listJson(def: StreamDef, slot: number): string {
    const s = this.state(def);
    let text = s.listJson.get(slot);
    if (text === undefined) {
      text = toJson(this.listShape(def, this.record(def, slot)), this.org.idStyle);
      if (s.listJson.size >= s.listCacheMax) s.listJson.clear();
      s.listJson.set(slot, text);
    }
    return text;
  }

  /**
   * Fills the list JSON cache of a top-level stream (up to its bound, or every record when
   * `whole`: the bound then rises to the stream's size); returns the records warmed.
   */
  warm(def: StreamDef, whole = false): number {
    if (def.parentStream) return 0;
    const slots = this.liveSlots(def);
    const s = this.state(def);
    if (whole) s.listCacheMax = Math.max(s.listCacheMax, slots.length);
    const n = Math.min(slots.length, s.listCacheMax);
    for (let i = 0; i < n; i++) this.listJson(def, slots[i]!);
    return n;
  }

  detailJson(def: StreamDef, slot: number): string {
    const s = this.state(def);
    let text = s.detailJson.get(slot);
    if (text === undefined) {
      text = toJson(this.served(def, this.detailShape(def, slot, this.record(def, slot))), this.org.idStyle);
      if (s.detailJson.size >= DETAIL_CACHE_MAX) s.detailJson.clear();
      s.detailJson.set(slot, text);
    }
    return text;
  }

  liveSlots(def: StreamDef): number[] {
    const s = this.state(def);
    const out: number[] = [];
    for (let slot = 0; slot < s.nextSlot; slot++) if (this.isLive(def, slot)) out.push(slot);
    return out;
  }

  /** Live slots of a top-level stream in the requested order, cached until the stream changes. */
  view(def: StreamDef, req: ViewRequest): Int32Array {
    const s = this.state(def);
    const key = `${req.filterKey}|${req.column ?? ''}|${req.order}`;
    const cached = s.views.get(key);
    if (cached) return cached;
    const keep = req.predicate;
    const accept = (slot: number): boolean => !keep || keep(this.listShape(def, this.record(def, slot)));
    let result: Int32Array;
    if (req.column !== undefined && req.column === def.changeField && def.timeOrder === 'change') {
      // Base slots are already newest-first; only the (small) overlay needs sorting.
      const top = [...s.overlay.keys()].filter((slot) => !s.deleted.has(slot) && accept(slot));
      top.sort((a, b) => this.times(def, b).change - this.times(def, a).change || b - a);
      const out: number[] = top;
      for (let slot = 0; slot < s.baseCount; slot++) {
        if (s.overlay.has(slot) || s.deleted.has(slot)) continue;
        if (accept(slot)) out.push(slot);
      }
      result = Int32Array.from(out);
      if (req.order === 'A') result.reverse();
    } else {
      const slots = this.liveSlots(def).filter(accept);
      if (req.column !== undefined) {
        const keys = new Map<number, number | string>();
        for (const slot of slots) keys.set(slot, this.sortKey(def, slot, req.column));
        slots.sort((a, b) => compareKeys(keys.get(a), keys.get(b)) || a - b);
        if (req.order === 'D') slots.reverse();
      } else if (req.order === 'D') slots.reverse();
      result = Int32Array.from(slots);
    }
    s.views.set(key, result);
    return result;
  }

  private sortKey(def: StreamDef, slot: number, column: string): number | string {
    if (column === 'created_time' && def.timeOrder !== 'none') return this.times(def, slot).created;
    if (column === def.changeField && def.timeOrder !== 'none') return this.times(def, slot).change;
    const value = this.record(def, slot)[column];
    if (typeof value === 'number') return value;
    return typeof value === 'string' ? value.toLowerCase() : '';
  }

  cachedPage(def: StreamDef, key: string): Buffer | undefined {
    return this.state(def).pages.get(key);
  }

  cachePage(def: StreamDef, key: string, body: Buffer): void {
    const pages = this.state(def).pages;
    if (pages.size >= PAGE_CACHE_MAX) pages.clear();
    pages.set(key, body);
  }

  // ------------------------------------------------------------ child records

  children(def: StreamDef, parentSlot: number): Rec[] {
    return this.state(def).childOverlay.get(parentSlot) ?? this.baseChildren(def, parentSlot);
  }

  /**
   * The generated children of a parent. They read only parent fields no change touches (ids,
   * names, dates, totals), so they are the same whichever version of the parent they are built from.
   */
  private baseChildren(def: StreamDef, parentSlot: number, parentRec?: Rec): Rec[] {
    const parentDef = this.parentDef(def);
    const n = parentSlot < this.state(parentDef).baseCount && def.childCount ? def.childCount(this.g, parentSlot) : 0;
    if (n === 0) return [];
    const parent = parentRec ?? this.record(parentDef, parentSlot);
    const out: Rec[] = [];
    for (let k = 0; k < n; k++) out.push(this.generate(def, parentSlot * CHILD_STRIDE + k, parent));
    return out;
  }

  childCount(def: StreamDef, parentSlot: number): number {
    const over = this.state(def).childOverlay.get(parentSlot);
    if (over) return over.length;
    const parentDef = this.parentDef(def);
    return parentSlot < this.state(parentDef).baseCount && def.childCount ? def.childCount(this.g, parentSlot) : 0;
  }

  /** Every child of every live parent, parents in slot order (for `/vendorcredits/refunds`). */
  allChildren(def: StreamDef): { parents: Int32Array; index: Int32Array } {
    const s = this.state(def);
    const parentDef = this.parentDef(def);
    const version = `${s.version}:${this.state(parentDef).version}`;
    if (s.allChildren?.version === version) return s.allChildren;
    const parents: number[] = [];
    const index: number[] = [];
    for (const p of this.liveSlots(parentDef)) {
      const n = this.childCount(def, p);
      for (let i = 0; i < n; i++) {
        parents.push(p);
        index.push(i);
      }
    }
    s.allChildren = { version, parents: Int32Array.from(parents), index: Int32Array.from(index) };
    return s.allChildren;
  }

  findChild(def: StreamDef, parentSlot: number, id: string): Rec | undefined {
    return this.children(def, parentSlot).find((c) => c[def.idField] === id);
  }

  // ------------------------------------------------------------ truth

  truth(def: StreamDef): Rec[] {
    if (def.kind === 'top') {
      const out = this.liveSlots(def).map((slot) => structuredClone(this.detailShape(def, slot, this.record(def, slot))));
      // Variant arrayQuirks: truth holds the rows a client should keep.
      if (this.variants.arrayQuirks) for (const rec of out) normalizeArrays(rec);
      return out;
    }
    const out: Rec[] = [];
    for (const p of this.liveSlots(this.parentDef(def))) for (const c of this.children(def, p)) out.push(structuredClone(c));
    return out;
  }

  count(def: StreamDef): number {
    const s = this.state(def);
    if (def.kind === 'top') {
      let n = s.baseCount;
      for (const slot of s.deleted) if (slot < s.baseCount) n--;
      for (const slot of s.overlay.keys()) if (slot >= s.baseCount && !s.deleted.has(slot)) n++;
      return n;
    }
    let n = 0;
    for (const p of this.liveSlots(this.parentDef(def))) n += this.childCount(def, p);
    return n;
  }

  // ------------------------------------------------------------ history

  /** The records as they stood at sandbox instant t: what `truth` answered then. */
  truthAt(def: StreamDef, t: number): Rec[] {
    const out: Rec[] = [];
    if (def.kind === 'top') {
      for (let slot = 0; slot < this.state(def).nextSlot; slot++) {
        const v = this.versionAt(def, slot, t);
        if (v && v.change !== 'deleted') out.push(this.truthShape(def, slot, v));
      }
      return out;
    }
    const parentDef = this.parentDef(def);
    for (let p = 0; p < this.state(parentDef).nextSlot; p++) {
      const pv = this.versionAt(parentDef, p, t);
      if (pv && pv.change !== 'deleted') for (const c of this.listAt(def, p, t, pv)) out.push(structuredClone(c));
    }
    return out;
  }

  /** Every version of one record, oldest first; none for an id the stream never held. */
  versions(def: StreamDef, id: string): Version[] {
    if (def.kind === 'child') return this.childVersions(def, id);
    const slot = this.slotEver(def, id);
    if (slot === undefined) return [];
    return this.storedVersions(def, slot).map((v) => ({
      from: v.from,
      to: v.to ?? null,
      change: v.change,
      record: this.truthShape(def, slot, v),
    }));
  }

  /** The slot of a top-level id, live or deleted. */
  private slotEver(def: StreamDef, id: string): number | undefined {
    const s = this.state(def);
    const slot = this.g.slotOf(def.space, id);
    if (slot !== undefined) return slot < s.nextSlot ? slot : undefined;
    // Ids that are not numbers (plan codes) are found by reading the records.
    for (let k = 0; k < s.nextSlot; k++) {
      const v = this.storedVersions(def, k).at(-1);
      if (v && String(this.materialize(def, k, v.rec)[def.idField]) === id) return k;
    }
    return undefined;
  }

  private storedVersions(def: StreamDef, slot: number): StoredVersion[] {
    const s = this.state(def);
    const stored = s.history.get(slot);
    if (stored) return stored;
    if (slot >= s.baseCount) return [];
    // A generated record that never changed: one version, since its creation.
    return [{ from: baseTimes(this.g, def, slot).created, to: undefined, change: 'created', rec: undefined, kids: undefined }];
  }

  private versionAt(def: StreamDef, slot: number, t: number): StoredVersion | undefined {
    return currentAt(this.storedVersions(def, slot), t);
  }

  private storedLists(def: StreamDef, parentSlot: number): StoredList[] {
    const stored = this.state(def).lists.get(parentSlot);
    if (stored) return stored;
    return [{ from: this.times(this.parentDef(def), parentSlot).created, to: undefined, list: undefined }];
  }

  /** The children of a parent at instant t, the parent's version at t given. */
  private listAt(def: StreamDef, parentSlot: number, t: number, parent: StoredVersion): Rec[] {
    const item = currentAt(this.storedLists(def, parentSlot), t);
    if (!item) return [];
    return item.list ?? this.baseChildren(def, parentSlot, this.materialize(this.parentDef(def), parentSlot, parent.rec));
  }

  /** A stored version as truth shows it: the detail record with its child lists of then. */
  private truthShape(def: StreamDef, slot: number, v: StoredVersion): Rec {
    const rec = this.materialize(def, slot, v.rec);
    const out = structuredClone(this.detailShape(def, slot, rec, (child, i) => v.kids?.[i] ?? this.baseChildren(child, slot, rec)));
    // Variant arrayQuirks: truth holds the rows a client should keep.
    return this.variants.arrayQuirks ? normalizeArrays(out) : out;
  }

  /**
   * A child record's versions, read off its parent's versions and its parent's lists: it lives
   * while its parent lives and its list holds it. Read at the end of each instant, so changes
   * made within one sandbox millisecond leave no version that no instant shows.
   */
  private childVersions(def: StreamDef, id: string): Version[] {
    const parentDef = this.parentDef(def);
    const slot = this.g.slotOf(def.space, id);
    if (slot === undefined) return [];
    const p = Math.floor(slot / CHILD_STRIDE);
    if (p >= this.state(parentDef).nextSlot) return [];
    const parents = this.storedVersions(parentDef, p);
    const lists = this.storedLists(def, p);
    const instants = [...new Set([...parents.map((v) => v.from), ...lists.map((l) => l.from)])].sort((a, b) => a - b);
    const out: Version[] = [];
    let last: { rec: Rec; json: string } | undefined;
    for (const t of instants) {
      const pv = currentAt(parents, t);
      const rec = pv && pv.change !== 'deleted' ? this.listAt(def, p, t, pv).find((c) => String(c[def.idField]) === id) : undefined;
      const json = rec ? JSON.stringify(rec) : undefined;
      if (json === last?.json) continue;
      const open = out.at(-1);
      if (open) open.to = t;
      let change: Change = 'deleted';
      if (rec && !open) change = 'created';
      else if (rec) change = last ? 'updated' : 'restored';
      const shown = rec ?? last?.rec;
      if (shown) out.push({ from: t, to: null, change, record: structuredClone(shown) });
      last = rec && json !== undefined ? { rec, json } : undefined;
    }
    return out;
  }

  // ------------------------------------------------------------ mutation

  /** Whether `mutate` may delete the stream's records: variant eventsDeleted makes the events deletable too. */
  private deletable(def: StreamDef): boolean {
    return def.deletable || (this.variants.eventsDeleted && def.family === 'billing' && def.stream === 'events');
  }

  mutate(
    def: StreamDef,
    amounts: { modify: Amount; create: Amount; delete: Amount; restore: Amount },
    now: number,
    round: number,
  ): MutationCounts {
    const r = new Rng(hash4(this.g.seed, round, this.org.index * 256 + def.space, 0xabc));
    const done: MutationCounts = { modified: 0, created: 0, deleted: 0, restored: 0 };
    const live = Object.values(amounts).some((a) => typeof a === 'string') ? this.count(def) : 0;
    const counts = {
      modify: amountOf(amounts.modify, live),
      create: amountOf(amounts.create, live),
      delete: amountOf(amounts.delete, live),
    };
    if (def.kind === 'top') {
      for (let i = 0; i < counts.modify && def.modify; i++) {
        const slot = this.randomLive(def, r);
        if (slot === undefined) break;
        const before = this.record(def, slot);
        const rec = { ...before };
        def.modify(this.g, rec, r);
        applyValueForms(this.variants, rec);
        // A change writes top-level fields only: the patch grows by those it changed.
        const patch = { ...this.state(def).overlay.get(slot) };
        for (const k of Object.keys(rec)) if (rec[k] !== before[k]) patch[k] = rec[k];
        this.stamp(def, slot, patch, now, 'updated');
        done.modified++;
        // A changed vendor credit sometimes gains a refund, as a real refund would change it.
        const refundDef = def.embeds && r.bool(0.5) ? findStream(def.family, 'vendor_credit_refunds') : undefined;
        if (refundDef) this.addChild(refundDef, slot, now);
      }
      for (let i = 0; i < counts.create && def.creatable; i++) {
        const s = this.state(def);
        const slot = s.nextSlot++;
        this.stamp(def, slot, {}, now, 'created');
        done.created++;
      }
      for (let i = 0; i < counts.delete && this.deletable(def); i++) {
        const slot = this.randomLive(def, r);
        if (slot === undefined) break;
        this.remove(def, slot, now);
        done.deleted++;
      }
      const gone = [...this.state(def).deleted];
      const restore = amountOf(amounts.restore, gone.length);
      for (let i = 0; i < restore && gone.length > 0; i++) {
        const [slot] = gone.splice(r.int(gone.length), 1);
        if (slot !== undefined && this.restore(def, slot, now)) done.restored++;
      }
      return done;
    }
    const parentDef = this.parentDef(def);
    for (let i = 0; i < counts.modify && def.modify; i++) {
      const p = this.randomParent(def, r, true);
      if (p === undefined) break;
      const list = this.children(def, p).slice();
      const k = r.int(list.length);
      const old = list[k];
      if (!old) break;
      const victim = { ...old };
      def.modify(this.g, victim, r);
      applyValueForms(this.variants, victim);
      list[k] = victim;
      this.setList(def, p, list, now);
      this.touchParent(parentDef, p, now, def);
      done.modified++;
    }
    for (let i = 0; i < counts.create && def.creatable; i++) {
      const p = this.randomParent(def, r, false);
      if (p === undefined || !this.addChild(def, p, now)) break;
      done.created++;
    }
    for (let i = 0; i < counts.delete && this.deletable(def); i++) {
      const p = this.randomParent(def, r, true);
      if (p === undefined) break;
      const list = this.children(def, p).slice();
      list.splice(r.int(list.length), 1);
      this.setList(def, p, list, now);
      this.touchParent(parentDef, p, now, def);
      done.deleted++;
    }
    return done;
  }

  private addChild(def: StreamDef, parentSlot: number, now: number): boolean {
    const list = this.children(def, parentSlot).slice();
    let k = 0;
    for (const c of list) {
      const slot = this.g.slotOf(def.space, String(c[def.idField]));
      if (slot !== undefined) k = Math.max(k, (slot % CHILD_STRIDE) + 1);
    }
    if (k >= CHILD_STRIDE) return false;
    const parentDef = this.parentDef(def);
    list.push(this.generate(def, parentSlot * CHILD_STRIDE + k, this.record(parentDef, parentSlot)));
    this.setList(def, parentSlot, list, now);
    this.touchParent(parentDef, parentSlot, now, def);
    return true;
  }

  /** A parent's new child list (a new array: the old one stays with the versions that hold it). */
  private setList(def: StreamDef, parentSlot: number, list: Rec[], now: number): void {
    const s = this.state(def);
    let lists = s.lists.get(parentSlot);
    if (!lists) s.lists.set(parentSlot, (lists = this.storedLists(def, parentSlot)));
    const current = lists.at(-1) as StoredList;
    if (current.from === now) current.list = list;
    else {
      current.to = now;
      this.ledger.closed(this, lists);
      lists.push({ from: now, to: undefined, list });
    }
    s.childOverlay.set(parentSlot, list);
    s.changed();
  }

  private touchParent(parentDef: StreamDef, parentSlot: number, now: number, child: StreamDef): void {
    if (parentDef.changeField && !this.variants.childChangesKeepParent) {
      this.stamp(parentDef, parentSlot, { ...this.state(parentDef).overlay.get(parentSlot) }, now, 'updated');
      return;
    }
    const ps = this.state(parentDef);
    ps.changed(parentSlot);
    // A record that embeds the list changes with it, change field or not.
    if (parentDef.embeds?.some((e) => e.stream === child.stream))
      this.openVersion(parentDef, parentSlot, 'updated', ps.overlay.get(parentSlot), now);
  }

  /** Stores a record's new patch (a new object: the old one stays with the version that holds it). */
  private stamp(def: StreamDef, slot: number, patch: Rec, now: number, change: Change): void {
    const s = this.state(def);
    const prev = this.times(def, slot);
    const created = change === 'created';
    const times: Times = { created: created ? now : prev.created, change: def.changeField ? now : prev.change };
    if (def.changeField) patch[def.changeField] = this.g.ts(now);
    if (created && 'created_time' in this.generate(def, slot, undefined)) patch['created_time'] = this.g.ts(now);
    s.overlay.set(slot, patch);
    s.meta.set(slot, times);
    s.changed(slot);
    this.openVersion(def, slot, change, patch, now);
    this.onChange?.(def, String(this.record(def, slot)[def.idField]), change, now);
  }

  private remove(def: StreamDef, slot: number, now: number): void {
    const s = this.state(def);
    // The tombstone keeps the last record; its times stay too, for a restore.
    const last = s.overlay.get(slot);
    s.deleted.add(slot);
    s.overlay.delete(slot);
    s.changed(slot);
    this.openVersion(def, slot, 'deleted', last, now);
    this.onChange?.(def, String(this.generate(def, slot, undefined)[def.idField]), 'deleted', now);
  }

  /** A deleted record comes back as it was when deleted, changed now; its children come back with it. */
  private restore(def: StreamDef, slot: number, now: number): boolean {
    const s = this.state(def);
    const tomb = s.history.get(slot)?.at(-1);
    if (!s.deleted.has(slot) || tomb?.change !== 'deleted') return false;
    s.deleted.delete(slot);
    this.stamp(def, slot, { ...tomb.rec }, now, 'restored');
    return true;
  }

  /**
   * Closes the record's current version at `now` and opens the next. A version replaced in the
   * millisecond it began was current at no instant: an update then takes its place (keeping
   * how it came to be, `created` or `restored`).
   */
  private openVersion(def: StreamDef, slot: number, change: Change, rec: Rec | undefined, now: number): void {
    const s = this.state(def);
    let versions = s.history.get(slot);
    if (!versions) s.history.set(slot, (versions = this.storedVersions(def, slot)));
    const kids = this.embeddedLists(def, slot);
    const current = versions.at(-1);
    if (current && current.from === now && change === 'updated' && current.change !== 'deleted') {
      current.rec = rec;
      current.kids = kids;
      return;
    }
    if (current) {
      current.to = now;
      this.ledger.closed(this, versions);
    }
    versions.push({ from: now, to: undefined, change, rec, kids });
  }

  /** The record's current embedded child lists; undefined while every one is the generated list. */
  private embeddedLists(def: StreamDef, slot: number): Array<Rec[] | undefined> | undefined {
    if (!def.embeds) return undefined;
    const lists = def.embeds.map((e) => {
      const child = findStream(def.family, e.stream);
      return child ? this.state(child).childOverlay.get(slot) : undefined;
    });
    return lists.some((l) => l !== undefined) ? lists : undefined;
  }

  private randomLive(def: StreamDef, r: Rng): number | undefined {
    const s = this.state(def);
    for (let attempt = 0; attempt < 64; attempt++) {
      const slot = r.int(s.nextSlot);
      if (this.isLive(def, slot)) return slot;
    }
    const live = this.liveSlots(def);
    return live.length ? live[r.int(live.length)] : undefined;
  }

  private randomParent(def: StreamDef, r: Rng, needChildren: boolean): number | undefined {
    const parentDef = this.parentDef(def);
    for (let attempt = 0; attempt < 64; attempt++) {
      const p = this.randomLive(parentDef, r);
      if (p === undefined) return undefined;
      if (!needChildren || this.childCount(def, p) > 0) return p;
    }
    return undefined;
  }
}

function compareKeys(a: number | string | undefined, b: number | string | undefined): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  const x = a ?? '';
  const y = b ?? '';
  if (x < y) return -1;
  return x > y ? 1 : 0;
}

/** How many records an amount names, of `total` for a share. */
export function amountOf(amount: Amount, total: number): number {
  if (typeof amount === 'number') return amount;
  // Rounded up, so that any share of a small stream changes something; the epsilon keeps 7% of 100 at 7.
  return Math.ceil((Number(amount.slice(0, -1)) * total) / 100 - 1e-9);
}

/** The streams a mutation names: by `stream` (in every family that has it) or `family.stream`, within `families`. */
export function streamsFor(opts: MutateOptions): StreamDef[] {
  return STREAMS.filter(
    (d) =>
      (!opts.families || opts.families.includes(d.family)) &&
      (!opts.streams || opts.streams.includes(d.stream) || opts.streams.includes(`${d.family}.${d.stream}`)),
  );
}
