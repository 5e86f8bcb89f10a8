import type { Plan } from './plans.js';
import type { Config } from './schema.js';

/**
 * The slow cycles' lengths when the configuration sets none, per plan (spec 8's daily quota).
 * Re-reading every parent's child lists costs a request per parent: for an organization of
 * 2,000 contacts and 1,000 books vendor credits that is 6,000 requests, which the free plan's 900
 * a day can only pay as a small share a day over a month. Paid plans re-read within a week; the
 * trees read whole (a project's tasks, which nothing marks as changed) within three days on the
 * free plan and on every run on the others.
 */
const CYCLES: Readonly<Record<Plan, { children: number; wholeRead: number }>> = {
  free: { children: 30, wholeRead: 3 },
  standard: { children: 14, wholeRead: 0 },
  professional: { children: 7, wholeRead: 0 },
  premium: { children: 7, wholeRead: 0 },
  elite: { children: 7, wholeRead: 0 },
  ultimate: { children: 7, wholeRead: 0 },
  enterprise: { children: 7, wholeRead: 0 },
};

/** Days over which a reconcile re-reads every parent's child lists (`sync.reconcile_children_every_days`). */
export function childrenCycleDays(config: Pick<Config, 'sync'>, plan: Plan): number {
  return config.sync.reconcile_children_every_days ?? CYCLES[plan].children;
}

/** Days over which a tree read whole re-reads every parent's child lists (`sync.whole_read_every_days`). */
export function wholeReadCycleDays(config: Pick<Config, 'sync'>, plan: Plan): number {
  return config.sync.whole_read_every_days ?? CYCLES[plan].wholeRead;
}
