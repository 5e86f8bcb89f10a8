import type { ShortcutNote } from '../extractors/shortcuts.js';
import type { SyncSummary } from '../extractors/sync-run.js';

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}
function lpad(s: string, n: number): string {
  return s.length >= n ? s : ' '.repeat(n - s.length) + s;
}

function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** An organization's mark by status: done, paused for the quota, left to the process that owns it, else failed. */
const MARKS: Partial<Record<SyncSummary['organizations'][number]['status'], string>> = { ok: '✓', quota: '⏸', busy: '↷', stopped: '⏹' };

/**
 * How a summary tells time. A run on svcsync's own clock needs nothing; the demo runs on the
 * sandbox's clock, 60 times faster than the wall's, and tells what a user waits in wall time.
 */
export interface SummaryTime {
  /** How long the run took on the wall clock; by default the run's own finish less its start. */
  elapsedMs?: number;
  /** An instant of the run's clock (a quota reset, when a spent quota lets it continue) in words; by default as it is. */
  instant?: (iso: string) => string;
}

/** The one-screen summary every run ends with. */
export function renderSummary(summary: SyncSummary, time: SummaryTime = {}): string {
  const lines: string[] = [];
  const elapsed = time.elapsedMs ?? Date.parse(summary.finishedAt) - Date.parse(summary.startedAt);
  const at = time.instant ?? ((iso: string): string => iso);
  lines.push(`svcsync ${summary.command} — run ${summary.runId}, ${duration(elapsed)}, ${summary.requests} API requests`);
  // A warehouse fault is told once, with what to do; each organization it stopped says so in one line.
  if (summary.stopped)
    lines.push(`  ⏹ stopped (${summary.stopped}): what is below was committed; run the same command again to continue where it stopped`);
  if (summary.warehouseFault) lines.push(`  ✗ warehouse: ${summary.warehouseFault.split('\n').join('\n    ')}`);
  for (const f of summary.connectionFailures) lines.push(`  ✗ connection ${f.connection}: ${f.error}`);
  for (const f of summary.skippedFamilies) lines.push(`  ✗ connection ${f.connection}: ${f.error}`);
  for (const org of summary.organizations) {
    const mark = MARKS[org.status] ?? '✗';
    const totals = org.streams.reduce(
      (a, s) => ({ written: a.written + s.written, records: a.records + s.records, deleted: a.deleted + s.deleted }),
      { written: 0, records: 0, deleted: 0 },
    );
    lines.push(
      `  ${mark} ${org.connection} / organization ${org.organizationId} (${org.families.join(', ')}): ${org.status}, ` +
        `${totals.records} records, ${totals.written} written, ${totals.deleted} marked deleted`,
    );
    const notable = org.streams.filter((s) => s.records > 0 || s.requests > 0 || s.status !== 'ok');
    for (const s of notable) {
      const status = s.status === 'ok' ? '' : `  ${s.status}${s.error ? `: ${s.error.split('\n')[0]}` : ''}`;
      // Records of the stream, rows changed, then what it cost: records received (a record's
      // single-record read is a second) and requests.
      lines.push(
        `      ${pad(s.stream, 36)} ${lpad(String(s.records), 8)} records ${lpad(String(s.written), 8)} written ` +
          `${lpad(String(s.reads), 8)} reads ${lpad(String(s.requests), 6)} req${status}`,
      );
      // Rows marked deleted, by table: a deleted order's lines are rows too.
      if (s.deleted > 0) lines.push(`          ${s.deleted} rows marked deleted: ${deletedByTable(s.deletedTables)}`);
      // Data-shape warnings: one line per field and kind, however many records had it.
      for (const w of s.warnings ?? []) {
        lines.push(`          ⚠ ${w.count} × ${w.field}: ${w.message} (e.g. record ${w.example})`);
      }
    }
    // A shortcut found wrong is told once, in the run that found it; `svcsync status` keeps showing it.
    for (const n of org.shortcuts ?? []) lines.push(`      ⚠ ${shortcutLine(n)}`);
    if (org.status === 'quota' && org.resumeAt)
      lines.push(`      daily quota spent: continues after ${at(org.resumeAt)} (run the same command again then; nothing is lost)`);
    else if (org.error && org.status !== 'ok' && org.failure === 'warehouse' && summary.warehouseFault)
      lines.push(`      ${org.error.split('\n')[0]}`);
    else if (org.error && org.status !== 'ok') lines.push(`      ${org.error.split('\n').join('\n      ')}`);
  }
  if (summary.usage.length) {
    lines.push("  Requests today (per organization, against svcsync's budget = daily quota less the reserve):");
    for (const u of summary.usage) {
      const blocked = u.blockedUntil ? `, paused until ${at(u.blockedUntil)}` : '';
      lines.push(
        `      ${pad(u.organizationId, 24)} ${u.usedToday} of ${u.budget} (plan quota ${u.perDay}), resets ${at(u.nextReset)}${blocked}`,
      );
    }
  }
  if (summary.unrecorded)
    lines.push(`  ⚠ the run's end could not be recorded in _svcsync_runs (the next run closes it): ${summary.unrecorded.split('\n')[0]}`);
  const codes: Record<number, string> = {
    0: 'success',
    1: 'failed',
    2: 'configuration error',
    3: 'authorization error',
    4: 'partial: some work is left for the next run',
  };
  lines.push(`  Result: ${codes[summary.exitCode] ?? summary.exitCode} (exit ${summary.exitCode})`);
  return lines.join('\n') + '\n';
}

/** `inventory_sales_orders 3, inventory_sales_orders__line_items 13`, largest first. */
function deletedByTable(tables: Readonly<Record<string, number>> | undefined): string {
  return Object.entries(tables ?? {})
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([table, rows]) => `${table} ${rows}`)
    .join(', ');
}

/** One refuted shortcut, in words. */
export function shortcutLine(n: ShortcutNote): string {
  return `${n.assumption} does not hold for ${n.stream} (${n.evidence}); svcsync now reads ${n.longWay}`;
}
