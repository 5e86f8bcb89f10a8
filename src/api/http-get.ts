import http from 'node:http';
import https from 'node:https';
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { headerValue, type HeaderSource } from './backoff.js';

/**
 * The GET the API client makes, over node:http rather than the global `fetch`.
 *
 * `fetch` builds WHATWG Request, Headers and stream objects around every exchange: measured
 * here at 470 µs of CPU a request for a 35 KB answer and 780 µs for a 200 KB one, against
 * 235 and 365 µs for `http.request` with a keep-alive agent. An events sync, a request for every
 * 200 small records, spends 15 % less CPU (docs/benchmarks.md). Nothing else changes: the same
 * headers, compressed answers asked for and decoded as `fetch` does (gzip, deflate, br), the
 * caller's signal ends the request and the body alike, and transport failures carry the
 * system's code (ECONNREFUSED, ECONNRESET) for `classify`.
 *
 * Beyond `fetch`: idle keep-alive sockets are closed before a server would close them, a
 * request that meets a reused socket the server had already closed is sent again on another,
 * and an answer is refused past a size, as received and as decoded. Its own failures carry the
 * codes of `HTTP_GET_FAULTS`, so `classify` fails a wrong address at once instead of retrying it.
 *
 * Tests and embedders may still hand the client `fetch` itself: it has this shape.
 */
export type HttpGet = (url: string, init: HttpGetInit) => Promise<HttpAnswer>;

export interface HttpGetInit {
  method: 'GET';
  headers: Record<string, string>;
  signal: AbortSignal;
}

export interface HttpAnswer {
  status: number;
  headers: HeaderSource;
  /** The body, decoded from its content-encoding. */
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface HttpGetOptions {
  /**
   * A keep-alive socket idle this long is closed (`sync.idle_socket_timeout_ms`). A server that
   * closes idle connections first turns the next request sent on one into a reset; this keeps
   * svcsync's side the first to let go. A server's `Keep-Alive: timeout=N` shortens it further.
   */
  idleSocketMs: number;
  /** The largest answer body, as received and once decoded (`sync.max_answer_mb`). */
  maxAnswerBytes: number;
}

const MB = 1024 * 1024;

/** Below the 5 s a Node.js server keeps an idle connection, and far below nginx's 75 s or a load balancer's 60 s. */
export const DEFAULT_HTTP_GET_OPTIONS: HttpGetOptions = { idleSocketMs: 4_000, maxAnswerBytes: 64 * MB };

/** The codes of the failures httpGet itself raises, which `classify` reads. */
export const HTTP_GET_FAULTS = {
  /** The address is not a URL, or not an http or https one: a configuration fault. */
  badUrl: 'EBADURL',
  /** Redirects without end: the address is wrong. */
  tooManyRedirects: 'ETOOMANYREDIRECTS',
  /** The body passed `maxAnswerBytes`, as sent or once decoded. */
  tooLarge: 'EANSWERTOOLARGE',
} as const;

/** What `fetch` asks for; svcsync decodes each. */
const ACCEPT_ENCODING = 'gzip, deflate, br';

/** Redirects followed, as `fetch` follows them; the API itself is not known to send any. */
const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Requests sent again after a reused socket was found closed. Each failure destroys that socket,
 * so the next try takes another idle one or a new connection; a new connection's failure is
 * never sent again here (classify and the client's retries decide about it).
 */
const MAX_STALE_SOCKETS = 4;

interface Transport {
  request: typeof http.request;
  agent: http.Agent;
}

/** One pool per process and setting, as `fetch` has one per process: clients of every organization reuse its connections. */
const made = new Map<string, HttpGet>();

/** The GET for these settings; every caller with the same settings shares its connection pool. */
export function httpGetWith(options: Partial<HttpGetOptions> = {}): HttpGet {
  const o = { ...DEFAULT_HTTP_GET_OPTIONS, ...options };
  const key = `${o.idleSocketMs}/${o.maxAnswerBytes}`;
  let get = made.get(key);
  if (!get) made.set(key, (get = makeHttpGet(o)));
  return get;
}

/** The GET with the default settings. */
export const httpGet: HttpGet = httpGetWith();

function makeHttpGet(o: HttpGetOptions): HttpGet {
  // `timeout` on a keep-alive agent is the idle timeout of its free sockets: one in use is never cut by it.
  const agent = { keepAlive: true, scheduling: 'lifo', timeout: o.idleSocketMs } as const;
  const transports: Record<string, Transport | undefined> = {
    'http:': { request: http.request, agent: new http.Agent(agent) },
    'https:': { request: https.request, agent: new https.Agent(agent) },
  };
  return async (url, init) => {
    let target = parseUrl(url, () => `the API address ${JSON.stringify(url)} is not a valid URL`);
    let headers = init.headers;
    for (let hop = 0; ; hop++) {
      const transport = transports[target.protocol];
      if (!transport)
        throw fault(
          'badUrl',
          `cannot request ${target.href}: ${target.protocol} is not http or https; the API base must be an http or https URL`,
        );
      const answer = await exchange(transport, target, headers, init.signal, o.maxAnswerBytes);
      const location = REDIRECTS.has(answer.status) ? headerValue(answer.headers, 'location') : undefined;
      if (location === undefined) return answer;
      if (hop === MAX_REDIRECTS)
        throw fault('tooManyRedirects', `${MAX_REDIRECTS} redirects in a row from ${url}, the last to ${location}`);
      const from = target;
      const next = parseUrl(location, () => `${from.href} redirected to ${JSON.stringify(location)}, which is not a valid URL`, from);
      // As fetch does: credentials never follow a redirect to another origin.
      if (next.origin !== target.origin) headers = withoutAuthorization(headers);
      target = next;
    }
  };
}

function parseUrl(url: string, what: () => string, base?: URL): URL {
  try {
    return new URL(url, base);
  } catch {
    throw fault('badUrl', what());
  }
}

function fault(kind: keyof typeof HTTP_GET_FAULTS, message: string): Error {
  return Object.assign(new Error(message), { code: HTTP_GET_FAULTS[kind] });
}

function withoutAuthorization(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'authorization'));
}

