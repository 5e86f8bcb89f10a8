import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpGet, type HttpAnswer } from '../../src/api/http-get.js';

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
