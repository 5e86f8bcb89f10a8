/**
 * Record generators. Each is a pure function of (seed, organization, slot[, parent]):
 * the same inputs give the same record, field for field, in the same key order.
 */
import type { OrgGen } from './organizations.js';
import { round, type Rng } from './random.js';
import type { Rec, StreamDef, Times } from './stream-types.js';

const DAY = 86_400_000;

export const COMPANIES = [
  'Café "Zürich" & Söhne',
  '株式会社 山田商事',
  "O'Brien & Daughters",
  'Ñandú Exportaciones S.A.',
  'Łódź Meble sp. z o.o.',
  'Δέλτα Τεχνική Α.Ε.',
  'Acme "Rocket" Supplies',
  "Société d'Électricité du Nord",
  'Sunny Day 🌞 Bakery',
  'Bergström & Ek AB',
  'Nguyễn Trading',
  'Smith & Sons',
  'Globex Corporation',
  'Initech LLC',
  'Umbrella Health',
  'Tyrell <Replicants> Inc.',
  'Back\\slash Studio',
  'Hôtel Le Fjord',
] as const;
const FIRST = [
  'Aarav',
  'Priya',
  'Dana',
  'Jürgen',
  'Zoë',
  'José',
  'Siobhán',
  'Ólafur',
  '花子',
  'Mohammed',
  'Chloé',
  'Liam',
  'Łukasz',
  'Ana-María',
] as const;
const LAST = [
  'Raman',
  'Whitfield',
  'Weiß',
  "D'Arcy",
  'García',
  "O'Connor",
  '佐藤',
  'Müller',
  'Kowalski',
  'Smith',
  'Nakamura',
  'Øster',
] as const;
const ITEMS = [
  'Widget "Pro" 3000',
  'Ergonomic Chair',
  'Café Crème Beans 1kg',
  'USB-C Cable ½ m',
  'Steel Bolt M8',
  'Consulting hour',
  'Printer Toner',
  '抹茶 Tea Set',
  'Desk Lamp',
  'Safety Gloves',
] as const;
const ACCOUNTS = ['Cost of Goods Sold', 'Office Supplies', 'Rent Expense', 'Travel & Lodging', 'Software Subscriptions', 'Sales'] as const;
const FOREIGN = ['USD', 'EUR', 'GBP', 'JPY', 'AUD'] as const;

export const CURRENCIES: ReadonlyArray<readonly [string, string, string]> = [
  ['INR', '₹', 'Indian Rupee'],
  ['USD', '$', 'US Dollar'],
  ['EUR', '€', 'Euro'],
  ['JPY', '¥', 'Japanese Yen'],
  ['AUD', '$', 'Australian Dollar'],
  ['GBP', '£', 'Pound Sterling'],
  ['BRL', 'R$', 'Brazilian Real'],
  ['CAD', '$', 'Canadian Dollar'],
  ['CHF', 'CHF', 'Swiss Franc'],
  ['CNY', '¥', 'Yuan Renminbi'],
  ['SEK', 'kr', 'Swedish Krona'],
  ['NZD', '$', 'New Zealand Dollar'],
  ['MXN', '$', 'Mexican Peso'],
  ['SGD', '$', 'Singapore Dollar'],
  ['HKD', '$', 'Hong Kong Dollar'],
  ['NOK', 'kr', 'Norwegian Krone'],
  ['KRW', '₩', 'South Korean Won'],
  ['TRY', '₺', 'Turkish Lira'],
  ['ZAR', 'R', 'South African Rand'],
  ['DKK', 'kr', 'Danish Krone'],
  ['PLN', 'zł', 'Polish Zloty'],
  ['TWD', 'NT$', 'New Taiwan Dollar'],
  ['THB', '฿', 'Thai Baht'],
  ['MYR', 'RM', 'Malaysian Ringgit'],
  ['IDR', 'Rp', 'Indonesian Rupiah'],
  ['HUF', 'Ft', 'Hungarian Forint'],
  ['CZK', 'Kč', 'Czech Koruna'],
  ['ILS', '₪', 'Israeli Shekel'],
  ['CLP', '$', 'Chilean Peso'],
  ['PHP', '₱', 'Philippine Peso'],
  ['AED', 'AED', 'UAE Dirham'],
  ['COP', '$', 'Colombian Peso'],
  ['SAR', 'SAR', 'Saudi Riyal'],
  ['KWD', 'KWD', 'Kuwaiti Dinar'],
  ['QAR', 'QAR', 'Qatari Riyal'],
  ['BHD', 'BHD', 'Bahraini Dinar'],
  ['OMR', 'OMR', 'Omani Rial'],
  ['EGP', 'E£', 'Egyptian Pound'],
  ['NGN', '₦', 'Nigerian Naira'],
  ['KES', 'KSh', 'Kenyan Shilling'],
];

/**
 * US dollars per unit of each currency, roughly: exchange rates between two of them (A37: base
 * currency per unit of the record's currency) come out the size a reader expects.
 */
const USD_VALUE: Readonly<Record<string, number>> = {
  INR: 0.012,
  USD: 1,
  EUR: 1.08,
  JPY: 0.0067,
  AUD: 0.66,
  GBP: 1.27,
  BRL: 0.18,
  CAD: 0.73,
  CHF: 1.13,
  CNY: 0.14,
  SEK: 0.095,
  NZD: 0.6,
  MXN: 0.055,
  SGD: 0.74,
  HKD: 0.128,
  NOK: 0.093,
  KRW: 0.00073,
  TRY: 0.029,
  ZAR: 0.055,
  DKK: 0.145,
  PLN: 0.25,
  TWD: 0.031,
  THB: 0.029,
  MYR: 0.22,
  IDR: 0.000062,
  HUF: 0.0027,
  CZK: 0.043,
  ILS: 0.27,
  CLP: 0.00105,
  PHP: 0.0175,
  AED: 0.272,
  COP: 0.00025,
  SAR: 0.267,
  KWD: 3.25,
  QAR: 0.275,
  BHD: 2.65,
  OMR: 2.6,
  EGP: 0.02,
  NGN: 0.00065,
  KES: 0.0077,
};