/** A keep-alive socket the server had closed: the request failed before any byte of its answer. */
class StaleSocket {
  constructor(readonly error: unknown) {}
}

async function exchange(
  transport: Transport,
  target: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
  maxBytes: number,
): Promise<HttpAnswer> {
  for (let stale = 0; ; stale++) {
    const outcome = await exchangeOnce(transport, target, headers, signal, maxBytes, stale < MAX_STALE_SOCKETS);
    // A GET is safe to send again; the server never answered this one.
    if (!(outcome instanceof StaleSocket)) return outcome;
  }
}

const RESETS = new Set(['ECONNRESET', 'EPIPE']);

function exchangeOnce(
  transport: Transport,
  target: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
  maxBytes: number,
  mayResend: boolean,
): Promise<HttpAnswer | StaleSocket> {
  return new Promise<HttpAnswer | StaleSocket>((resolve, reject) => {
    signal.throwIfAborted();
    let answered = false;
    const request = transport.request(
      target,
      { method: 'GET', headers: { 'Accept-Encoding': ACCEPT_ENCODING, ...headers }, agent: transport.agent, signal },
      (response) => {
        answered = true;
        receive(response, signal, maxBytes, resolve, (err) => {
          reject(err);
          request.destroy();
        });
      },
    );
    request.on('error', (err: NodeJS.ErrnoException) => {
      if (!answered && mayResend && request.reusedSocket && !signal.aborted && RESETS.has(err.code ?? '')) {
        resolve(new StaleSocket(err));
        return;
      }
      // As fetch does, a request the signal ended fails with the signal's reason.
      reject(signal.aborted ? signal.reason : err);
    });
    request.end();
  });
}

