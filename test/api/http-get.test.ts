import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decode, httpGet, httpGetWith, type HttpAnswer } from '../../src/api/http-get.js';

const API = 'https://api.example.test';
const BODY = JSON.stringify({ code: 0, events: [{ event_id: '1', payload: 'ü'.repeat(500) }] });

const text = async (a: HttpAnswer): Promise<string> => new TextDecoder().decode(await a.arrayBuffer());
const get = (url: string, headers: Record<string, string> = {}, signal = new AbortController().signal): Promise<HttpAnswer> =>
  httpGet(url, { method: 'GET', headers, signal });

describe('httpGet (the API client GET over node:http)', () => {
  beforeEach(() => nock.disableNetConnect());
  afterEach(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });

  it('sends the caller headers and asks for compressed answers; status, headers and body come back', async () => {
    let seen: Record<string, unknown> = {};
    nock(API)
      .get('/books/v3/users?organization_id=7')
      .reply(function () {
        seen = this.req.headers;
        return [200, BODY, { 'X-Rate-Limit-Remaining': '99' }];
      });
    const answer = await get(`${API}/books/v3/users?organization_id=7`, { Authorization: 'Svc-oauthtoken t' });
    expect(seen['authorization']).toBe('Svc-oauthtoken t');
    expect(seen['accept-encoding']).toBe('gzip, deflate, br');
    expect(answer.status).toBe(200);
    expect((answer.headers as Record<string, string>)['x-rate-limit-remaining']).toBe('99');
    expect(await text(answer)).toBe(BODY);
  });

  const codings: Array<[string, (b: Buffer) => Buffer]> = [
    ['gzip', gzipSync],
    ['br', brotliCompressSync],
    ['deflate', deflateSync],
  ];
  for (const [coding, compress] of codings) {
    it(`decodes a ${coding} answer`, async () => {
      nock(API)
        .get('/p')
        .reply(200, compress(Buffer.from(BODY)), { 'Content-Encoding': coding });
      expect(await text(await get(`${API}/p`))).toBe(BODY);
    });
  }

  it('decodes raw deflate too, and codings applied in turn in reverse', () => {
    const raw = Buffer.from(BODY);
    expect(Buffer.from(decode(deflateRawSync(raw), 'deflate')).toString()).toBe(BODY);
    expect(Buffer.from(decode(brotliCompressSync(gzipSync(raw)), 'gzip, br')).toString()).toBe(BODY);
    expect(decode(raw, 'identity')).toBe(raw);
  });

  it('a body that does not decode, or a coding it never asked for, is an error that names the coding', async () => {
    expect(() => decode(Buffer.from('not gzip'), 'gzip')).toThrow(/could not be decoded as gzip \(Content-Encoding: gzip\)/);
    nock(API).get('/p').reply(200, Buffer.from('x'), { 'Content-Encoding': 'zstd' });
    // As with fetch, the answer arrives and reading its body fails (the client reads it under its time-out and classifies that).
    await expect(get(`${API}/p`).then((a) => a.arrayBuffer())).rejects.toThrow(/does not decode "zstd"/);
  });

  it('follows a redirect, and keeps the credentials only within the origin', async () => {
    const other = 'https://elsewhere.example.test';
    const seen: Array<Record<string, unknown>> = [];
    const record = function (this: nock.ReplyFnContext): void {
      seen.push(this.req.headers);
    };
    nock(API)
      .get('/a')
      .reply(function () {
        record.call(this);
        return [307, '', { Location: '/b' }];
      })
      .get('/b')
      .reply(function () {
        record.call(this);
        return [302, '', { Location: `${other}/c` }];
      });
    nock(other)
      .get('/c')
      .reply(function () {
        record.call(this);
        return [200, BODY];
      });
    const answer = await get(`${API}/a`, { Authorization: 'Svc-oauthtoken t', 'X-Org': '7' });
    expect(await text(answer)).toBe(BODY);
    expect(seen.map((h) => h['authorization'])).toEqual(['Svc-oauthtoken t', 'Svc-oauthtoken t', undefined]);
    expect(seen[2]?.['x-org']).toBe('7');
  });

  it('a redirect whose empty or unreadable body claims gzip is followed all the same', async () => {
    nock(API)
      .get('/a')
      .reply(302, '', { Location: '/b', 'Content-Encoding': 'gzip' })
      .get('/b')
      .reply(301, Buffer.from('not gzip'), { Location: '/c', 'Content-Encoding': 'gzip' })
      .get('/c')
      .reply(200, BODY);
    expect(await text(await get(`${API}/a`))).toBe(BODY);
  });

  it('a redirect loop ends with an error naming the address, with the code classify fails at once on', async () => {
    nock(API).get('/loop').times(21).reply(301, '', { Location: '/loop' });
    const e = (await get(`${API}/loop`).catch((x: unknown) => x)) as Error & { code?: string };
    expect(e.message).toBe(`20 redirects in a row from ${API}/loop, the last to /loop`);
    expect(e.code).toBe('ETOOMANYREDIRECTS');
  });

  it('an API base that is not http or https, or not a URL at all, is an error naming it, sending nothing', async () => {
    const ftp = (await get('ftp://api.example.test/p?organization_id=7').catch((x: unknown) => x)) as Error & { code?: string };
    expect(ftp.message).toBe(
      'cannot request ftp://api.example.test/p?organization_id=7: ftp: is not http or https; the API base must be an http or https URL',
    );
    expect(ftp.code).toBe('EBADURL');
    const malformed = (await get('https://api example.test/p').catch((x: unknown) => x)) as Error & { code?: string };
    expect(malformed.message).toBe('the API address "https://api example.test/p" is not a valid URL');
    expect(malformed.code).toBe('EBADURL');
  });

  it('a redirect to an address that is not http or https is refused the same way', async () => {
    nock(API).get('/a').reply(302, '', { Location: 'ftp://files.example.test/x' });
    const e = (await get(`${API}/a`).catch((x: unknown) => x)) as Error & { code?: string };
    expect(e.code).toBe('EBADURL');
    expect(e.message).toContain('cannot request ftp://files.example.test/x');
  });

  describe('the size cap (sync.max_answer_mb)', () => {
    const capped = (max: number) => (url: string) =>
      httpGetWith({ maxAnswerBytes: max })(url, { method: 'GET', headers: {}, signal: new AbortController().signal });

    it('a small compressed answer that inflates past the cap fails when read, before it is decoded whole', async () => {
      // 8 MB of zeros gzip to about 8 KB: a compression bomb in miniature.
      const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024));
      expect(bomb.length).toBeLessThan(64 * 1024);
      nock(API).get('/bomb').reply(200, bomb, { 'Content-Encoding': 'gzip' });
      const answer = await capped(1024 * 1024)(`${API}/bomb`);
      await expect(answer.arrayBuffer()).rejects.toMatchObject({
        code: 'EANSWERTOOLARGE',
        message: 'the answer is larger than sync.max_answer_mb (1 MB) once decoded (Content-Encoding: gzip)',
      });
    });

    for (const [coding, compress] of [
      ['br', brotliCompressSync],
      ['deflate', deflateSync],
      ['deflate', deflateRawSync],
    ] as const) {
      it(`caps ${coding} (${compress.name}) alike`, () => {
        const big = compress(Buffer.alloc(2 * 1024 * 1024, 'a'));
        expect(() => decode(big, coding, 1024 * 1024)).toThrow(/larger than sync\.max_answer_mb \(1 MB\) once decoded/);
        expect(decode(big, coding, 2 * 1024 * 1024)).toHaveLength(2 * 1024 * 1024);
      });
    }

    it('an answer larger than the cap as sent fails as it arrives', async () => {
      nock(API).get('/big').reply(200, Buffer.alloc(5_000, 'x'));
      const e = (await capped(4_096)(`${API}/big`).catch((x: unknown) => x)) as Error & { code?: string };
      expect(e.code).toBe('EANSWERTOOLARGE');
      expect(e.message).toMatch(/^the answer is larger than sync\.max_answer_mb \(4096 bytes\)/);
    });

    it('an answer at the cap, compressed or not, is read whole', async () => {
      nock(API)
        .get('/fits')
        .reply(200, gzipSync(Buffer.from(BODY)), { 'Content-Encoding': 'gzip' });
      const exact = Buffer.byteLength(BODY);
      expect(await text(await capped(exact)(`${API}/fits`))).toBe(BODY);
    });
  });

  it('a transport failure keeps its system code for classify', async () => {
    nock(API)
      .get('/p')
      .replyWithError(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' }));
    await expect(get(`${API}/p`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('the caller signal ends a request in flight, with the signal reason', async () => {
    nock(API).get('/slow').delay(2_000).reply(200, BODY);
    const controller = new AbortController();
    const pending = get(`${API}/slow`, {}, controller.signal);
    const reason = new Error('request timed out after 50 ms');
    setTimeout(() => controller.abort(reason), 50);
    await expect(pending).rejects.toBe(reason);
  });

  it('an already aborted signal sends nothing', async () => {
    const scope = nock(API).get('/p').reply(200, BODY);
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(get(`${API}/p`, {}, controller.signal)).rejects.toThrow('stopped');
    expect(scope.isDone()).toBe(false);
  });
});
