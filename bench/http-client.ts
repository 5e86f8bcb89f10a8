/**
 * The http-client scenario of `npm run bench`: the client CPU a GET costs with the global
 * `fetch` and with svcsync's `httpGet` (node:http, a keep-alive agent; src/api/http-get.ts),
 * for an answer of each size, from a local server in another process (bench/http-answer-server.ts).
 *
 * Each measurement is a fresh client process (bench/http-client-child.ts): warm-up requests,
 * then `requests` GETs `inFlight` at a time, its CPU time (user + system, every thread) divided
 * by the requests. Runs repeat the whole set, alternating which client goes first, and the
 * report gives medians with every run's figure.
 */
import { fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kill, waitMessage } from './child-processes.js';
import type { AnswerServerReady, AnswerServerSpec, HttpClientName, HttpClientResult, HttpClientSpec } from './protocol.js';

const here = dirname(fileURLToPath(import.meta.url));

export const HTTP_CLIENTS: readonly HttpClientName[] = ['fetch', 'node:http'];

export interface HttpClientOptions {
  /** Answers of about these sizes, KB. */
  sizesKb: number[];
  requests: number;
  warmup: number;
  inFlight: number;
  runs: number;
  /** Bound on each client process, ms. */
  timeoutMs: number;
  /** Told each run's figures as they come. */
  onRun?: (line: string) => void;
}

/** One answer size: per client, the CPU a request of each run, µs. */
export interface HttpClientSize {
  kb: number;
  bytes: number;
  cpuUsPerRequest: Record<HttpClientName, number[]>;
}

export interface HttpClientFigures {
  requests: number;
  warmup: number;
  inFlight: number;
  runs: number;
  sizes: HttpClientSize[];
}

async function runClient(spec: HttpClientSpec, timeoutMs: number): Promise<number> {
  const child = fork(join(here, 'http-client-child.js'), [JSON.stringify(spec)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  try {
    const accept = (m: unknown): HttpClientResult | undefined =>
      (m as { type?: string }).type === 'http-client' ? (m as HttpClientResult) : undefined;
    const r = await waitMessage(child, accept, timeoutMs, `${spec.client} client`);
    if (r.error !== undefined) throw new Error(`${spec.client} client: ${r.error}`);
    return (1000 * (r.cpuUserMs + r.cpuSystemMs)) / r.requests;
  } finally {
    kill(child);
  }
}

export async function runHttpClientBench(opts: HttpClientOptions): Promise<HttpClientFigures> {
  const spec: AnswerServerSpec = { sizesKb: opts.sizesKb };
  const server = fork(join(here, 'http-answer-server.js'), [JSON.stringify(spec)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  try {
    const accept = (m: unknown): AnswerServerReady | undefined =>
      (m as { type?: string }).type === 'ready' ? (m as AnswerServerReady) : undefined;
    const ready = await waitMessage(server, accept, 30_000, 'answer server start');
    const sizes: HttpClientSize[] = ready.answers.map((a) => ({
      kb: a.kb,
      bytes: a.bytes,
      cpuUsPerRequest: { fetch: [], 'node:http': [] },
    }));
    for (let run = 0; run < opts.runs; run++) {
      // Alternate which client goes first, so that neither always meets a machine the other just warmed or loaded.
      const order = run % 2 === 0 ? HTTP_CLIENTS : [...HTTP_CLIENTS].reverse();
      for (const [i, size] of sizes.entries()) {
        for (const client of order) {
          const url = `${ready.url}${ready.answers[i]!.path}`;
          const clientSpec: HttpClientSpec = {
            client,
            url,
            requests: opts.requests,
            warmup: opts.warmup,
            inFlight: opts.inFlight,
            timeoutMs: 30_000,
          };
          size.cpuUsPerRequest[client].push(await runClient(clientSpec, opts.timeoutMs));
        }
        const last = (c: HttpClientName): string => `${c} ${Math.round(size.cpuUsPerRequest[c].at(-1)!)} µs`;
        opts.onRun?.(`run ${run + 1}, ${size.kb} KB: ${order.map(last).join(', ')}`);
      }
    }
    return { requests: opts.requests, warmup: opts.warmup, inFlight: opts.inFlight, runs: opts.runs, sizes };
  } finally {
    kill(server);
  }
}

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

/** A median with every run's figure in brackets, in µs. */
function cell(us: readonly number[]): string {
  return us.length > 1 ? `${fmt(median(us))} µs (${us.map(fmt).join(', ')})` : `${fmt(us[0] ?? NaN)} µs`;
}

export function renderHttpClient(f: HttpClientFigures): string {
  const lines: string[] = [];
  lines.push(
    `HTTP clients (scenario \`http-client\`): client CPU a request (user + system, every thread of the client's process) ` +
      `for ${fmt(f.requests)} GETs of the same answer, ${f.inFlight} in flight over keep-alive connections, each with its ` +
      `own abort signal and time-out, the body read as bytes; from a local server in another process. Each figure is a ` +
      `fresh client process after ${fmt(f.warmup)} warm-up requests; ` +
      (f.runs > 1 ? `median of ${f.runs} runs alternating which client goes first (every run in brackets).` : 'one run.'),
  );
  lines.push('');
  lines.push('| answer | `fetch` | node:http (`httpGet`, svcsync’s client) | node:http ÷ fetch |');
  lines.push('|---|---:|---:|---:|');
  for (const s of f.sizes) {
    const { fetch, 'node:http': http } = s.cpuUsPerRequest;
    const ratio = (median(http) / median(fetch)).toFixed(2);
    lines.push(`| ${fmt(s.bytes / 1024)} KB (${fmt(s.bytes)} bytes) | ${cell(fetch)} | ${cell(http)} | ${ratio} |`);
  }
  return lines.join('\n');
}