/** Units of `base` per unit of `code`, times `jitter` (a rate moves from day to day), to `digits` significant digits. */
function rateBetween(code: string, base: string, jitter: number, digits: number): number {
  const rate = ((USD_VALUE[code] ?? 1) / (USD_VALUE[base] ?? 1)) * jitter;
  return Number(rate.toPrecision(digits));
}

export function personName(r: Rng): [string, string] {
  return [r.pick(FIRST), r.pick(LAST)];
}

export function companyName(g: OrgGen, contactSlot: number): string {
  return COMPANIES[g.hash(20, contactSlot, 5) % COMPANIES.length] as string;
}

export function email(first: string, last: string, n: number): string {
  const clean = (s: string): string =>
    s
      .normalize('NFKD')
      .replace(/[^A-Za-z]/g, '')
      .toLowerCase() || 'user';
  return `${clean(first)}.${clean(last)}${n}@example.com`;
}

/** Times of base record `slot`; see StreamDef.timeOrder. */
export function baseTimes(g: OrgGen, def: StreamDef, slot: number): Times {
  const n = Math.max(1, def.count ? g.countOf(def) : 1);
  const stepS = Math.max(2, Math.floor((730 * DAY) / 1000 / n));
  const jitterS = g.hash(def.space, slot, 77) % Math.floor(stepS / 2);
  const top = g.startMs - 60_000;
  if (def.timeOrder === 'change') {
    // Strictly decreasing whole seconds: consecutive slots differ by at least stepS/2 >= 1 s.
    const change = top - (slot * stepS + jitterS) * 1000;
    // Variant uneditedRecords: never edited since created, so creation order is change order too.
    const created = g.unedited ? change : change - (g.hash(def.space, slot, 78) % (45 * 86_400)) * 1000;
    return { created, change };
  }
  const created = top - ((n - slot) * stepS - jitterS) * 1000;
  const spanS = Math.max(1, Math.floor((top - created) / 1000));
  const change = g.unedited ? created : created + (g.hash(def.space, slot, 79) % spanS) * 1000;
  return { created, change };
}

function address(g: OrgGen, r: Rng, attention: boolean): Rec {
  const [city, state, zip] = r.pick(g.profile.places);
  const street = `${r.range(1, 999)} ${r.pick(['Main St', "Rue de l'Église", 'Königstraße', 'MG Road', 'Harbour Rd'])}`;
  if (attention) {
    const [f, l] = personName(r);
    return {
      attention: `${f} ${l}`,
      address: street,
      street2: r.bool(0.3) ? `Suite ${r.range(1, 90)}` : '',
      city,
      state,
      zip,
      country: g.profile.country,
    };
  }
  return { address: street, city, state, zip, country: g.profile.country, fax: r.bool(0.2) ? r.digits(10) : '' };
}

function taxPercents(g: OrgGen): readonly number[] {
  const c = g.profile.currency_code;
  if (c === 'INR') return [0, 5, 12, 18];
  if (c === 'EUR') return [0, 7, 19];
  if (c === 'GBP') return [0, 5, 20];
  if (c === 'JPY') return [8, 10];
  if (c === 'AUD') return [0, 10];
  return [0, 7.25, 8.5];
}

function currencyOf(g: OrgGen, r: Rng): { code: string; id: string; symbol: string; rate: number } {
  const base = g.profile.currency_code;
  if (r.bool(0.85)) return { code: base, id: g.id(1, 0), symbol: g.profile.currency_symbol, rate: 1 };
  const options = FOREIGN.filter((c) => c !== base);
  const code = r.pick(options);
  const entry = CURRENCIES.find((c) => c[0] === code);
  const slot = 1 + CURRENCIES.filter((c) => c[0] !== base).findIndex((c) => c[0] === code);
  return { code, id: g.id(1, slot), symbol: entry?.[1] ?? code, rate: rateBetween(code, base, r.money(0.97, 1.03, 4), 6) };
}

function gstFields(g: OrgGen, r: Rng): { gst_no: string; gst_treatment: string; place_of_supply: string } {
  if (!g.profile.gst) return { gst_no: '', gst_treatment: '', place_of_supply: '' };
  const treatment = r.pick(['business_gst', 'business_none', 'overseas', 'consumer']);
  return {
    gst_no: treatment === 'business_gst' ? `29${r.digits(5)}ABCDE1Z${r.int(10)}` : '',
    gst_treatment: treatment,
    place_of_supply: r.pick(['KA', 'MH', 'TN', 'DL']),
  };
}

function customFields(g: OrgGen, r: Rng, style: 'salesorder' | 'vendorcredit' | 'contact' | 'expense'): Rec[] {
  const out: Rec[] = [];
  const n = r.int(3);
  for (let i = 0; i < n; i++) {
    const value = r.pick(['Priority', 'Net 30', 'Région Île-de-France', '42', 'Yes', '"quoted"']);
    const id = g.id(7, i + 1);
    if (style === 'salesorder') out.push({ custom_field_id: id, index: i + 1, label: `cf_${i + 1}`, value });
    else if (style === 'vendorcredit') out.push({ custom_field_id: id, label: `Field ${i + 1}`, value, index: i + 1 });
    else if (style === 'contact') out.push({ value, index: i + 1, label: `Field ${i + 1}` });
    else out.push({ customfield_id: id, value });
  }
  return out;
}

function documents(g: OrgGen, r: Rng, space: number, slot: number): Rec[] {
  if (!r.bool(0.2)) return [];
  const size = r.range(2_000, 900_000);
  return [
    {
      can_send_in_mail: r.bool(),
      file_name: r.pick(['scan (1).pdf', 'Beleg_Übersicht.pdf', 'receipt.png']),
      file_type: r.pick(['pdf', 'png']),
      file_size_formatted: `${Math.round(size / 1024)} KB`,
      attachment_order: 1,
      document_id: g.id(28, space * 1_000_000 + slot),
      file_size: size,
    },
  ];
}

// ---------------------------------------------------------------- inventory

