import { z } from 'zod';
import { FAMILIES } from '../catalog/families.js';

/**
 * How fresh the daemon keeps each stream (docs/daemon.md, "Freshness"): a duration per kind of
 * stream, per family and per stream, in place of cron periods. The daemon decides when each
 * poll is worth its request (src/scheduler/timing/freshness.ts).
 */

const UNITS: Readonly<Record<string, number>> = { m: 1, h: 60, d: 1440 };

/** Minutes from `30m`, `2h`, `1d` or a number of minutes; `off` keeps the stream on its cron schedule. */
export const durationSchema = z.union([z.literal('off'), z.number().positive(), z.string().trim()]).transform((v, ctx) => {
  if (v === 'off' || typeof v === 'number') return v;
  const m = /^(\d+(?:\.\d+)?)\s*([mhd])$/.exec(v);
  if (!m) {
    ctx.addIssue({ code: 'custom', message: `"${v}" is not a duration; expected e.g. 15m, 2h, 1d, a number of minutes, or off` });
    return z.NEVER;
  }
  return Number(m[1]) * UNITS[m[2]!]!;
});

export type Duration = z.output<typeof durationSchema>;

const targetFields = {
  /** Transaction streams (sales orders, contacts, events, …): how stale they may get. */
  transaction: durationSchema.optional(),
  /** Settings and reference streams (users, currencies, plans, …). */
  settings: durationSchema.optional(),
  /** Per family (`books`, `inventory`, `invoice`, `billing`), over the kind's default. */
  families: z.partialRecord(z.enum(FAMILIES), durationSchema).optional(),
  /** Per top-level stream (`family.stream`), over its family's. */
  streams: z.record(z.string(), durationSchema).optional(),
};

export const daemonFreshnessSchema = z
  .object({
    /** Off: every stream keeps to the cron schedules. */
    enabled: z.boolean().default(true),
    ...targetFields,
    /** How often a stream is polled in the hours it does not change. */
    quiet: durationSchema.default(720),
    /** The shortest interval between two polls of a stream, however much budget is spare. */
    min_interval: durationSchema.default(5),
  })
  .strict();

export const connectionFreshnessSchema = z.object(targetFields).strict();

export type DaemonFreshness = z.output<typeof daemonFreshnessSchema>;
export type ConnectionFreshness = z.output<typeof connectionFreshnessSchema>;

export const DEFAULT_TARGETS = { transaction: 30, settings: 1440 } as const;

/**
 * The freshness target of one top-level stream in minutes, or 'off': the stream's own entry,
 * then its family's, then its kind's, the connection's before the daemon's, then the defaults.
 */
export function freshnessTarget(
  daemon: DaemonFreshness,
  connection: ConnectionFreshness | undefined,
  stream: { family: string; name: string; kind: 'transaction' | 'settings' },
): Duration {
  const key = `${stream.family}.${stream.name}`;
  const family = stream.family as (typeof FAMILIES)[number];
  return (
    connection?.streams?.[key] ??
    daemon.streams?.[key] ??
    connection?.families?.[family] ??
    daemon.families?.[family] ??
    connection?.[stream.kind] ??
    daemon[stream.kind] ??
    DEFAULT_TARGETS[stream.kind]
  );
}
