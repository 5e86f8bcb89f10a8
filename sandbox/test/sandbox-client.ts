/** Test helper: a started sandbox with a fresh access token and small fetch wrappers. */
import { startSandbox, type Family, type Sandbox, type SandboxOptions } from '../index.js';

export interface Harness {
  sb: Sandbox;
  token: string;
  orgs: ReturnType<Sandbox['organizations']>;
  /** GET with the token (org null: none sent) and the organization identified the way the family wants it. */
  get(family: Family, path: string, org?: string | null, extraHeaders?: Record<string, string>): Promise<Response>;
  json(family: Family, path: string, org?: string): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Every record of a list across all its pages. */
  all(family: Family, path: string, key: string, org?: string): Promise<Array<Record<string, unknown>>>;
  refresh(): Promise<string>;
}

export const ROOT: Record<Family, string> = {
  books: '/books/v3',
  inventory: '/inventory/v1',
  invoice: '/invoice/v3',
  billing: '/billing/v1',
};

export async function tokenFor(sb: Sandbox): Promise<string> {
  const res = await fetch(`${sb.accountsUrl}/oauth/v2/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'refresh_token', ...sb.credentials }),
  });
  const body = (await res.json()) as { access_token: string };
  return body.access_token;
}

export function orgRequest(
  sb: Sandbox,
  family: Family,
  path: string,
  org: string | undefined,
  token: string,
  extra: Record<string, string> = {},
): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Svc-oauthtoken ${token}`, ...extra };
  let url = `${sb.url}${ROOT[family]}${path}`;
  if (org !== undefined) {
    if (family === 'invoice') headers['X-com-svc-invoice-organizationid'] = org;
    else if (family === 'billing') headers['X-com-svc-subscriptions-organizationid'] = org;
    else url += `${path.includes('?') ? '&' : '?'}organization_id=${org}`;
  }
  return fetch(url, { headers });
}

export async function harness(options: SandboxOptions = {}): Promise<Harness> {
  const sb = await startSandbox(options);
  const h: Harness = {
    sb,
    token: await tokenFor(sb),
    orgs: sb.organizations(),
    get: (family, path, org = h.orgs[0]?.organization_id, extra) => orgRequest(sb, family, path, org ?? undefined, h.token, extra),
    async json(family, path, org) {
      const res = await h.get(family, path, org);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async all(family, path, key, org) {
      const out: Array<Record<string, unknown>> = [];
      for (let page = 1; ; page++) {
        const sep = path.includes('?') ? '&' : '?';
        const { status, body } = await h.json(family, `${path}${sep}page=${page}&per_page=200`, org);
        if (status !== 200) throw new Error(`${path} page ${page}: ${status} ${JSON.stringify(body)}`);
        out.push(...(body[key] as Array<Record<string, unknown>>));
        if (!(body['page_context'] as { has_more_page: boolean }).has_more_page) return out;
      }
    },
    async refresh() {
      h.token = await tokenFor(sb);
      return h.token;
    },
  };
  return h;
}

/** `2026-11-20T10:15:30+0530` → epoch ms. */
export function instant(ts: unknown): number {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})([+-])(\d{2})(\d{2})$/.exec(String(ts));
  if (!m) throw new Error(`not a spec timestamp: ${String(ts)}`);
  const offset = (Number(m[3]) * 60 + Number(m[4])) * (m[2] === '-' ? -1 : 1);
  return Date.parse(`${m[1]}Z`) - offset * 60_000;
}