export function contact(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(20, slot);
  const company = companyName(g, slot);
  const [first] = personName(r);
  const cur = currencyOf(g, r);
  const taxable = r.bool(0.6);
  const receivable = r.money(0, 20_000, g.profile.price_precision);
  const gst = gstFields(g, r);
  const terms = r.pick([0, 15, 30, 45, 60]);
  return {
    contact_id: g.id(20, slot),
    contact_name: company,
    company_name: company,
    has_transaction: r.bool(0.7),
    contact_type: r.bool(0.7) ? 'customer' : 'vendor',
    is_linked_with_crm: r.bool(0.1),
    website: r.bool(0.5) ? `https://www.example.com/${slot}` : '',
    primary_contact_id: g.id(21, slot * 64),
    payment_terms: terms,
    payment_terms_label: terms === 0 ? 'Due on Receipt' : `Net ${terms}`,
    currency_id: cur.id,
    currency_code: cur.code,
    currency_symbol: cur.symbol,
    language_code: r.pick(['de', 'en', 'es', 'fr', 'it', 'ja', 'nl', 'pt', 'sv', 'zh']),
    outstanding_receivable_amount: receivable,
    outstanding_receivable_amount_bcy: round(receivable * cur.rate, g.profile.price_precision),
    unused_credits_receivable_amount: 0,
    unused_credits_receivable_amount_bcy: 0,
    status: r.bool(0.85) ? 'active' : 'inactive',
    payment_reminder_enabled: r.bool(),
    custom_fields: customFields(g, r, 'contact'),
    opening_balances: r.bool(0.2)
      ? [{ location_id: g.id(6, 1), exchange_rate: cur.rate, opening_balance_amount: r.money(0, 5000, 2) }]
      : [],
    location_id: g.id(6, 1),
    location_name: 'Head Office',
    billing_address: address(g, r, true),
    shipping_address: address(g, r, true),
    facebook: r.bool(0.2) ? `fb.com/${first.toLowerCase()}` : '',
    twitter: '',
    default_templates: {
      invoice_template_id: g.id(6, 10),
      invoice_template_name: 'Standard',
      estimate_template_id: g.id(6, 11),
      estimate_template_name: 'Standard',
      creditnote_template_id: g.id(6, 12),
      creditnote_template_name: 'Standard',
      invoice_email_template_id: '',
      invoice_email_template_name: '',
      estimate_email_template_id: '',
      estimate_email_template_name: '',
      creditnote_email_template_id: '',
      creditnote_email_template_name: '',
    },
    notes: r.bool(0.3) ? `Call ${first} before delivery — "fragile"` : '',
    created_time: g.ts(times.created),
    last_modified_time: g.ts(times.change),
    is_taxable: taxable,
    tax_id: taxable ? g.id(5, 1) : '',
    tax_name: taxable ? 'Standard Rate' : '',
    tax_percentage: taxable ? r.pick(taxPercents(g)) : '',
    tax_authority_id: '',
    tax_authority_name: '',
    tax_exemption_id: '',
    tax_exemption_code: '',
    place_of_contact: gst.place_of_supply,
    gst_no: gst.gst_no,
    gst_treatment: gst.gst_treatment,
    vat_treatment: g.profile.currency_code === 'GBP' ? r.pick(['uk', 'eu_vat_registered', 'overseas']) : '',
    tax_treatment: '',
    tax_regime: '',
    legal_name: company,
    is_tds_registered: false,
  };
}

export function contactPerson(g: OrgGen, slot: number, parent: Rec): Rec {
  const r = g.rng(21, slot);
  const [first, last] = personName(r);
  return {
    contact_id: parent['contact_id'],
    contact_person_id: g.id(21, slot),
    salutation: r.pick(['Mr.', 'Ms.', 'Mx.', 'Dr.', '']),
    first_name: first,
    last_name: last,
    email: email(first, last, slot % 1000),
    phone: `+${r.digits(11)}`,
    mobile: r.bool(0.6) ? `+${r.digits(11)}` : '',
    is_primary_contact: slot % 64 === 0,
    skype: '',
    designation: r.pick(['Buyer', 'CFO', 'Einkäufer', 'Office Manager', '']),
    department: r.pick(['Purchasing', 'Finance', '']),
    is_added_in_portal: r.bool(0.2),
    communication_preference: { is_sms_enabled: r.bool(), is_whatsapp_enabled: r.bool(0.3) },
  };
}

export function contactComment(g: OrgGen, slot: number, parent: Rec): Rec {
  const r = g.rng(22, slot);
  const [first, last] = personName(r);
  const ms = g.startMs - (1 + r.int(300)) * DAY - r.int(86_400) * 1000;
  return {
    comment_id: g.id(22, slot),
    contact_id: parent['contact_id'],
    contact_name: parent['contact_name'],
    description: r.pick(['Invoice emailed', 'Payment of ₹1,200 received', 'Customer said "call later"', 'Address updated']),
    commented_by_id: g.id(2, r.int(5)),
    commented_by: `${first} ${last}`,
    date: g.date(ms),
    date_description: `${1 + r.int(300)} days ago`,
    time: new Date(ms + g.offsetMs).toISOString().slice(11, 16),
    transaction_id: r.bool(0.5) ? g.id(23, r.int(Math.max(1, g.scale))) : '',
    transaction_type: r.pick(['invoice', 'salesorder', 'customer', '']),
    is_entity_deleted: false,
    operation_type: r.pick(['Added', 'Updated', 'Emailed']),
  };
}

/**
 * `exchangeRate`: base-currency units per unit of the record's currency (A37's reading); a line's
 * `bcy_rate` is its rate in the base currency, rounded as the service rounds amounts.
 */
