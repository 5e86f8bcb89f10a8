import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG, qualifiedName, type StreamSpec } from '../../src/catalog/index.js';
import { normalizeRecord } from '../../src/normalize/normalize.js';
import { streamPlan } from '../../src/normalize/plan.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';

// Every row starts as a copy of its plan's template (src/normalize/plan.ts, `rowTemplate`): a
// column written that the template lacks would turn rows back into slow dictionaries, and a
// template column never written would add a null the row did not have. So each row's columns
// are exactly its table's, for every stream, source and child table, on generated records.
describe('rows hold exactly their plan columns', () => {
  let sandbox: Sandbox;
  let childRowsChecked = 0;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 3, scale: 4, organizations: 1 });
  });
  afterAll(async () => sandbox?.stop());

  const sources = (s: StreamSpec): Array<'list' | 'detail'> => (s.detail ? ['list', 'detail'] : ['list']);

  it.each(CATALOG.map((s) => [qualifiedName(s), s] as const))('%s', (_name, stream) => {
    const org = sandbox.organizations()[0]!.organization_id;
    const records = sandbox.truth(org, stream.family, stream.name);
    expect(records.length).toBeGreaterThan(0);
    for (const source of sources(stream)) {
      const plan = streamPlan(stream, source);
      for (const record of records) {
        const n = normalizeRecord(stream, record, { organizationId: org, source, syncedAt: '2026-11-26T10:00:00.000Z', parentId: 'P1' });
        expect(Object.keys(n.row).sort()).toEqual([...plan.columns].sort());
        for (const child of n.children) {
          for (const row of child.rows) expect(Object.keys(row).sort()).toEqual([...child.columns].sort());
          childRowsChecked += child.rows.length;
        }
      }
    }
  });

  it('checked child rows too', () => {
    expect(childRowsChecked).toBeGreaterThan(50);
  });
});
