import { Command } from 'commander';
import { queueLine } from '../../scheduler/queue-depth.js';
import { collectStatusDocument, type StatusConnection, type StatusOrganization } from '../../scheduler/status-document.js';
import { loadRuntime, withWarehouse, type Cli } from '../runtime.js';
import { jsonOutput } from '../json-output.js';
import { shortcutLine } from '../summary.js';

/** One line per configured connection (failing first, with the error and the hint), as `svcsync status` prints them. */
export function renderConnections(connections: readonly StatusConnection[]): string[] {
  const lines: string[] = [];
  for (const c of connections) {
    const a = c.authorization;
    const orgs = `${c.organizations} organization${c.organizations === 1 ? '' : 's'}`;
    if (c.state === 'failing') {
      const since = a?.failingSince ? ` since ${a.failingSince}` : '';
      lines.push(`connection ${c.connection}: FAILING — cannot authorize${since}; nothing of it syncs (${orgs})`);
      lines.push(`  ${a?.error ?? 'the service refused its token'}`);
      if (a?.hint) lines.push(`  → ${a.hint}`);
    } else if (c.state === 'ok') lines.push(`connection ${c.connection}: ok — authorized ${a!.at} (${orgs})`);
    else lines.push(`connection ${c.connection}: not checked yet — no run has used its token (${orgs})`);
  }
  return lines;
}

export function renderStatus(orgs: readonly StatusOrganization[], connections: readonly StatusConnection[] = []): string {
  const lines = renderConnections(connections);
  if (orgs.length === 0) {
    lines.push('Nothing synced yet: run `svcsync sync` (or `svcsync check` to see what the connections reach).');
    return lines.join('\n') + '\n';
  }
  if (lines.length) lines.push('');
  for (const o of orgs) {
    const blocked = o.blockedUntil ? `, quota spent: paused until ${o.blockedUntil}` : '';
    const name = o.name ? ` (${o.name})` : '';
    const projected = o.projectedToday
      ? `, about ${o.projectedToday.requests} by the end of the day${o.projectedToday.fits ? '' : ' (over the budget)'}`
      : '';
    lines.push(
      `${o.connection} / ${o.organizationId}${name} — ${o.families.join(', ')}; ` +
        `requests today ${o.requestsToday} of ${o.budget}, ${o.budgetLeft} left${projected}${blocked}`,
    );
    if (o.state !== 'ok' || o.stateReason) lines.push(`  ${o.state}${o.stateReason ? `: ${o.stateReason}` : ''}`);
    if (o.nextRuns.length) lines.push(`  next runs: ${o.nextRuns.map((r) => `${r.job} ${r.at}`).join('; ')}`);
    for (const r of o.shortcuts ?? [])
      lines.push(`  ⚠ ${shortcutLine(r)} since ${r.refutedAt}: about ${r.extraRequestsPerDay} more requests a day`);
    for (const s of o.streams) {
      const last = s.lastStatus ? `${s.lastStatus} ${s.lastFinishedAt ?? ''}` : 'never run';
      const history = s.history ? `history ${s.history.on ? 'on' : 'off'}, ${s.history.versions} versions` : null;
      const extra = [s.inProgress, s.pending ? `${s.pending} pending` : null, s.deleted ? `${s.deleted} deleted` : null, history]
        .filter(Boolean)
        .join(', ');
      const notes = extra ? `  (${extra})` : '';
      lines.push(`  ${s.stream.padEnd(36)} ${String(s.rows).padStart(8)} rows  cursor ${s.cursor ?? '—'}  last ${last}${notes}`);
      if (s.lastError && s.lastStatus !== 'ok') lines.push(`      ${s.lastError.split('\n')[0]}`);
      if (s.drift.length) lines.push(`      ${driftLine(s.drift)}`);
    }
  }
  return lines.join('\n') + '\n';
}

const DRIFT_NAMED = 3;

/** A stream's unknown fields in one line: how many, the first few, and where to see them all. */
export function driftLine(fields: readonly string[]): string {
  const named = fields.slice(0, DRIFT_NAMED).join(', ') + (fields.length > DRIFT_NAMED ? ', …' : '');
  const count = `${fields.length} field${fields.length === 1 ? '' : 's'}`;
  return `drift: ${count} the catalog does not know (${named}); see svcsync schema --drift`;
}

export function statusCommand(cli: Cli): Command {
  return new Command('status')
    .description(
      'show each connection (whether it can authorize) and per organization and stream: ' +
        'state, cursor, last run, rows, requests used today of the budget',
    )
    .option('--json', 'as JSON')
    .action(async (flags: { json?: boolean }) => {
      const rt = loadRuntime(cli.global());
      const doc = await withWarehouse(rt, (w) => collectStatusDocument(rt.config, w, rt.clock.now()));
      if (flags.json) process.stdout.write(jsonOutput(doc));
      else
        process.stdout.write(
          renderStatus(doc.organizations, doc.connections) + (doc.queue ? `${queueLine(doc.queue.schema, doc.queue)}\n` : ''),
        );
    });
}