function lineItems(
  g: OrgGen,
  r: Rng,
  space: number,
  slot: number,
  kind: 'so' | 'vc' | 'vcbooks',
  itemLevelDiscount: boolean,
  exchangeRate: number,
): Rec[] {
  const n = r.range(1, 5);
  const prec = g.profile.price_precision;
  const items: Rec[] = [];
  for (let k = 0; k < n; k++) {
    const name = r.pick(ITEMS);
    const quantity = r.range(1, 20);
    const rate = r.money(5, 500, prec);
    const pct = r.pick(taxPercents(g));
    const total = round(quantity * rate, prec);
    const itemId = g.id(4, r.int(500));
    const base: Rec = {
      item_id: itemId,
      line_item_id: g.id(space, slot * 8 + k),
      name,
      description: r.bool(0.4) ? `${name} — batch ${r.int(99)}` : '',
      item_order: k + 1,
      bcy_rate: round(rate * exchangeRate, prec),
      rate,
      quantity,
    };
    if (kind === 'so') {
      const invoiced = r.int(quantity + 1);
      Object.assign(base, {
        quantity_invoiced: invoiced,
        quantity_packed: invoiced,
        quantity_shipped: r.int(invoiced + 1),
        unit: r.pick(['pcs', 'kg', 'box', 'hrs']),
        tax_id: pct ? g.id(5, Math.round(pct * 100)) : '',
        tds_tax_id: '',
        tax_name: pct ? `Tax ${pct}%` : '',
        tax_type: pct ? 'tax' : '',
        tax_percentage: pct,
        item_total: total,
        is_invoiced: invoiced === quantity,
        image_id: '',
        image_name: '',
        image_type: '',
        location_id: g.id(6, 1),
        location_name: 'Head Office',
        hsn_or_sac: g.profile.gst ? r.digits(6) : '',
        sat_item_key_code: '',
        unitkey_code: '',
      });
      if (itemLevelDiscount) base['discount'] = r.bool() ? `${r.pick([5, 10, 12.5])}%` : r.money(1, 20, prec);
    } else {
      Object.assign(base, {
        sku: `SKU-${r.digits(5)}`,
        account_id: g.id(3, r.int(6)),
        account_name: r.pick(ACCOUNTS),
        product_type: r.pick(['goods', 'service', 'digital_service']),
        location_id: g.id(6, 1),
        location_name: 'Head Office',
        reverse_charge_tax_id: '',
        reverse_charge_tax_name: '',
        reverse_charge_tax_percentage: '',
        reverse_charge_tax_amount: '',
        unit: r.pick(['pcs', 'kg', 'box']),
        tax_id: pct ? g.id(5, Math.round(pct * 100)) : '',
        tds_tax_id: '',
        tax_treatment_code: '',
        tax_exemption_id: '',
        tax_exemption_code: '',
        tax_name: pct ? `Tax ${pct}%` : '',
        tax_type: pct ? 'tax' : '',
        tax_percentage: pct,
        item_total: total,
        item_total_inclusive_of_tax: round(total * (1 + pct / 100), prec),
        hsn_or_sac: g.profile.gst ? r.digits(6) : '',
        acquisition_vat_id: '',
        acquisition_vat_name: '',
        acquisition_vat_percentage: '',
        acquisition_vat_amount: '',
        reverse_charge_vat_id: '',
        reverse_charge_vat_name: '',
        reverse_charge_vat_percentage: '',
        reverse_charge_vat_amount: '',
        stock_on_hand: r.range(0, 300),
        tags: [],
        item_custom_fields: [],
      });
      if (kind === 'vcbooks') {
        const project = r.bool(0.3);
        base['project_id'] = project ? g.id(30, r.int(Math.max(1, g.scale))) : '';
        base['project_name'] = project ? 'Website Relaunch' : '';
      }
    }
    items.push(base);
  }
  return items;
}

/** A sales order's adjustment when it has one: mostly 0, sometimes a small amount either way. */
function adjustmentAmount(r: Rng, prec: number): number {
  return r.bool(0.2) ? r.money(-20, 20, prec) : 0;
}

export function salesOrder(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(23, slot);
  const prec = g.profile.price_precision;
  const cur = currencyOf(g, r);
  const contactSlot = r.int(Math.max(1, g.scale));
  const itemLevel = r.bool(0.3);
  const items = lineItems(g, r, 24, slot, 'so', itemLevel, cur.rate);
  let subTotal = 0;
  let qty = 0;
  let invoiced = 0;
  let packed = 0;
  let shipped = 0;
  for (const li of items) {
    subTotal += li['item_total'] as number;
    qty += li['quantity'] as number;
    invoiced += li['quantity_invoiced'] as number;
    packed += li['quantity_packed'] as number;
    shipped += li['quantity_shipped'] as number;
  }
  subTotal = round(subTotal, prec);
  let discount: number | string = 0;
  let discountAmount = 0;
  if (!itemLevel && r.bool(0.5)) {
    if (r.bool()) {
      const pct = r.pick([5, 10, 12.5, 15]);
      discount = `${pct}%`;
      discountAmount = round((subTotal * pct) / 100, prec);
    } else {
      discountAmount = r.money(1, Math.max(2, subTotal / 10), prec);
      discount = discountAmount;
    }
  }
  const pct = r.pick(taxPercents(g));
  const taxTotal = round(((subTotal - discountAmount) * pct) / 100, prec);
  const shipping = r.bool(0.3) ? r.money(5, 60, prec) : 0;
  const adjustment: number | string = r.bool(0.15) ? '' : adjustmentAmount(r, prec);
  const total = round(subTotal - discountAmount + taxTotal + shipping + (typeof adjustment === 'number' ? adjustment : 0), prec);
  const gst = gstFields(g, r);
  const date = times.created - r.int(3) * DAY;
  const shipDays = r.range(1, 20);
  const [pf, pl] = personName(r);
  const persons = r.bool(0.5)
    ? [
        {
          contact_person_id: g.id(21, contactSlot * 64),
          contact_person_name: `${pf} ${pl}`,
          first_name: pf,
          last_name: pl,
          contact_person_email: email(pf, pl, contactSlot % 1000),
          phone: `+${r.digits(11)}`,
          mobile: '',
          communication_preference: { is_email_enabled: true, is_whatsapp_enabled: r.bool(0.2) },
        },
      ]
    : [];
  const [sf, sl] = personName(r);
  return {
    salesorder_id: g.id(23, slot),
    salesorder_number: `SO-${String(slot + 1).padStart(5, '0')}`,
    date: g.date(date),
    status: r.pick(['draft', 'open', 'confirmed', 'fulfilled', 'fulfilled', 'closed', 'void', 'onhold']),
    shipment_date: g.date(date + shipDays * DAY),
    reference_number: r.bool(0.6) ? `PO/${r.digits(4)}/"${r.pick(['A', 'B'])}"` : '',
    customer_id: g.id(20, contactSlot),
    customer_name: companyName(g, contactSlot),
    contact_persons_associated: persons,
    currency_id: cur.id,
    currency_code: cur.code,
    currency_symbol: cur.symbol,
    exchange_rate: cur.rate,
    discount_amount: discountAmount,
    discount,
    is_discount_before_tax: r.bool(0.8),
    discount_type: itemLevel ? 'item_level' : 'entity_level',
    estimate_id: r.bool(0.3) ? g.id(29, slot) : '',
    delivery_method: r.pick(['Courier', 'DHL Express', 'Abholung', '']),
    delivery_method_id: g.id(6, 20 + r.int(3)),
    line_items: items,
    location_id: g.id(6, 1),
    location_name: 'Head Office',
    shipping_charge: shipping,
    adjustment,
    adjustment_description: adjustment === '' || adjustment === 0 ? '' : 'Rounding',
    sub_total: subTotal,
    tax_total: taxTotal,
    total,
    taxes: pct ? [{ tax_name: `Tax ${pct}%`, tax_amount: taxTotal }] : [],
    price_precision: prec,
    pricebook_id: '',
    shipping_address: address(g, r, false),
    billing_address: address(g, r, false),
    notes: r.bool(0.3) ? 'Bitte "vorsichtig" liefern.\nDanke!' : '',
    terms: r.bool(0.3) ? 'Payment due in 30 days' : '',
    template_id: g.id(6, 30),
    template_name: 'Standard Template',
    template_type: 'standard',
    created_time: g.ts(times.created),
    last_modified_time: g.ts(times.change),
    salesperson_id: g.id(2, r.int(5)),
    salesperson_name: `${sf} ${sl}`,
    documents: documents(g, r, 23, slot),
    is_pre_gst: false,
    gst_no: gst.gst_no,
    gst_treatment: gst.gst_treatment,
    place_of_supply: gst.place_of_supply,
    custom_fields: customFields(g, r, 'salesorder'),
    // List-only fields.
    shipment_days: shipDays,
    quantity: qty,
    quantity_invoiced: invoiced,
    quantity_packed: packed,
    quantity_shipped: shipped,
    bcy_total: round(total * cur.rate, prec),
    is_emailed: r.bool(),
    is_drop_shipment: r.bool(0.05),
    is_backorder: r.bool(0.05),
    sales_channel: r.pick(['direct_sales', 'website', 'amazon']),
  };
}

