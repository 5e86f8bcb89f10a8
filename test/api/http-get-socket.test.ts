import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { httpGet, httpGetWith, type HttpAnswer, type HttpGet } from '../../src/api/http-get.js';

// Apart from http-get.test.ts: with nock loaded, even a request it lets through opens a new socket.

const BODY = JSON.stringify({ code: 0, events: [{ event_id: '1' }] });
const text = async (a: HttpAnswer): Promise<string> => new TextDecoder().decode(await a.arrayBuffer());
const get = (url: string, signal = new AbortController().signal): Promise<HttpAnswer> =>
  httpGet(url, { method: 'GET', headers: {}, signal });

describe('httpGet over a real socket', () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  async function serve(handler: http.RequestListener): Promise<string> {
    server = http.createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('a body cut off before its length is an error, never a short answer', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': '1000' });
      res.write('{"code":0,');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    await expect(get(`${base}/p`)).rejects.toMatchObject({ code: 'ECONNRESET' });
  });

  it('a signal that fires while the body arrives ends the read with the signal reason', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': '1000' });
      res.write('{"code":0,');
    });
    const controller = new AbortController();
    const pending = get(`${base}/p`, controller.signal);
    const reason = new Error('request timed out after 100 ms');
    setTimeout(() => controller.abort(reason), 100);
    await expect(pending).rejects.toBe(reason);
  });

  /**
   * A server that lets a connection idle for `idleMs` go, the way one behind a load balancer
   * does: a request that arrives on such a connection is cut off unanswered, as when the
   * server's close crosses the request on the wire. Counts connections and requests cut off.
   */
  async function closingIdle(idleMs: number): Promise<{ base: string; sockets: Set<Socket>; cut: () => number }> {
    const lastAnswer = new WeakMap<Socket, number>();
    const sockets = new Set<Socket>();
    let cut = 0;
    const base = await serve((req, res) => {
      sockets.add(req.socket);
      const last = lastAnswer.get(req.socket);
      if (last !== undefined && Date.now() - last > idleMs) {
        cut++;
        req.socket.destroy();
        return;
      }
      res.end(BODY, () => lastAnswer.set(req.socket, Date.now()));
    });
    // No Keep-Alive hint: many servers and proxies send none.
    server!.keepAliveTimeout = 0;
    return { base, sockets, cut: () => cut };
  }
  const via = (get: HttpGet, url: string): Promise<HttpAnswer> =>
    get(url, { method: 'GET', headers: {}, signal: new AbortController().signal });

  it('an idle connection is closed before the server would, so the next request goes on a new one', async () => {
    const s = await closingIdle(250);
    const get = httpGetWith({ idleSocketMs: 100 });
    expect(await text(await via(get, `${s.base}/a`))).toBe(BODY);
    await sleep(400);
    expect(await text(await via(get, `${s.base}/b`))).toBe(BODY);
    // Nothing was sent on the connection the server had let go.
    expect(s.cut()).toBe(0);
    expect(s.sockets.size).toBe(2);
  });

  it('a request cut off unanswered on a reused connection is sent again on a new one', async () => {
    const s = await closingIdle(100);
    // Idle sockets kept longer than the server keeps them (a server that closes sooner than svcsync's setting).
    const get = httpGetWith({ idleSocketMs: 60_000 });
    expect(await text(await via(get, `${s.base}/a`))).toBe(BODY);
    await sleep(250);
    expect(await text(await via(get, `${s.base}/b`))).toBe(BODY);
    expect(s.cut()).toBe(1);
    expect(s.sockets.size).toBe(2);
  });

  it('a new connection cut off unanswered is not sent again here: the error keeps its code for classify', async () => {
    let requests = 0;
    const base = await serve((req) => {
      requests++;
      req.socket.destroy();
    });
    await expect(via(httpGetWith({ idleSocketMs: 60_000 }), `${base}/p`)).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(requests).toBe(1);
  });

  it('the idle timeout never cuts a connection in use: a slow answer arrives whole', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200);
      res.write(BODY.slice(0, 5));
      setTimeout(() => res.end(BODY.slice(5)), 400);
    });
    expect(await text(await via(httpGetWith({ idleSocketMs: 100 }), `${base}/slow`))).toBe(BODY);
  });

  it('requests one after another reuse one connection', async () => {
    const sockets = new Set<unknown>();
    const base = await serve((req, res) => {
      sockets.add(req.socket);
      res.end(BODY);
    });
    for (let i = 0; i < 5; i++) expect(await text(await get(`${base}/p${i}`))).toBe(BODY);
    expect(sockets.size).toBe(1);
  });
});
