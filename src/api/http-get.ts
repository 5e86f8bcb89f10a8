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

/** What `fetch` asks for; svcsync decodes each. */
const ACCEPT_ENCODING = 'gzip, deflate, br';

// One pool per process, as `fetch` has: clients of every organization reuse its connections.
const transports: Record<string, { request: typeof http.request; agent: http.Agent } | undefined> = {
  'http:': { request: http.request, agent: new http.Agent({ keepAlive: true, scheduling: 'lifo' }) },
  'https:': { request: https.request, agent: new https.Agent({ keepAlive: true, scheduling: 'lifo' }) },
};

/** Redirects followed, as `fetch` follows them; the API itself is not known to send any. */
const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export const httpGet: HttpGet = async (url, init) => {
  let target = new URL(url);
  let headers = init.headers;
  for (let hop = 0; ; hop++) {
    const answer = await exchange(target, headers, init.signal);
    const location = REDIRECTS.has(answer.status) ? headerValue(answer.headers, 'location') : undefined;
    if (location === undefined) return answer;
    if (hop === MAX_REDIRECTS)
      throw new Error(`${MAX_REDIRECTS} redirects in a row, the last to ${location}; the API base is probably wrong`);
    const next = new URL(location, target);
    // As fetch does: credentials never follow a redirect to another origin.
    if (next.origin !== target.origin) headers = withoutAuthorization(headers);
    target = next;
  }
};

function withoutAuthorization(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'authorization'));
}

function exchange(target: URL, headers: Record<string, string>, signal: AbortSignal): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    signal.throwIfAborted();
    const transport = transports[target.protocol];
    if (!transport) {
      reject(new Error(`cannot request ${target.protocol} addresses; the API base must be an http or https URL`));
      return;
    }
    const request = transport.request(
      target,
      {
        method: 'GET',
        headers: { 'Accept-Encoding': ACCEPT_ENCODING, ...headers },
        agent: transport.agent,
        signal,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let length = 0;
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          length += chunk.length;
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
            // Decoded when read, as fetch does: a redirect's body, never read, is never decoded.
            arrayBuffer: () => new Promise((done) => done(ownBuffer(decode(body, coding)))),
          });
        });
      },
    );
    // As fetch does, a request the signal ended fails with the signal's reason.
    request.on('error', (err) => reject(signal.aborted ? signal.reason : err));
    request.end();
  });
}

function truncated(): Error {
  return Object.assign(new Error('the connection closed before the whole answer arrived'), { code: 'ECONNRESET' });
}

function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  // Uint8Array's slice copies (a Buffer's would not).
  return whole ? bytes.buffer : Uint8Array.prototype.slice.call(bytes).buffer;
}

/** The body as the server meant it, per `Content-Encoding` (the codings applied in order, undone in reverse). */
export function decode(body: Uint8Array, contentEncoding: string | undefined): Uint8Array {
  // An empty body is empty in every coding (a 204, a redirect): there is nothing to undo.
  if (!contentEncoding || body.length === 0) return body;
  const codings = contentEncoding
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  let out = body;
  for (const coding of codings.reverse()) {
    try {
      out = undo(coding, out);
    } catch (err) {
      throw Object.assign(
        new Error(`the answer's body could not be decoded as ${coding} (Content-Encoding: ${contentEncoding}): ${(err as Error).message}`),
        { code: 'EBADENCODING' },
      );
    }
  }
  return out;
}

function undo(coding: string, bytes: Uint8Array): Uint8Array {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return gunzipSync(bytes);
    case 'br':
      return brotliDecompressSync(bytes);
    case 'deflate':
      // Servers send zlib-wrapped and raw deflate alike under this name; fetch takes both.
      try {
        return inflateSync(bytes);
      } catch {
        return inflateRawSync(bytes);
      }
    default:
      throw new Error(`svcsync does not decode "${coding}"; it asks only for gzip, deflate and br`);
  }
}