export function vendorCredit(g: OrgGen, slot: number, times: Times, books: boolean): Rec {
  const space = books ? 10 : 25;
  const r = g.rng(space, slot);
  const prec = g.profile.price_precision;
  const cur = currencyOf(g, r);
  const vendorSlot = r.int(Math.max(1, g.scale));
  const items = lineItems(g, r, books ? 15 : 27, slot, books ? 'vcbooks' : 'vc', false, cur.rate);
  let subTotal = 0;
  let taxTotal = 0;
  for (const li of items) {
    subTotal += li['item_total'] as number;
    taxTotal += ((li['item_total'] as number) * (li['tax_percentage'] as number)) / 100;
  }
  subTotal = round(subTotal, prec);
  const total = round(subTotal + taxTotal, prec);
  const status = r.pick(['open', 'open', 'draft', 'closed', 'void']);
  const gst = gstFields(g, r);
  const date = times.created - r.int(5) * DAY;
  return {
    vendor_credit_id: g.id(space, slot),
    vendor_credit_number: `${books ? 'DN' : 'VC'}-${String(slot + 1).padStart(5, '0')}`,
    date: g.date(date),
    source_of_supply: gst.place_of_supply,
    destination_of_supply: gst.place_of_supply,
    place_of_supply: gst.place_of_supply,
    gst_no: gst.gst_no,
    gst_treatment: gst.gst_treatment,
    tax_treatment: '',
    pricebook_id: '',
    is_reverse_charge_applied: false,
    status,
    reference_number: r.bool(0.5) ? `RMA-${r.digits(4)}` : '',
    vendor_id: g.id(20, vendorSlot),
    vendor_name: companyName(g, vendorSlot),
    currency_id: cur.id,
    currency_code: cur.code,
    // An optional number sent as an empty string, as the service does for unset values.
    exchange_rate: cur.rate === 1 && r.bool(0.15) ? '' : cur.rate,
    price_precision: prec,
    vat_treatment: g.profile.currency_code === 'GBP' ? 'uk' : '',
    filed_in_vat_return_id: '',
    filed_in_vat_return_name: '',
    filed_in_vat_return_type: '',
    is_inclusive_tax: r.bool(0.2),
    location_id: g.id(6, 1),
    location_name: 'Head Office',
    line_items: items,
    // Spec 2.8 wraps each entry in `tax`.
    acquisition_vat_summary: slot % 3 === 0 ? [{ tax: { tax_name: 'VAT 20%', tax_amount: 2 + (slot % 7) * 1.5 } }] : [],
    reverse_charge_vat_summary: [],
    acquisition_vat_total: 0,
    reverse_charge_vat_total: 0,
    documents: r.bool(0.2) ? [{ document_id: g.id(28, space * 1_000_000 + slot), file_name: 'credit note.pdf' }] : [],
    custom_fields: customFields(g, r, 'vendorcredit'),
    sub_total: subTotal,
    total,
    total_credits_used: 0,
    total_refunded_amount: 0,
    balance: status === 'closed' || status === 'void' ? 0 : total,
    notes: r.bool(0.3) ? 'Returned: 3 × damaged "Widget Pro"' : '',
    comments: [],
    vendor_credit_refunds: [],
    bills_credited: [],
    created_time: g.ts(times.created),
    last_modified_time: g.ts(times.change),
  };
}

