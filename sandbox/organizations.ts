import { Rng, hash4 } from './random.js';

export type Family = 'books' | 'inventory' | 'invoice' | 'billing';
export type IdStyle = 'string' | 'number';

export interface OrgProfile {
  name: string;
  currency_code: string;
  currency_symbol: string;
  currency_name: string;
  currency_format: string;
  price_precision: number;
  time_zone: string;
  offsetMinutes: number;
  country: string;
  language_code: string;
  /** [city, state, zip] */
  places: ReadonlyArray<readonly [string, string, string]>;
  gst: boolean;
}

// Fixed offsets: the sandbox never applies daylight saving, so each org's timestamps carry one offset.
const PROFILES: readonly OrgProfile[] = [
  {
    name: 'Zylker Traders Pvt. Ltd.',
    currency_code: 'INR',
    currency_symbol: '₹',
    currency_name: 'Indian Rupee',
    currency_format: '##,##,##0.00',
    price_precision: 2,
    time_zone: 'Asia/Kolkata',
    offsetMinutes: 330,
    country: 'India',
    language_code: 'en',
    gst: true,
    places: [
      ['Bengaluru', 'Karnataka', '560001'],
      ['Mumbai', 'Maharashtra', '400001'],
      ['Chennai', 'Tamil Nadu', '600002'],
    ],
  },
  {
    name: 'Sunrise "Pacific" Supply Co.',
    currency_code: 'USD',
    currency_symbol: '$',
    currency_name: 'US Dollar',
    currency_format: '###,##0.00',
    price_precision: 2,
    time_zone: 'America/Los_Angeles',
    offsetMinutes: -480,
    country: 'U.S.A',
    language_code: 'en',
    gst: false,
    places: [
      ['San Francisco', 'California', '94103'],
      ['Portland', 'Oregon', '97201'],
      ['Seattle', 'Washington', '98101'],
    ],
  },
  {
    name: 'Müller & Söhne GmbH',
    currency_code: 'EUR',
    currency_symbol: '€',
    currency_name: 'Euro',
    currency_format: '###.##0,00',
    price_precision: 2,
    time_zone: 'Europe/Berlin',
    offsetMinutes: 60,
    country: 'Germany',
    language_code: 'de',
    gst: false,
    places: [
      ['Berlin', 'Berlin', '10115'],
      ['München', 'Bayern', '80331'],
      ['Köln', 'Nordrhein-Westfalen', '50667'],
    ],
  },
  {
    name: '株式会社 さくら商事',
    currency_code: 'JPY',
    currency_symbol: '¥',
    currency_name: 'Japanese Yen',
    currency_format: '###,###',
    price_precision: 0,
    time_zone: 'Asia/Tokyo',
    offsetMinutes: 540,
    country: 'Japan',
    language_code: 'ja',
    gst: false,
    places: [
      ['東京', '東京都', '100-0001'],
      ['大阪', '大阪府', '530-0001'],
      ['Yokohama', 'Kanagawa', '220-0012'],
    ],
  },
  {
    name: "Kookaburra & O'Neill Pty Ltd",
    currency_code: 'AUD',
    currency_symbol: '$',
    currency_name: 'Australian Dollar',
    currency_format: '###,##0.00',
    price_precision: 2,
    time_zone: 'Australia/Brisbane',
    offsetMinutes: 600,
    country: 'Australia',
    language_code: 'en',
    gst: false,
    places: [
      ['Brisbane', 'Queensland', '4000'],
      ['Gold Coast', 'Queensland', '4217'],
      ['Cairns', 'Queensland', '4870'],
    ],
  },
  {
    name: 'Thames Ledger Ltd',
    currency_code: 'GBP',
    currency_symbol: '£',
    currency_name: 'Pound Sterling',
    currency_format: '###,##0.00',
    price_precision: 2,
    time_zone: 'Europe/London',
    offsetMinutes: 0,
    country: 'United Kingdom',
    language_code: 'en',
    gst: false,
    places: [
      ['London', 'Greater London', 'EC1A 1BB'],
      ['Leeds', 'West Yorkshire', 'LS1 4AP'],
      ['Bristol', 'Bristol', 'BS1 4ST'],
    ],
  },
  {
    name: 'Ipê Comércio Ltda.',
    currency_code: 'BRL',
    currency_symbol: 'R$',
    currency_name: 'Brazilian Real',
    currency_format: '###.##0,00',
    price_precision: 2,
    time_zone: 'America/Sao_Paulo',
    offsetMinutes: -180,
    country: 'Brazil',
    language_code: 'pt',
    gst: false,
    places: [
      ['São Paulo', 'SP', '01001-000'],
      ['Rio de Janeiro', 'RJ', '20010-000'],
      ['Curitiba', 'PR', '80010-000'],
    ],
  },
];

