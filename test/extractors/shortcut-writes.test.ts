import { describe, expect, it, vi } from 'vitest';
import type { ShortcutRow } from '../../src/state/tables.js';

/** The verdict rows as the warehouse holds them, written by the mocked saveVerdict in the order writes land. */
const stored = new Map<string, ShortcutRow>();
let calls = 0;

vi.mock('../../src/state/shortcut-verdicts.js', () => ({
  loadVerdicts: () => Promise.resolve([]),
  allVerdicts: () => Promise.resolve([]),
  // The first write is slow (a busy pool connection): with writes side by side, the later ones land first.
  saveVerdict: async (_db: unknown, row: ShortcutRow) => {
    const slow = calls++ === 0;
    for (let i = 0; slow && i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    stored.set(`${row.shortcut}/${row.stream}`, { ...row });
  },
}));

const { OrgShortcuts } = await import('../../src/extractors/shortcuts.js');
const { parseConfig } = await import('../../src/config/load.js');
const { silentLogger } = await import('../../src/core/logger.js');

describe('OrgShortcuts: verdicts of checks judged side by side', () => {
  it('three checks that agree at once leave three checks in the warehouse, not the first to be counted', async () => {
    const config = parseConfig({ connections: [{ name: 'c', client_id: 'id', client_secret: 's', refresh_token: 'r' }] }, { env: {} });
    const book = await OrgShortcuts.load({} as never, config, {
      connection: 'c',
      organizationId: '1',
      now: () => 0,
      logger: silentLogger(),
    });
    const stream = 'inventory.contact_persons';
    await Promise.all([1, 2, 3].map(() => book.agreed('child_changes_touch_parent', stream)));
    expect(stored.get(`child_changes_touch_parent/${stream}`)).toMatchObject({ state: 'trusted', checks: 3 });
  });
});
