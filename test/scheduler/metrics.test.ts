import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveDaemonHttp } from '../../src/cli/commands/daemon.js';
import { serveWorkerHttp } from '../../src/cli/http-port.js';
import type { Config } from '../../src/config/schema.js';
import { createLogger } from '../../src/core/logger.js';
import { openWarehouse } from '../../src/loaders/warehouse.js';
import { Daemon } from '../../src/scheduler/daemon.js';
import { Worker } from '../../src/scheduler/worker.js';
import { startE2E } from '../helpers/e2e.js';

/**
 * The metric names a PromQL expression reads, without a PromQL engine: strings, label matchers,
 * ranges and grouping clauses are cut out, and what is left that names something and is not
 * called (a function or an aggregation) nor a keyword is a metric.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const keywords = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'by', 'without', 'on', 'ignoring']);
  const out = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w:.$])[a-zA-Z_:][\w:]*/g)) {
    const rest = stripped.slice(m.index + m[0].length);
    if (/^\s*\(/.test(rest) || keywords.has(m[0].toLowerCase())) continue;
    out.add(m[0]);
  }
  return [...out];
}

/** The names /metrics declares (`# TYPE`), with the series a histogram or summary adds. */
function servedNames(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    out.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(name + s);
  }
  return out;
}

interface Dashboard {
  panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
  templating: { list: Array<{ name: string; query: { query: string } | string }> };
}

/** Every expression the shipped dashboard and alert rules hold, each with where it comes from. */
function shippedExpressions(): Array<{ where: string; expr: string }> {
  const dashboard = JSON.parse(readFileSync(resolve('docs/grafana/svcsync-dashboard.json'), 'utf8')) as Dashboard;
  const alerts = parseYaml(readFileSync(resolve('docs/alerts.yaml'), 'utf8')) as {
    groups: Array<{ name: string; rules: Array<{ alert?: string; record?: string; expr: string }> }>;
  };
  const out: Array<{ where: string; expr: string }> = [];
  for (const p of dashboard.panels) for (const t of p.targets ?? []) out.push({ where: `dashboard panel "${p.title}"`, expr: t.expr });
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === 'string' ? v.query : v.query.query;
    // label_values(metric, label): the metric is the first argument.
    const m = /^label_values\(\s*([^,]+),/.exec(q);
    out.push({ where: `dashboard variable $${v.name}`, expr: m ? m[1]! : q });
  }
  for (const g of alerts.groups) for (const r of g.rules) out.push({ where: `alert ${r.alert ?? r.record}`, expr: r.expr });
  return out;
}

describe('metricNames', () => {
  it.each([
    ['svcsync_quota_used', ['svcsync_quota_used']],
    ['max by (connection) (svcsync_connection_authorized) == 0', ['svcsync_connection_authorized']],
    [
      'sum by (le, job_class) (rate(svcsync_job_duration_seconds_bucket{connection=~"$connection"}[$__rate_interval]))',
      ['svcsync_job_duration_seconds_bucket'],
    ],
    ['max by (a) (time() - x_seconds) > on (a, b) max by (a) (3 * y_seconds + 60) unless z offset 5m', ['x_seconds', 'y_seconds', 'z']],
    ['absent(svcsync_build_info{job="svcsync"})', ['svcsync_build_info']],
    ['topk(25, a / on (o) group_left (x) b) or vector(0)', ['a', 'b']],
    ['min_over_time(a[15m:1m]) >= bool b', ['a', 'b']],
  ])('%s', (expr, names) => {
    expect(metricNames(expr)).toEqual(names);
  });
});

