import { describe, expect, it } from 'vitest';
import { projectEndOfDay } from '../../src/scheduler/planning/day-projection.js';

describe('projectEndOfDay: requests used by the end of the quota day', () => {
  it.each([
    ['nothing more planned', 120, [], 900, false, 120, true],
    ['an incremental job every quarter hour, 40 fires left at ~14', 300, [{ estimate: 14, fires: 40 }], 900, false, 860, true],
    [
      'incremental and settings jobs',
      300,
      [
        { estimate: 14, fires: 40 },
        { estimate: 4, fires: 10 },
      ],
      900,
      false,
      900,
      true,
    ],
    [
      'one request over the budget does not fit',
      301,
      [
        { estimate: 14, fires: 40 },
        { estimate: 4, fires: 10 },
      ],
      900,
      false,
      901,
      false,
    ],
    // The free plan's cron recipe of old: 61 requests a run, every quarter hour from midnight.
    ['61 requests × 96 fires on the free plan', 0, [{ estimate: 61, fires: 96 }], 900, false, 5856, false],
    ['the quota is spent: nothing more runs today', 900, [{ estimate: 14, fires: 40 }], 900, true, 900, true],
    ['a job with no fires left adds nothing', 10, [{ estimate: 500, fires: 0 }], 900, false, 10, true],
    ['already over the budget (other integrations)', 950, [], 900, false, 950, false],
  ] as const)('%s', (_n, used, remaining, budget, blocked, requests, fits) => {
    expect(projectEndOfDay(used, remaining, budget, blocked)).toEqual({ requests, fits });
  });
});
