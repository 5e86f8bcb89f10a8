/**
 * Sandbox throughput: list requests of 200 sales orders each, over keep-alive HTTP on
 * loopback. The sandbox runs in a worker thread so the load generator does not share
 * its event loop (on a 2-core machine, each gets a core).
 *
 *   npm run build && node dist/bench/sandbox-throughput.js [seconds] [connections]
 */
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { startSandbox } from '../sandbox/index.js';

export interface SandboxBenchmarkResult {
  seconds: number;
  connections: number;
  requests: number;
  records: number;
  bytes: number;
  errors: number;
  requestsPerSecond: number;
  recordsPerSecond: number;
  megabytesPerSecond: number;
}

interface Ready {
  url: string;
  token: string;
  org: string;
}

const SCALE = 20_000;
const PAGES = SCALE / 200;

async function serveInWorker(): Promise<void> {
  const sb = await startSandbox({ scale: SCALE, organizations: 1, unlimited: true, seed: 42 });
  const res = await fetch(`${sb.url}/oauth/v2/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'refresh_token', ...sb.credentials }),
  });
  const token = ((await res.json()) as { access_token: string }).access_token;
  parentPort?.postMessage({ url: sb.url, token, org: sb.organizations()[0]!.organization_id } satisfies Ready);
  parentPort?.on('message', (m) => {
    if (m === 'stop') void sb.stop().then(() => process.exit(0));
  });
}

function get(agent: http.Agent, url: URL, token: string): Promise<{ status: number; bytes: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, headers: { authorization: `Svc-oauthtoken ${token}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, bytes: buf.length, body: buf.toString('latin1') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export async function runSandboxBenchmark(seconds = 10, connections = 8): Promise<SandboxBenchmarkResult> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: 'sandbox' } });
  const ready = await new Promise<Ready>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const base =
    `${ready.url}/inventory/v1/salesorders?organization_id=${ready.org}` +
    '&sort_column=last_modified_time&sort_order=D&per_page=200&page=';
  // Warm the per-record JSON cache once, as a long benchmark run would.
  for (let p = 1; p <= PAGES; p++) await get(agent, new URL(base + p), ready.token);
  let requests = 0;
  let records = 0;
  let bytes = 0;
  let errors = 0;
  let page = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      page = (page % PAGES) + 1;
      const r = await get(agent, new URL(base + page), ready.token);
      requests++;
      bytes += r.bytes;
      if (r.status !== 200) errors++;
      // Count records cheaply: one salesorder_id per record.
      else records += r.body.split('"salesorder_id"').length - 1;
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  worker.postMessage('stop');
  await new Promise((resolve) => worker.once('exit', resolve));
  return {
    seconds: elapsed,
    connections,
    requests,
    records,
    bytes,
    errors,
    requestsPerSecond: requests / elapsed,
    recordsPerSecond: records / elapsed,
    megabytesPerSecond: bytes / elapsed / 1e6,
  };
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'sandbox') {
  void serveInWorker();
} else if (isMainThread && process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const seconds = Number(process.argv[2] ?? 10);
  const connections = Number(process.argv[3] ?? 8);
  runSandboxBenchmark(seconds, connections).then(
    (r) => {
      console.log(
        `sandbox throughput: ${r.requestsPerSecond.toFixed(0)} requests/s, ${r.recordsPerSecond.toFixed(0)} records/s, ` +
          `${r.megabytesPerSecond.toFixed(1)} MB/s ` +
          `(${r.requests} requests, ${r.errors} errors, ${r.connections} connections, ${r.seconds.toFixed(1)} s)`,
      );
    },
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
