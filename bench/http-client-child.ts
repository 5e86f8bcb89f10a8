/**
 * One client of the http-client scenario (forked by bench/http-client.ts), in a process of its
 * own so that its CPU time is the client's alone: GETs of one answer, `inFlight` at a time over
 * keep-alive connections, each under its own abort signal and time-out as svcsync's client sends
 * them, the body read whole as bytes (what the client parses from). `warmup` requests first,
 * unmeasured, so that both clients are measured with their code compiled and their connections open.
 * Usage: node dist/bench/http-client-child.js '<HttpClientSpec JSON>'
 */
import { httpGet, type HttpGet } from '../src/api/http-get.js';
import { userAgent } from '../src/api/user-agent.js';
import type { HttpClientResult, HttpClientSpec } from './protocol.js';

/** The headers svcsync's client sends (the family's Accept, a token of the API's length, its User-Agent). */
const HEADERS = {
  Accept: 'application/json',
  Authorization: 'Svc-oauthtoken 1000.0123456789abcdef0123456789abcdef.0123456789abcdef0123456789abcdef',
  'User-Agent': userAgent(),
};

async function once(get: HttpGet, spec: HttpClientSpec): Promise<number> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`request timed out after ${spec.timeoutMs} ms`)), spec.timeoutMs);
  try {
    const answer = await get(spec.url, { method: 'GET', headers: HEADERS, signal: controller.signal });
    if (answer.status !== 200) throw new Error(`GET ${spec.url}: HTTP ${answer.status}`);
    return (await answer.arrayBuffer()).byteLength;
  } finally {
    clearTimeout(timer);
  }
}

/** `n` requests, `inFlight` at a time; the body bytes received. */
async function requests(get: HttpGet, spec: HttpClientSpec, n: number): Promise<number> {
  let started = 0;
  let bytes = 0;
  const lane = async (): Promise<void> => {
    while (started < n) {
      started++;
      bytes += await once(get, spec);
    }
  };
  await Promise.all(Array.from({ length: Math.min(spec.inFlight, n) }, lane));
  return bytes;
}

async function main(): Promise<HttpClientResult> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as HttpClientSpec;
  const get: HttpGet = spec.client === 'fetch' ? fetch : httpGet;
  await requests(get, spec, spec.warmup);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const bytes = await requests(get, spec, spec.requests);
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { type: 'http-client', requests: spec.requests, bytes, elapsedMs, cpuUserMs: cpu.user / 1000, cpuSystemMs: cpu.system / 1000 };
}

main().then(
  (result) => process.send?.(result, () => process.exit(0)),
  (error: unknown) => {
    const result: HttpClientResult = { type: 'http-client', error: error instanceof Error ? error.message : String(error) };
    process.send?.(result, () => process.exit(1));
  },
);
