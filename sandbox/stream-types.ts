import type { Family, OrgGen } from './organizations.js';
import type { Rng } from './random.js';

export type Rec = Record<string, unknown>;

export interface Times {
  created: number;
  change: number;
}

export type SortOrder = 'A' | 'D';

/** One stream of one family, described as data: the server and the store read only this. */
export interface StreamDef {
  family: Family;
  stream: string;
  /** Id space (see OrgGen.id). */
  space: number;
  kind: 'top' | 'child';
  idField: string;
  parentStream?: string;
  parentIdField?: string;
  /** Field that records the last change, bumped by mutation. */
  changeField?: string;
  /**
   * 'change': base records' change time decreases with the slot (slot 0 newest), so the
   * change-ordered list needs no sort. 'created': created time increases with the slot and
   * the change time is scattered, so the slot order is NOT the change order.
   */
  timeOrder: 'change' | 'created' | 'none';
  /** Top-level: records per organization at a scale. */
  count?: (scale: number) => number;
  /** Child: how many base children a base parent has (cheap, from a hash). */
  childCount?: (g: OrgGen, parentSlot: number) => number;
  /** Full record (detail shape plus any list-only fields). Children receive their parent. */
  generate: (g: OrgGen, slot: number, parent: Rec | undefined) => Rec;
  listFields?: readonly string[];
  detailFields?: readonly string[];
  /** Fields of the full record that only list items carry. */
  detailOmit?: ReadonlySet<string>;
  /** Child streams embedded into this stream's detail record: field name → child stream. */
  embeds?: ReadonlyArray<{ field: string; stream: string }>;
  /** filter_by values → predicate; undefined when the list takes no filter_by. */
  filter?: (value: string) => ((rec: Rec) => boolean) | undefined | null;
  defaultFilter?: string;
  sortColumns?: readonly string[];
  /** Column and order used when the request names none; the column must be servable. */
  defaultSort?: { column: string; order: SortOrder };
  reportName: string;
  /** Changes some values of a record in place (not its change field; the store stamps that). */
  modify?: (g: OrgGen, rec: Rec, r: Rng) => void;
  creatable: boolean;
  deletable: boolean;
}
