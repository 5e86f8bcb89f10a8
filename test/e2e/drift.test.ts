import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { findStream } from '../../src/catalog/index.js';
import { collectDrift, renderDrift } from '../../src/cli/commands/drift.js';
import { renderStatus } from '../../src/cli/commands/status.js';
import { collectStatus } from '../../src/scheduler/surface/status-document.js';
import { main } from '../../src/cli/main.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, ID_FIELDS, startE2E, type E2E, type Family } from '../helpers/e2e.js';

/**
 * The drift report against a sandbox that sends fields the catalog does not know (variant
 * extraFields: `x_new_field_1..4` on records, `x_new_field_5..8` inside line items):
 * `_svcsync_drift` records each (organization, stream, field) with its JSON type and counts,
 * never a value; a warning names each field once per run; status and `schema --drift` show them.
 */
interface DriftTableRow {
  connection: string;
  organization_id: string;
  stream: string;
  field: string;
  sample_type: string;
  first_seen: string;
  last_seen: string;
  occurrences: number | string;
  last_run_id: string | null;
}

/**
 * The JSON type of a value, written here independently of svcsync's. An integer a double
 * cannot hold arrives as its digits (text), as svcsync reads every such number to keep ids exact.
 */
function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value) && Math.abs(value) < 1e21) return 'string';
  return Array.isArray(value) ? 'array' : typeof value;
}

function elementsOf(items: unknown): Array<Record<string, unknown>> {
  if (Array.isArray(items)) return items as Array<Record<string, unknown>>;
  return items && typeof items === 'object' ? [items as Record<string, unknown>] : [];
}

/** What the truth says each (organization, stream, field) should be: its types and how many records carry it. */
function expectedDrift(e: E2E): Map<string, { types: Set<string>; records: number }> {
  const out = new Map<string, { types: Set<string>; records: number }>();
  const note = (key: string, value: unknown): void => {
    const entry = out.get(key) ?? { types: new Set<string>(), records: 0 };
    entry.types.add(typeOf(value));
    entry.records++;
    out.set(key, entry);
  };
  for (const org of e.sandbox.organizations()) {
    for (const family of Object.keys(ID_FIELDS) as Family[]) {
      for (const stream of Object.keys(ID_FIELDS[family])) {
        if (stream === 'organizations') continue;
        const orgId = org.ids[family];
        for (const rec of e.sandbox.truth(orgId, family, stream)) {
          for (const [k, v] of Object.entries(rec)) if (k.startsWith('x_new_field_')) note(`${orgId}|${family}.${stream}|${k}`, v);
          const fields = new Map<string, unknown>();
          for (const item of elementsOf(rec['line_items']))
            for (const [k, v] of Object.entries(item)) if (k.startsWith('x_new_field_') && !fields.has(k)) fields.set(k, v);
          for (const [k, v] of fields) note(`${orgId}|${family}.${stream}|line_items[].${k}`, v);
        }
      }
    }
  }
  return out;
}

/** `svcsync schema --drift --json` in this process, against the E2E's warehouse: its exit code and stdout. */
async function schemaDrift(e: E2E): Promise<{ code: number; stdout: string }> {
  const path = join(mkdtempSync(join(tmpdir(), 'svcsync-drift-')), 'svcsync.json');
  const { sandbox } = e;
  writeFileSync(
    path,
    JSON.stringify({ warehouse: e.config.warehouse, connections: [{ name: 'e2e', accounts_url: sandbox.url, ...sandbox.credentials }] }),
  );
  let stdout = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  try {
    const code = await main(['node', 'svcsync', '--log-level', 'silent', 'schema', '--drift', '--json', '--config', path]);
    return { code, stdout };
  } finally {
    spy.mockRestore();
  }
}

function driftWarnings(e: E2E, from = 0): Array<Record<string, unknown>> {
  return e.log.records.slice(from).filter((r) => r['level'] === 'warn' && r['drift'] === true);
}