export interface OrgInfo {
  index: number;
  /** The books id, which is also every family's id unless ids differ per family. */
  organization_id: string;
  /** The organization id in each family (variant orgIdPerFamily: one per family). */
  ids: Record<Family, string>;
  profile: OrgProfile;
  offset: string;
  idStyle: IdStyle;
  /** Variant numericIds: every id space sends 19-digit ids, not only the spaces >= 10. */
  wideIds: boolean;
  /** Variant mixedOffsets: timestamps in mixed offset forms (same instants). */
  mixedOffsets: boolean;
}

export interface OrgOptions {
  numericIds?: boolean;
  orgIdPerFamily?: boolean;
  mixedOffsets?: boolean;
}

export const FAMILIES: readonly Family[] = ['books', 'inventory', 'invoice', 'billing'];

/** The organization id of each family: the shared id everywhere, or (orgIdPerFamily) one per family. */
export function familyIds(shared: string, perFamily: boolean): Record<Family, string> {
  const ids = {} as Record<Family, string>;
  FAMILIES.forEach((family, f) => {
    // Books keeps the shared id; the others get 11 digits led by the family's number, so
    // they never equal a shared id (at most 10 digits) nor each other.
    ids[family] = perFamily && f > 0 ? String(f * 10_000_000_000 + Number(shared)) : shared;
  });
  return ids;
}

/**
 * Offsets of the mixedOffsets variant, [minutes east of UTC, as written]. Wide apart (-12:00
 * to +14:00), so two instants less than about a day apart often sort the other way as text.
 */
export const MIXED_OFFSETS: ReadonlyArray<readonly [number, string]> = [
  [330, '+0530'],
  [-660, '-1100'],
  [0, 'Z'],
  [840, '+14:00'],
  [-480, '-08:00'],
  [330, '+05:30'],
  [-720, '-1200'],
  [600, '+10:00'],
  [0, '+00:00'],
  [-570, '-0930'],
  [765, '+1245'],
  [0, '+0000'],
];

export function formatOffset(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return sign + String(Math.floor(abs / 60)).padStart(2, '0') + String(abs % 60).padStart(2, '0');
}

export function buildOrganizations(seed: number, count: number, opts: OrgOptions = {}): OrgInfo[] {
  const orgs: OrgInfo[] = [];
  for (let i = 0; i < count; i++) {
    const profile = PROFILES[i % PROFILES.length] as OrgProfile;
    // The (i + 1) * 10^6 part keeps ids distinct whatever the hash says.
    const id = String(600_000_000 + (i + 1) * 10_000_000 + (hash4(seed, i, 0x0a, 1) % 1_000_000) * 7);
    orgs.push({
      index: i,
      organization_id: id,
      ids: familyIds(id, opts.orgIdPerFamily ?? false),
      profile: i < PROFILES.length ? profile : { ...profile, name: `${profile.name} #${i + 1}` },
      offset: formatOffset(profile.offsetMinutes),
      // Every third org (the second, fifth, ...) sends record ids as JSON numbers.
      idStyle: opts.numericIds || i % 3 === 1 ? 'number' : 'string',
      wideIds: opts.numericIds ?? false,
      mixedOffsets: opts.mixedOffsets ?? false,
    });
  }
  return orgs;
}

/** What every generator needs about one organization: ids, timestamps, randomness. */
export class OrgGen {
  readonly offsetMs: number;