export function vendorCreditRefund(g: OrgGen, slot: number, parent: Rec, books: boolean): Rec {
  const space = books ? 11 : 26;
  const r = g.rng(space, slot);
  const prec = g.profile.price_precision;
  const total = typeof parent['total'] === 'number' ? parent['total'] : 100;
  const amount = r.money(1, Math.max(2, total / 2), prec);
  const parentDate = typeof parent['date'] === 'string' ? parent['date'] : g.date(g.startMs);
  return {
    vendor_credit_refund_id: g.id(space, slot),
    vendor_credit_id: parent['vendor_credit_id'],
    date: parentDate,
    refund_mode: r.pick(['cash', 'bank_transfer', 'cheque', 'Überweisung']),
    reference_number: r.bool(0.5) ? `REF-${r.digits(6)}` : '',
    description: r.bool(0.4) ? 'Refund for "damaged" goods' : '',
    amount,
    exchange_rate: parent['exchange_rate'] === '' ? 1 : parent['exchange_rate'],
    account_id: g.id(3, 10 + r.int(3)),
    account_name: r.pick(['Petty Cash', 'Business Checking', 'Undeposited Funds']),
    vendor_credit_number: parent['vendor_credit_number'],
    customer_name: parent['vendor_name'],
    filed_in_vat_return_id: '',
    filed_in_vat_return_name: '',
    filed_in_vat_return_type: '',
    imported_transactions: [],
  };
}

export function vendorCreditBill(g: OrgGen, slot: number, parent: Rec): Rec {
  const r = g.rng(12, slot);
  const total = typeof parent['total'] === 'number' ? parent['total'] : 100;
  return {
    vendor_credit_id: parent['vendor_credit_id'],
    bill_id: g.id(13, slot),
    vendor_credit_bill_id: g.id(12, slot),
    date: parent['date'],
    bill_number: `BILL-${String(slot).padStart(6, '0')}`,
    amount: r.money(1, Math.max(2, total / 3), g.profile.price_precision),
  };
}

/** Decimal places of a currency's amounts: none for the yen and the like, three for the dinars, else two. */
function currencyPrecision(code: string): number {
  if (['JPY', 'KRW', 'CLP', 'IDR', 'HUF'].includes(code)) return 0;
  if (['KWD', 'BHD', 'OMR'].includes(code)) return 3;
  return 2;
}

/** A foreign currency's exchange rate, sometimes blank ('') as the API sends it. */
function foreignRate(r: Rng, code: string, base: string): number | string {
  return r.bool(0.1) ? '' : rateBetween(code, base, r.money(0.99, 1.01, 6), 6);
}

export function currency(g: OrgGen, slot: number): Rec {
  const base = g.profile.currency_code;
  const others = CURRENCIES.filter((c) => c[0] !== base);
  const entry = slot === 0 ? (CURRENCIES.find((c) => c[0] === base) ?? CURRENCIES[0]) : others[(slot - 1) % others.length];
  const [code, symbol, name] = entry ?? ['XXX', 'X', 'Unknown'];
  const r = g.rng(1, slot);
  const precision = currencyPrecision(code);
  return {
    currency_id: g.id(1, slot),
    currency_code: code,
    currency_name: name,
    currency_symbol: symbol,
    price_precision: precision,
    currency_format: precision === 0 ? '###,###' : '###,##0.00',
    is_base_currency: slot === 0,
    exchange_rate: slot === 0 ? 1 : foreignRate(r, code, base),
    effective_date: g.date(g.startMs - r.int(60) * DAY),
  };
}

// ---------------------------------------------------------------- books

export function user(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(2, slot);
  const [first, last] = personName(r);
  const mail = email(first, last, slot);
  const status = slot === 0 ? 'active' : r.pick(['active', 'active', 'active', 'inactive', 'invited', 'deleted']);
  const role = slot === 0 ? 'admin' : r.pick(['admin', 'staff', 'staff_assigned', 'timesheetstaff', 'accountant']);
  return {
    user_id: g.id(2, slot),
    role_id: g.id(8, ['admin', 'staff', 'staff_assigned', 'timesheetstaff', 'accountant'].indexOf(role)),
    name: `${first} ${last}`,
    email: mail,
    email_ids: [{ email: mail, is_selected: true }],
    user_role: role,
    status,
    user_type: 'svc',
    is_current_user: slot === 0,
    photo_url: `https://contacts.example.com/file?ID=${g.id(2, slot)}&fs=thumb`,
    is_customer_segmented: r.bool(0.1),
    is_vendor_segmented: r.bool(0.1),
    cost_rate: r.bool(0.3) ? '' : r.money(10, 150, 2),
    is_employee: r.bool(0.8),
    created_time: g.ts(times.created),
    custom_fields: [],
  };
}

const ENTITIES = ['invoice', 'bill', 'estimate', 'salesorder', 'customer', 'vendor_payment', 'expense'] as const;

export function webhook(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(14, slot);
  const entity = r.pick(ENTITIES);
  return {
    webhook_id: g.id(14, slot),
    entity,
    webhook_name: `${entity} → ERP #${slot + 1}`,
    description: r.bool(0.5) ? 'Pushes "approved" records to the ERP' : '',
    method: r.pick(['POST', 'POST', 'PUT', 'DELETE']),
    // Receivers' credentials, as users set them up (svcsync's own hook secret goes in the URL or a header).
    url: `https://hooks.example.com/${entity}/${slot}?token=tok${slot}x${g.id(14, slot)}&entity=${entity}`,
    entity_parameters: [{ param_name: `${entity}_id`, param_value: `\${${entity}.${entity}_id}` }],
    additional_parameters: [],
    headers:
      slot % 2 === 0
        ? [
            { param_name: 'X-Source', param_value: 'svc' },
            { param_name: 'Authorization', param_value: `Bearer bearer${slot}x${g.id(14, slot)}` },
          ]
        : [{ param_name: 'X-Source', param_value: 'svc' }],
    form_data: [],
    query_parameters: [],
    user_defined_format_name: '',
    user_defined_format_value: '',
    secret: r.bool(0.5) ? `s3cr3t${r.digits(8)}` : '',
    body_type: r.pick(['application/json', 'application/x-www-form-urlencoded']),
    raw_data: '',
    connection_link_name: '',
    events: [`${entity}_created`, `${entity}_updated`],
    is_new_response_format: true,
    placeholder: `webhook_${slot}`,
    is_hidden: false,
    lock_type: r.bool(0.1) ? 'error' : 'none',
    lock_reason: '',
    is_active: r.bool(0.8),
    is_from_plugin: false,
    created_time: g.ts(times.created),
    related_rules: [],
  };
}

