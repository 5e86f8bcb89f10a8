/**
 * The control endpoints, under /_sandbox/ (outside every family's API root): what a test asks
 * the sandbox in process — the truth at an instant, a record's versions, a mutation — for a
 * process outside it (`svcsync sandbox mutate`, a benchmark, a newcomer with curl). They take no
 * token, count toward no limit and stay out of the request log: they are not the API.
 */
import type { Family } from './organizations.js';
import type { Amount, MutateOptions, MutationSummary } from './data-store.js';
import type { HistoryStats, Version } from './record-versions.js';

/** What the endpoints need of a sandbox: the same calls a test makes in process. */
export interface ControlApi {
  url: string;
  now(): number;
  organizations(): unknown[];
  truthAt(organizationId: string, family: Family, stream: string, t: number): unknown[];
  versions(organizationId: string, family: Family, stream: string, id: string): Version[];
  mutate(opts: MutateOptions): MutationSummary;
  historyStats(): HistoryStats;
}

export const CONTROL_ROOT = '/_sandbox';

export interface ControlAnswer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

class BadControl extends Error {}

const FAMILIES: readonly Family[] = ['books', 'inventory', 'invoice', 'billing'];

const json = (status: number, value: unknown, headers?: Record<string, string>): ControlAnswer => ({
  status,
  body: JSON.stringify(value),
  ...(headers ? { headers } : {}),
});

const iso = (ms: number): string => new Date(ms).toISOString();

/** A path under CONTROL_ROOT answered; errors in the API's envelope (`{code, message}`). */
export function controlAnswer(sb: ControlApi, method: string, path: string, query: URLSearchParams, body: string): ControlAnswer {
  const name = path.slice(CONTROL_ROOT.length).replace(/\/$/, '');
  const allowed: Record<string, string> = { '/status': 'GET', '/truth': 'GET', '/versions': 'GET', '/mutate': 'POST' };
  const allow = allowed[name];
  if (!allow)
    return json(404, { code: 5, message: `No control endpoint ${path} (known: ${Object.keys(allowed).join(', ')} under ${CONTROL_ROOT})` });
  if (method !== allow) return json(405, { code: 37, message: `${path} takes ${allow}` }, { allow });
  try {
    switch (name) {
      case '/status':
        return json(200, { sandbox: 'svcsync', url: sb.url, now: iso(sb.now()), organizations: sb.organizations(), history: stats(sb) });
      case '/truth': {
        const { organizationId, family, stream } = target(query);
        const rawAt = query.get('at');
        const at = rawAt === null ? sb.now() : instant(rawAt);
        const records = sb.truthAt(organizationId, family, stream, at);
        return json(200, { organization_id: organizationId, family, stream, at: iso(at), count: records.length, records });
      }
      case '/versions': {
        const { organizationId, family, stream } = target(query);
        const id = required(query, 'id');
        const versions = sb.versions(organizationId, family, stream, id).map((v) => ({
          from: iso(v.from),
          to: v.to === null ? null : iso(v.to),
          change: v.change,
          record: v.record,
        }));
        return json(200, { organization_id: organizationId, family, stream, id, versions });
      }
      default: {
        const opts = mutation(body);
        const summary = sb.mutate(opts);
        return json(200, { at: iso(sb.now()), ...summary });
      }
    }
  } catch (e) {
    if (e instanceof BadControl || e instanceof RangeError) return json(400, { code: 2, message: e.message });
    throw e;
  }
}

function stats(sb: ControlApi): Record<string, unknown> {
  const s = sb.historyStats();
  return { ...s, since: s.since === null ? null : iso(s.since) };
}

function required(query: URLSearchParams, name: string): string {
  const value = query.get(name);
  if (value === null || value === '') throw new BadControl(`The parameter ${name} is required`);
  return value;
}

function target(query: URLSearchParams): { organizationId: string; family: Family; stream: string } {
  const organizationId = required(query, 'organization_id');
  const family = required(query, 'family') as Family;
  if (!FAMILIES.includes(family)) throw new BadControl(`Invalid value passed for family: ${family} (known: ${FAMILIES.join(', ')})`);
  return { organizationId, family, stream: required(query, 'stream') };
}

/**
 * An ISO 8601 instant with its offset (`Z`, `+05:30` or `+0530`), or sandbox ms as digits. A
 * time without an offset is refused: it would be read in the server's own time zone.
 */
function instant(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})$/.exec(text);
  const ms = m ? Date.parse(`${m[1]}${m[2]?.replace(/^([+-]\d{2})(\d{2})$/, '$1:$2')}`) : NaN;
  if (!Number.isFinite(ms))
    throw new BadControl(`Invalid value passed for at: ${text} (an ISO 8601 instant with its offset, or sandbox ms)`);
  return ms;
}

/** The body of POST /_sandbox/mutate: `{modify, create, delete, restore, families, streams, organization_id}`. */
function mutation(body: string): MutateOptions {
  let value: unknown;
  try {
    value = body.trim() === '' ? {} : JSON.parse(body);
  } catch {
    throw new BadControl('The body must be a JSON object such as {"modify": "5%", "delete": 2}');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadControl('The body must be a JSON object');
  const v = value as Record<string, unknown>;
  const known = ['modify', 'create', 'delete', 'restore', 'families', 'streams', 'organization_id'];
  const unknown = Object.keys(v).filter((k) => !known.includes(k));
  if (unknown.length) throw new BadControl(`Unknown field ${unknown.join(', ')} (known: ${known.join(', ')})`);
  const opts: MutateOptions = {};
  for (const k of ['modify', 'create', 'delete', 'restore'] as const) {
    const a = v[k];
    if (a === undefined) continue;
    if (typeof a !== 'number' && typeof a !== 'string') throw new BadControl(`${k} must be a number or a share such as "5%"`);
    opts[k] = a as Amount;
  }
  for (const k of ['families', 'streams'] as const) {
    const list = v[k];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.some((x) => typeof x !== 'string')) throw new BadControl(`${k} must be a list of names`);
    if (k === 'families') opts.families = list as Family[];
    else opts.streams = list as string[];
  }
  const org = v['organization_id'];
  if (org !== undefined) {
    if (typeof org !== 'string' || org === '') throw new BadControl('organization_id must be an organization id, as text');
    opts.organizationId = org;
  }
  return opts;
}