describe('metrics the daemon and workers serve', () => {
  const servedBy: Record<string, Set<string>> = {};
  const cleanups: Array<() => Promise<void>> = [];
  let quotaText = '';
  let orgs: string[] = [];

  beforeAll(async () => {
    // A daemon on SQLite that has run nothing yet: the organizations are known from an earlier sync.
    const e = await startE2E('sqlite', { scale: 4, organizations: 3, timeScale: 1 }, { connection: { families: ['inventory'] } });
    cleanups.push(() => e.close());
    expect((await e.sync()).exitCode).toBe(0);
    orgs = e.sandbox.organizations().map((o) => o.organization_id);
    const config: Config = { ...e.config, daemon: { ...e.config.daemon, schedules: { incremental: '0 3 * * *', settings: '0 4 * * *' } } };
    const daemon = new Daemon({
      config,
      warehouse: e.warehouse,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'silent', secrets: e.secrets }),
      secrets: e.secrets,
    });
    await daemon.start();
    cleanups.push(() => daemon.stop(1_000));
    const http = await serveDaemonHttp(daemon, config, e.warehouse, e.sandbox.clock, { port: 0 });
    cleanups.push(() => http.close());
    expect(daemon.runner.limiters.peek(orgs[0]!)).toBeUndefined();
    quotaText = await (await fetch(`${http.url}/metrics`)).text();
    servedBy['daemon'] = servedNames(quotaText);

    // A worker on Postgres: its queue gauges.
    const p = await startE2E('postgres', { scale: 4, organizations: 1, timeScale: 1 }, { connection: { families: ['inventory'] } });
    cleanups.push(() => p.close());
    const schema = `t_${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_pgboss_${randomBytes(4).toString('hex')}`;
    const workerConfig: Config = { ...p.config, worker: { schema, concurrency: 1, slice_minutes: 10 } };
    const warehouse = await openWarehouse(workerConfig.warehouse.url, { poolSize: 4 });
    cleanups.push(() => warehouse.close());
    const worker = new Worker({
      config: workerConfig,
      warehouse,
      clock: p.sandbox.clock,
      logger: createLogger({ level: 'silent', secrets: p.secrets }),
      secrets: p.secrets,
      schedule: false,
    });
    await worker.start();
    cleanups.push(() => worker.stop(1_000));
    const workerHttp = await serveWorkerHttp(worker, workerConfig, warehouse, p.sandbox.clock, { port: 0 });
    cleanups.push(() => workerHttp.close());
    servedBy['worker'] = servedNames(await (await fetch(`${workerHttp.url}/metrics`)).text());
  }, 120_000);

  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('quota gauges exist from start-up for every organization, before any job of it ran', () => {
    for (const org of orgs) {
      expect(quotaText).toMatch(new RegExp(`^svcsync_quota_used\\{organization="${org}"\\} \\d+$`, 'm'));
      expect(quotaText).toMatch(new RegExp(`^svcsync_quota_budget\\{organization="${org}"\\} 900$`, 'm'));
      expect(quotaText).toMatch(new RegExp(`^svcsync_quota_left\\{organization="${org}"\\} \\d+$`, 'm'));
      expect(quotaText).toMatch(new RegExp(`^svcsync_quota_blocked_until_seconds\\{organization="${org}"\\} 0$`, 'm'));
      // Each stream's schedule, for the freshness alert.
      const labels = `connection="e2e",organization="${org}",stream="inventory\\.sales_orders"`;
      expect(quotaText).toMatch(new RegExp(`^svcsync_stream_schedule_interval_seconds\\{${labels}\\} 86400$`, 'm'));
    }
  });

  it('every metric the Grafana dashboard and the alert rules read is served on /metrics', () => {
    const served = new Set([...servedBy['daemon']!, ...servedBy['worker']!]);
    expect(served.has('svcsync_queue_jobs')).toBe(true);
    const exprs = shippedExpressions();
    expect(exprs.length).toBeGreaterThan(20);
    const unknown = exprs.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((n) => !served.has(n))
        .map((n) => `${where}: ${n}`),
    );
    expect(unknown).toEqual([]);
    // The documented freshness alert reads the last success against the schedule, not the cursor's age.
    const alertNames = exprs.filter((x) => x.where.startsWith('alert')).flatMap((x) => metricNames(x.expr));
    expect(alertNames).toContain('svcsync_stream_last_success_timestamp_seconds');
    expect(alertNames).not.toContain('svcsync_cursor_lag_seconds');
  });

  it('every alert rule has a name, a duration, a severity and a summary', () => {
    const alerts = parseYaml(readFileSync(resolve('docs/alerts.yaml'), 'utf8')) as {
      groups: Array<{ rules: Array<Record<string, unknown>> }>;
    };
    for (const r of alerts.groups.flatMap((g) => g.rules)) {
      expect(r['alert'], JSON.stringify(r)).toMatch(/^Svcsync[A-Za-z]+$/);
      expect(r['for'], String(r['alert'])).toMatch(/^\d+[smh]$/);
      expect((r['labels'] as Record<string, string>)['severity']).toMatch(/^(critical|warning|info)$/);
      expect((r['annotations'] as Record<string, string>)['summary']).toBeTruthy();
    }
  });
});