// ---------------------------------------------------------------- invoice

export function project(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(30, slot);
  const contactSlot = r.int(Math.max(1, g.scale));
  const billed = r.range(0, 300);
  const unbilled = r.range(0, 120);
  return {
    project_id: g.id(30, slot),
    project_name: `${r.pick(['Website Relaunch', 'ERP Migration', 'Büro Umbau', 'Audit 2026', 'Campaign "Spring"'])} ${slot + 1}`,
    customer_id: g.id(20, contactSlot),
    customer_name: companyName(g, contactSlot),
    description: r.bool(0.5) ? 'Fixed scope; see SOW v2' : '',
    status: r.pick(['active', 'active', 'inactive']),
    billing_type: r.pick(['fixed_cost_for_project', 'based_on_project_hours', 'based_on_task_hours', 'based_on_staff_hours']),
    rate: r.range(20, 200),
    budget_type: r.pick(['', 'total_project_cost', 'total_project_hours']),
    total_hours: `${billed + unbilled}:${String(r.int(60)).padStart(2, '0')}`,
    billed_hours: `${billed}:${String(r.int(60)).padStart(2, '0')}`,
    un_billed_hours: `${unbilled}:${String(r.int(60)).padStart(2, '0')}`,
    created_time: g.ts(times.created),
  };
}

export function task(g: OrgGen, slot: number, parent: Rec): Rec {
  const r = g.rng(31, slot);
  const billedH = r.range(0, 40);
  const unbilledH = r.range(0, 20);
  const billedM = r.pick([0, 15, 30, 45]);
  const unbilledM = r.pick([0, 15, 30, 45]);
  const totalMin = (billedH + unbilledH) * 60 + billedM + unbilledM;
  const hhmm = (h: number, m: number): string => `${h}:${String(m).padStart(2, '0')}`;
  return {
    project_id: parent['project_id'],
    task_id: g.id(31, slot),
    currency_id: g.id(1, 0),
    customer_id: parent['customer_id'],
    task_name: r.pick(['Design', 'Implementation', 'Review "final"', 'Testing', 'Déploiement', '打ち合わせ']),
    project_name: parent['project_name'],
    customer_name: parent['customer_name'],
    billed_hours: hhmm(billedH, billedM),
    log_time: hhmm(Math.floor(totalMin / 60), totalMin % 60),
    un_billed_hours: hhmm(unbilledH, unbilledM),
    description: r.bool(0.5) ? 'Includes two review rounds' : '',
    rate: r.range(20, 200),
    status: r.pick(['active', 'active', 'inactive']),
    is_billable: r.bool(0.8),
  };
}

// ---------------------------------------------------------------- billing

/** A plan's price brackets for its pricing scheme: one price, one package, or two tiers (volume and tier). */
function priceBrackets(r: Rng, scheme: string, prec: number): Rec[] {
  if (scheme === 'unit') return [{ price: r.money(1, 20, prec) }];
  if (scheme === 'package') return [{ end_quantity: 10, price: r.money(10, 90, prec) }];
  return [
    { start_quantity: 1, end_quantity: 10, price: r.money(5, 20, prec) },
    { start_quantity: 11, end_quantity: 100, price: r.money(1, 5, prec) },
  ];
}

export function plan(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(40, slot);
  const prec = g.profile.price_precision;
  const scheme = r.pick(['unit', 'volume', 'tier', 'package']);
  const brackets = priceBrackets(r, scheme, prec);
  const code = `PLAN-${String(slot + 1).padStart(4, '0')}`;
  return {
    plan_code: code,
    name: `${r.pick(['Basic', 'Pro', 'Équipe', 'Enterprise "Plus"', 'スタンダード'])} ${slot + 1}`,
    description: r.bool(0.6) ? 'Monthly plan for small teams' : '',
    store_markup_description: r.bool(0.3) ? '<p>Everything in <b>Basic</b>, plus more.</p>' : '',
    status: r.bool(0.8) ? 'active' : 'inactive',
    product_id: g.id(43, r.int(3)),
    account_id: g.id(3, 20),
    account_name: 'Subscription Revenue',
    tax_id: r.bool(0.5) ? g.id(5, 2) : '',
    trial_period: r.pick([0, 0, 7, 14, 30]),
    setup_fee: r.bool(0.3) ? r.money(10, 100, prec) : 0,
    setup_fee_account_id: g.id(3, 21),
    setup_fee_account_name: 'Setup Fees',
    tags: r.bool(0.3)
      ? [
          {
            tag_id: g.id(8, 40),
            tag_option_id: g.id(8, 41 + r.int(3)),
            tag_name: 'Region',
            tag_option_name: r.pick(['EMEA', 'APAC', 'Amériques']),
            is_tag_mandatory: false,
          },
        ]
      : [],
    custom_fields: r.bool(0.3)
      ? [
          {
            customfield_id: g.id(7, 50),
            is_active: true,
            show_in_all_pdf: false,
            value_formatted: 'Gold',
            data_type: 'string',
            index: 1,
            label: 'Tier',
            show_on_pdf: false,
            placeholder: 'cf_tier',
            value: 'Gold',
          },
        ]
      : [],
    recurring_price: r.money(5, 500, prec),
    unit: r.pick(['seat', 'user', 'license']),
    interval: r.pick([1, 1, 3, 12]),
    interval_unit: r.bool(0.8) ? 'months' : 'years',
    billing_cycles: r.bool(0.8) ? -1 : r.range(1, 24),
    product_type: r.pick(['goods', 'service', 'digital_service']),
    hsn_or_sac: g.profile.gst ? r.digits(6) : '',
    sat_item_key_code: '',
    unitkey_code: '',
    item_tax_preferences: g.profile.gst ? [{ tax_specification: 'intra', tax_name: 'GST18', tax_percentage: 18, tax_id: g.id(5, 18) }] : [],
    addons: r.bool(0.5)
      ? [
          {
            addon_code: `ADDON-${slot + 1}`,
            name: 'Extra storage',
            status: 'active',
            pricing_scheme: scheme,
            unit_name: 'GB',
            price_brackets: brackets,
          },
        ]
      : [],
    url: `https://billing.example.com/subscribe/${g.org.ids.billing}/${code}`,
    created_time: g.ts(times.created),
    updated_time: g.ts(times.change),
  };
}