/** Reads an answer's body whole, up to `maxBytes`; decoded when read, as fetch does (a redirect's body, never read, is never decoded). */
function receive(
  response: http.IncomingMessage,
  signal: AbortSignal,
  maxBytes: number,
  resolve: (answer: HttpAnswer) => void,
  reject: (err: unknown) => void,
): void {
  const chunks: Buffer[] = [];
  let length = 0;
  const declared = Number(response.headers['content-length'] ?? 0);
  if (declared > maxBytes) {
    reject(tooLarge(maxBytes, `(Content-Length: ${declared})`));
    return;
  }
  response.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    length += chunk.length;
    if (length > maxBytes) reject(tooLarge(maxBytes, 'as sent'));
  });
  response.on('error', (err) => reject(signal.aborted ? signal.reason : err));
  // A body cut off (the peer closed, the signal fired) ends in 'close' without 'end'.
  response.on('close', () => {
    if (!response.complete) reject(signal.aborted ? signal.reason : truncated());
  });
  response.on('end', () => {
    // Its own ArrayBuffer, exactly the body: Buffer.concat may hand back a slice of a shared pool.
    const body = new Uint8Array(length);
    let at = 0;
    for (const c of chunks) {
      body.set(c, at);
      at += c.length;
    }
    const coding = response.headers['content-encoding'];
    resolve({
      status: response.statusCode ?? 0,
      headers: response.headers as Record<string, string | undefined>,
      arrayBuffer: () => new Promise((done) => done(ownBuffer(decode(body, coding, maxBytes)))),
    });
  });
}

function truncated(): Error {
  return Object.assign(new Error('the connection closed before the whole answer arrived'), { code: 'ECONNRESET' });
}

const sizeText = (bytes: number): string => (bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes} bytes`);

function tooLarge(maxBytes: number, how: string): Error {
  return fault('tooLarge', `the answer is larger than sync.max_answer_mb (${sizeText(maxBytes)}) ${how}`);
}

function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  // Uint8Array's slice copies (a Buffer's would not).
  return whole ? bytes.buffer : Uint8Array.prototype.slice.call(bytes).buffer;
}

/**
 * The body as the server meant it, per `Content-Encoding` (the codings applied in order, undone
 * in reverse), never longer than `maxBytes`: a small answer may inflate to gigabytes, so the
 * decoder stops there rather than after.
 */
export function decode(
  body: Uint8Array,
  contentEncoding: string | undefined,
  maxBytes = DEFAULT_HTTP_GET_OPTIONS.maxAnswerBytes,
): Uint8Array {
  // An empty body is empty in every coding (a 204, a redirect): there is nothing to undo.
  if (!contentEncoding || body.length === 0) return body;
  const codings = contentEncoding
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  let out = body;
  for (const coding of codings.reverse()) {
    try {
      out = undo(coding, out, maxBytes);
    } catch (err) {
      if (overflowed(err)) throw tooLarge(maxBytes, `once decoded (Content-Encoding: ${contentEncoding})`);
      throw Object.assign(
        new Error(`the answer's body could not be decoded as ${coding} (Content-Encoding: ${contentEncoding}): ${(err as Error).message}`),
        { code: 'EBADENCODING' },
      );
    }
  }
  return out;
}

/** zlib's refusal to produce more than `maxOutputLength`. */
const overflowed = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === 'ERR_BUFFER_TOO_LARGE';

function undo(coding: string, bytes: Uint8Array, maxOutputLength: number): Uint8Array {
  const limit = { maxOutputLength };
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return gunzipSync(bytes, limit);
    case 'br':
      return brotliDecompressSync(bytes, limit);
    case 'deflate':
      // Servers send zlib-wrapped and raw deflate alike under this name; fetch takes both.
      try {
        return inflateSync(bytes, limit);
      } catch (err) {
        if (overflowed(err)) throw err;
        return inflateRawSync(bytes, limit);
      }
    default:
      throw new Error(`svcsync does not decode "${coding}"; it asks only for gzip, deflate and br`);
  }
}
