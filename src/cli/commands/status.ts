import { Command } from 'commander';
import { TokenCacheRegistry } from '../../api/client.js';
import { ExitCode, SvcsyncError, worseExitCode } from '../../core/errors.js';
import { migrateToLatest } from '../../loaders/migrate.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { streamFailed } from '../../scheduler/surface/health.js';
import { queueLine } from '../../scheduler/surface/queue-depth.js';
import {
  collectStatusDocument,
  type StatusConnection,
  type StatusDocument,
  type StatusOrganization,
} from '../../scheduler/surface/status-document.js';
import { recordAuthorization } from '../../state/connection-auth.js';
import { loginExitCode, loginLines, tryLogin, type LoginOutcome } from '../login-check.js';
import { loadRuntime, withWarehouse, type Cli, type Runtime } from '../runtime.js';
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

/** A connection's login as `status --check` tried it now. */
export interface LoginCheck {
  connection: string;
  /** `ok` (a token was issued), `refused` (the authorization server refused the credentials), `failed` (no answer to go by). */
  result: LoginOutcome['result'];
  error: string | null;
  hint: string | null;
}

/**
 * Tries each configured connection's login now (a token request each; no API data request)
 * and records a verdict in `_svcsync_connections`, as a run does, so the document read next
 * (and the status page) shows it. A login that got no answer records nothing.
 */
async function checkLogins(rt: Runtime, warehouse: Warehouse): Promise<Array<LoginCheck & { exitCode: ExitCode; lines: string[] }>> {
  await migrateToLatest(warehouse);
  const registry = new TokenCacheRegistry({
    clock: rt.clock,
    secrets: rt.secrets,
    logger: rt.logger,
    regions: rt.config.regions,
    timeoutMs: rt.config.sync.request_timeout_ms,
  });
  const out: Array<LoginCheck & { exitCode: ExitCode; lines: string[] }> = [];
  for (const [index, connection] of rt.config.connections.entries()) {
    const outcome = await tryLogin(registry.for(connection, index));
    const failure = outcome.result === 'ok' ? null : outcome.error;
    const hint = failure instanceof SvcsyncError ? (failure.hint ?? null) : null;
    let error: string | null = null;
    if (failure !== null) error = failure instanceof Error ? failure.message : 'the login failed';
    if (outcome.result !== 'failed')
      await recordAuthorization(warehouse.db, { connection: connection.name, result: outcome.result, at: rt.clock.now(), error, hint });
    out.push({
      connection: connection.name,
      result: outcome.result,
      error,
      hint,
      exitCode: loginExitCode(outcome),
      lines: loginLines(outcome),
    });
  }
  return out;
}

/**
 * `svcsync status`'s exit code, for cron and monitoring, and why: 3 when a configured
 * connection's last login was refused, 4 when a stream's last run failed (or stopped at the
 * daily quota), what a login `--check` could not try means (1 no answer, 2 configuration), else 0.
 */
export function statusVerdict(
  doc: Pick<StatusDocument, 'connections' | 'organizations'>,
  configured: readonly string[],
  logins: ReadonlyArray<Pick<LoginCheck, 'connection' | 'result'> & { exitCode: ExitCode }> = [],
): { code: ExitCode; reasons: string[] } {
  const ours = new Set(configured);
  const refused = doc.connections.filter((c) => ours.has(c.connection) && c.state === 'failing').map((c) => c.connection);
  const failed = doc.organizations.filter((o) => ours.has(o.connection)).flatMap((o) => o.streams.filter(streamFailed));
  const untried = logins.filter((l) => l.result === 'failed');
  let code: ExitCode = ExitCode.ok;
  const reasons: string[] = [];
  if (refused.length) {
    code = ExitCode.authorization;
    reasons.push(`${refused.length} connection(s) cannot log in (${refused.join(', ')})`);
  }
  if (failed.length) {
    code = worseExitCode(code, ExitCode.partial);
    reasons.push(`${failed.length} stream(s) failed their last run`);
  }
  for (const l of untried) code = worseExitCode(code, l.exitCode);
  if (untried.length) reasons.push(`the login of ${untried.map((l) => l.connection).join(', ')} could not be tried`);
  return { code, reasons };
}

export function statusCommand(cli: Cli): Command {
  return new Command('status')
    .description(
      'show each connection (whether it can authorize) and per organization and stream: ' +
        'state, cursor, last run, rows, requests used today of the budget; exit 3 when a connection cannot log in, ' +
        "4 when a stream's last run failed",
    )
    .option('--check', "also try each connection's login now (a token request each, no API data request) and record the result")
    .option('--json', 'as JSON')
    .action(async (flags: { json?: boolean; check?: boolean }) => {
      const rt = loadRuntime(cli.global());
      const { doc, logins } = await withWarehouse(rt, async (w) => {
        const tried = flags.check ? await checkLogins(rt, w) : null;
        return { doc: await collectStatusDocument(rt.config, w, rt.clock.now()), logins: tried };
      });
      const { code, reasons } = statusVerdict(
        doc,
        rt.config.connections.map((c) => c.name),
        logins ?? [],
      );
      if (flags.json) {
        const loginCheck = logins?.map(({ connection, result, error, hint }) => ({ connection, result, error, hint }));
        process.stdout.write(jsonOutput(loginCheck ? { ...doc, loginCheck } : doc));
      } else {
        const tried = logins
          ? [
              'Login now (--check):',
              ...logins.flatMap((l) => [`  ${l.connection}: ${l.lines[0]!}`, ...l.lines.slice(1).map((x) => `  ${x}`)]),
              '',
            ]
          : [];
        process.stdout.write(
          (tried.length ? `${tried.join('\n')}\n` : '') +
            renderStatus(doc.organizations, doc.connections) +
            (doc.queue ? `${queueLine(doc.queue.schema, doc.queue)}\n` : '') +
            `Result: ${reasons.length ? reasons.join('; ') : 'no connection refused, no stream failed its last run'} (exit ${code})\n`,
        );
      }
      cli.exit(code);
    });
}