/** A VAT treatment for organizations that charge VAT (in pounds or euros); '' elsewhere. */
function vatTreatment(r: Rng, currencyCode: string): string {
  if (currencyCode === 'GBP') return r.pick(['uk', 'eu_vat_registered', 'overseas']);
  if (currencyCode === 'EUR') return r.pick(['eu_vat_registered', 'eu_vat_not_registered', 'non_eu']);
  return '';
}

export function recurringExpense(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(41, slot);
  const prec = g.profile.price_precision;
  const cur = currencyOf(g, r);
  const amount = r.money(10, 2000, prec);
  const pct = r.pick(taxPercents(g));
  const tax = round((amount * pct) / 100, prec);
  const contactSlot = r.int(Math.max(1, g.scale));
  const start = times.created + r.int(10) * DAY;
  const status = r.pick(['active', 'active', 'stopped', 'expired']);
  const accountIdx = r.int(ACCOUNTS.length);
  const billable = r.bool(0.3);
  const gst = gstFields(g, r);
  const lastCreated = g.startMs - r.range(1, 28) * DAY;
  return {
    recurring_expense_id: g.id(41, slot),
    account_id: g.id(3, accountIdx),
    account_name: ACCOUNTS[accountIdx],
    recurrence_name: `${r.pick(['Office rent', 'Cloud hosting', 'Café supplies', 'Lizenz "Pro"'])} #${slot + 1}`,
    start_date: g.date(start),
    end_date: status === 'expired' ? g.date(start + 365 * DAY) : '',
    recurrence_frequency: r.pick(['months', 'weeks', 'years']),
    repeat_every: r.pick([1, 1, 2, 3]),
    last_created_date: g.date(lastCreated),
    next_expense_date: status === 'active' ? g.date(lastCreated + 30 * DAY) : '',
    amount,
    total: round(amount + tax, prec),
    sub_total: amount,
    bcy_total: round((amount + tax) * cur.rate, prec),
    description: r.bool(0.4) ? 'Auto-created monthly' : '',
    status,
    customer_id: billable ? g.id(20, contactSlot) : '',
    customer_name: billable ? companyName(g, contactSlot) : '',
    vendor_id: g.id(20, (contactSlot + 1) % Math.max(1, g.scale)),
    vendor_name: companyName(g, (contactSlot + 1) % Math.max(1, g.scale)),
    currency_id: cur.id,
    currency_code: cur.code,
    exchange_rate: cur.rate,
    project_id: '',
    project_name: '',
    is_billable: billable,
    is_inclusive_tax: false,
    tax_id: pct ? g.id(5, Math.round(pct * 100)) : '',
    tax_name: pct ? `Tax ${pct}%` : '',
    tax_percentage: pct,
    product_type: r.pick(['goods', 'service']),
    is_pre_gst: false,
    source_of_supply: gst.place_of_supply,
    destination_of_supply: gst.place_of_supply,
    destination_of_supply_state: gst.place_of_supply,
    gst_no: gst.gst_no,
    gst_treatment: gst.gst_treatment,
    hsn_or_sac: g.profile.gst ? r.digits(6) : '',
    vat_treatment: vatTreatment(r, g.profile.currency_code),
    acquisition_vat_id: '',
    reverse_charge_vat_id: '',
    acquisition_vat_total: 0,
    reverse_charge_vat_total: 0,
    acquisition_vat_summary: [],
    reverse_charge_vat_summary: [],
    reverse_charge_tax_id: '',
    reverse_charge_tax_name: '',
    reverse_charge_tax_percentage: '',
    reverse_charge_tax_amount: '',
    is_reverse_charge_applied: false,
    custom_fields: customFields(g, r, 'expense'),
    created_time: g.ts(times.created),
    last_modified_time: g.ts(times.change),
    line_item: {
      line_item_id: g.id(44, slot),
      account_id: g.id(3, accountIdx),
      account_name: ACCOUNTS[accountIdx],
      description: '',
      amount,
      tax_amount: tax,
      tax_id: pct ? g.id(5, Math.round(pct * 100)) : '',
      tax_name: pct ? `Tax ${pct}%` : '',
      tax_type: pct ? 'tax' : '',
      tax_percentage: pct,
      item_total: amount,
      item_order: 1,
      hsn_or_sac: '',
      product_type: 'goods',
      acquisition_vat_id: '',
      reverse_charge_vat_id: '',
      reverse_charge_tax_id: '',
      tax_exemption_code: '',
      tax_exemption_id: '',
    },
  };
}

const EVENT_TYPES = [
  'payment_thankyou',
  'subscription_created',
  'subscription_activation',
  'invoice_notification',
  'subscription_cancelled',
  'payment_declined',
] as const;

export function billingEvent(g: OrgGen, slot: number, times: Times): Rec {
  const r = g.rng(42, slot);
  const type = r.pick(EVENT_TYPES);
  const payload = {
    event_type: type,
    data: {
      subscription: {
        subscription_id: g.id(46, slot),
        customer_name: companyName(g, r.int(Math.max(1, g.scale))),
        amount: r.money(5, 500, g.profile.price_precision),
      },
    },
  };
  const hooks: Rec[] = r.bool(0.5)
    ? [
        {
          webhook_id: g.id(14, r.int(Math.max(1, g.scale))),
          url: 'https://hooks.example.com/billing',
          status: r.pick(['success', 'success', 'scheduled', 'failure']),
          last_updated_time: g.ts(times.change + 5000),
        },
      ]
    : [];
  return {
    event_id: g.id(42, slot),
    event_type: type,
    event_time: g.ts(times.change),
    payload: JSON.stringify(payload),
    webhooks: hooks,
  };
}