  constructor(
    readonly seed: number,
    readonly org: OrgInfo,
    readonly scale: number,
    readonly startMs: number,
    /** Variant uneditedRecords: every generated record changed last when it was created. */
    readonly unedited = false,
    /** Records of these top-level streams (`family.stream`) instead of the stream's count at `scale`. */
    private readonly streamCounts: Readonly<Record<string, number>> = {},
  ) {
    this.offsetMs = org.profile.offsetMinutes * 60_000;
  }

  /** Generated records of a top-level stream: its own count when given, else its count at `scale`. */
  countOf(def: { family: string; stream: string; count?: (scale: number) => number }): number {
    if (!def.count) return 0;
    return this.streamCounts[`${def.family}.${def.stream}`] ?? def.count(this.scale);
  }

  get profile(): OrgProfile {
    return this.org.profile;
  }

  /**
   * Record ids: "4", org (2 digits), id space (2 digits), slot. 15 digits in string-style
   * orgs; 19 digits (beyond 2^53) in number-style orgs. Small id spaces (< 10) stay at
   * 15 digits everywhere, so number-style orgs send both safe and unsafe integers.
   */
  id(space: number, slot: number): string {
    const wide = this.org.idStyle === 'number' && (space >= 10 || this.org.wideIds);
    return (
      '4' + String(this.org.index % 100).padStart(2, '0') + String(space).padStart(2, '0') + String(slot).padStart(wide ? 14 : 10, '0')
    );
  }

  /** The slot an id names, or undefined if it is not an id of this space. */
  slotOf(space: number, id: string): number | undefined {
    const prefix = '4' + String(this.org.index % 100).padStart(2, '0') + String(space).padStart(2, '0');
    if (!id.startsWith(prefix) || !/^\d+$/.test(id)) return undefined;
    const slot = Number(id.slice(prefix.length));
    return this.id(space, slot) === id ? slot : undefined;
  }

  rng(space: number, slot: number, salt = 0): Rng {
    return new Rng(hash4(this.seed, this.org.index * 256 + space, slot, salt));
  }

  hash(space: number, slot: number, salt: number): number {
    return hash4(this.seed, this.org.index * 256 + space, slot, salt);
  }

  /** `2026-11-20T10:15:30+0530`: the spec's style, in the org's own offset. */
  ts(ms: number): string {
    if (this.org.mixedOffsets) {
      // The written form is a function of the instant, so every read of it is the same text.
      const [minutes, label] = MIXED_OFFSETS[
        hash4(this.seed, this.org.index, Math.floor(ms / 1000), 0x0ff5) % MIXED_OFFSETS.length
      ] as readonly [number, string];
      return new Date(ms + minutes * 60_000).toISOString().slice(0, 19) + label;
    }
    return new Date(ms + this.offsetMs).toISOString().slice(0, 19) + this.org.offset;
  }

  date(ms: number): string {
    return new Date(ms + this.offsetMs).toISOString().slice(0, 10);
  }

  /** When the organization's account was created (sandbox ms): organizations never change after. */
  organizationCreated(): number {
    return this.startMs - (400 + (this.hash(0, 0, 9) % 2000)) * 86_400_000;
  }

  /** The organization as a family's organization list shows it (its id in that family). */
  organizationRecord(family: Family = 'books'): Record<string, unknown> {
    const p = this.profile;
    const created = this.organizationCreated();
    return {
      organization_id: this.org.ids[family],
      name: p.name,
      contact_name: ['Priya Raman', 'Dana Whitfield', 'Jürgen Weiß', '佐藤 花子', "Liam O'Connor", 'Amelia Hart', 'João Silva'][
        this.org.index % 7
      ],
      email: `accounts+${this.org.index + 1}@example.com`,
      is_default_org: this.org.index === 0,
      language_code: p.language_code,
      fiscal_year_start_month: [3, 0, 0, 3, 6, 3, 0][this.org.index % 7],
      account_created_date: this.date(created),
      time_zone: p.time_zone,
      is_org_active: true,
      currency_id: this.id(1, 0),
      currency_code: p.currency_code,
      currency_symbol: p.currency_symbol,
      currency_format: p.currency_format,
      price_precision: p.price_precision,
    };
  }
}