describe.each(DIALECTS)('the drift report, on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('records the unknown fields of a sandbox that sends extra fields, with types and counts and no values', async () => {
    e = await startE2E(dialect, { scale: 12, organizations: 2, variants: { extraFields: true } }, { sync: { per_page: 10 } });
    const first = await e.sync();
    expectExit(first, 0);
    await expectEqualsTruth(e);

    const rows = await e.query<DriftTableRow>('SELECT * FROM _svcsync_drift ORDER BY organization_id, stream, field');
    const expected = expectedDrift(e);
    const got = new Map(rows.map((r) => [`${r.organization_id}|${r.stream}|${r.field}`, r]));
    expect([...got.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, want] of expected) {
      const row = got.get(key)!;
      // The type of the first value seen: a field whose values vary shows one of them.
      expect([...want.types], key).toContain(row.sample_type);
      const stream = findStream(row.stream)!;
      // A record read from its list and its single-record endpoint is seen twice.
      if (stream.detail) expect(Number(row.occurrences), key).toBeGreaterThanOrEqual(want.records);
      else expect(Number(row.occurrences), key).toBe(want.records);
      expect(row.connection).toBe('e2e');
      expect(row.first_seen).toBe(row.last_seen);
    }
    expect(rows.some((r) => r.field.startsWith('line_items[].'))).toBe(true);

    // No value of an extra field reaches the table or the log.
    // Timestamps out first: a wall-clock time such as 21:14:53.255Z holds "3.25".
    const text = (JSON.stringify(rows) + JSON.stringify(driftWarnings(e))).replace(
      /\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:?\d\d)/g,
      '<instant>',
    );
    for (const value of ['beta', 'Ünïcödé', 'nested', 'deep', '3.25']) {
      const at = text.indexOf(value);
      expect(at, `${value} in ${text.slice(Math.max(0, at - 200), at + 200)}`).toBe(-1);
    }

    // One warning per (stream, field) in the run, however many organizations and records carry it.
    const warned = driftWarnings(e).map((w) => `${String(w['stream'])}|${String(w['field'])}`);
    expect(new Set(warned).size).toBe(warned.length);
    expect(new Set(warned)).toEqual(new Set(rows.map((r) => `${r.stream}|${r.field}`)));
    expect(String(driftWarnings(e)[0]!['msg'])).toMatch(/catalog does not know; it is kept in _raw; see svcsync schema --drift/);
    // The summary carries each stream's drift too.
    const summarized = first.organizations.flatMap((o) =>
      o.streams.flatMap((s) => s.drift.map((d) => `${o.organizationId}|${s.stream}|${d.field}`)),
    );
    expect(summarized.sort()).toEqual([...got.keys()].sort());

    // A second run: the fields seen again move last_seen and add to the counts; first_seen stays.
    e.sandbox.advanceClock(60_000);
    const logged = e.log.records.length;
    expectExit(await e.sync(), 0);
    const again = await e.query<DriftTableRow>('SELECT * FROM _svcsync_drift ORDER BY organization_id, stream, field');
    expect(again.length).toBe(rows.length);
    const moved = again.filter((r) => r.last_seen !== got.get(`${r.organization_id}|${r.stream}|${r.field}`)!.last_seen);
    expect(moved.length).toBeGreaterThan(0);
    for (const r of moved) {
      const before = got.get(`${r.organization_id}|${r.stream}|${r.field}`)!;
      expect(r.first_seen).toBe(before.first_seen);
      expect(Date.parse(r.last_seen)).toBeGreaterThan(Date.parse(before.last_seen));
      expect(Number(r.occurrences)).toBeGreaterThan(Number(before.occurrences));
    }
    const warnedAgain = driftWarnings(e, logged).map((w) => `${String(w['stream'])}|${String(w['field'])}`);
    expect(new Set(warnedAgain).size).toBe(warnedAgain.length);
    expect(new Set(warnedAgain)).toEqual(new Set(moved.map((r) => `${r.stream}|${r.field}`)));

    // svcsync schema --drift and svcsync status show them.
    const fields = await collectDrift(e.warehouse);
    expect(fields.length).toBe(again.length);
    const listing = renderDrift(fields);
    expect(listing).toContain(`${again.length} fields the API sent that the catalog does not know`);
    for (const r of again)
      expect(listing).toMatch(new RegExp(`${r.field.replace(/[[\].]/g, '\\$&')}\\s+${r.sample_type}\\s+${Number(r.occurrences)} times`));
    const cli = await schemaDrift(e);
    expect(cli.code).toBe(0);
    expect((JSON.parse(cli.stdout) as { fields: unknown }).fields).toEqual(fields);
    const status = renderStatus(await collectStatus(e.config, e.warehouse, e.sandbox.clock.now()));
    const streamsWithDrift = new Set(again.map((r) => `${r.organization_id}|${r.stream}`));
    expect(status.match(/drift: \d+ fields? the catalog does not know/g)?.length).toBe(streamsWithDrift.size);
  }, 180_000);

  it('a sandbox that sends only known fields leaves the drift table empty and warns of none', async () => {
    e = await startE2E(dialect, { scale: 8, organizations: 1 });
    expectExit(await e.sync(), 0);
    expect(await e.query('SELECT * FROM _svcsync_drift')).toEqual([]);
    expect(driftWarnings(e)).toEqual([]);
    expect(renderDrift(await collectDrift(e.warehouse))).toMatch(/^No drift/);
  }, 120_000);
});
