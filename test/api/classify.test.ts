import { describe, expect, it } from 'vitest';
import { classify, type ClassifyInput } from '../../src/api/classify.js';
import { AuthorizationError, ConfigError, FatalError, QuotaExhaustedError, RetriableError } from '../../src/core/errors.js';

const NOW = Date.UTC(2026, 0, 15, 10, 0, 0);
const base: ClassifyInput = {
  method: 'GET',
  path: '/inventory/v1/salesorders?organization_id=7',
  organizationId: '7',
  family: 'inventory',
};

describe('classify', () => {
  it.each<[string, Partial<ClassifyInput>, { kind: string; reason?: string; retryAfterMs?: number } | null]>([
    ['200 code 0 is a success', { status: 200, body: { code: 0, message: 'success' } }, null],
    ['200 without a code is a success', { status: 200, body: { salesorders: [] } }, null],
    [
      '429 code 44 waits the window',
      { status: 429, body: { code: 44, message: 'blocked' } },
      { kind: 'retriable', reason: 'rate_limit', retryAfterMs: 60_000 },
    ],
    [
      '429 code 44 with Retry-After',
      { status: 429, body: { code: 44 }, headers: { 'Retry-After': '9' } },
      { kind: 'retriable', reason: 'rate_limit', retryAfterMs: 9_000 },
    ],
    [
      '429 code 1070 is concurrency',
      { status: 429, body: { code: 1070, message: 'too many' } },
      { kind: 'retriable', reason: 'concurrency' },
    ],
    ['429 code 45 is the daily quota', { status: 429, body: { code: 45, message: 'quota' } }, { kind: 'quota' }],
    ['429 with another code is retried', { status: 429, body: { code: 99 } }, { kind: 'retriable', reason: 'server' }],
    ['500', { status: 500, body: { code: 1000, message: 'internal' } }, { kind: 'retriable', reason: 'server' }],
    ['503 with an HTML body', { status: 503, parseError: new Error('x') }, { kind: 'retriable', reason: 'server' }],
    ['200 code 1000', { status: 200, body: { code: 1000, message: 'internal' } }, { kind: 'retriable', reason: 'server' }],
    ['200 invalid JSON', { status: 200, parseError: new Error('bad') }, { kind: 'retriable', reason: 'invalid_body' }],
    ['200 with a JSON array', { status: 200, body: [] }, { kind: 'retriable', reason: 'invalid_body' }],
    [
      'connection reset',
      { networkError: Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET', message: 'socket hang up' } }) },
      { kind: 'retriable', reason: 'network' },
    ],
    ['timeout', { networkError: new Error('aborted'), timedOut: true }, { kind: 'retriable', reason: 'timeout' }],
    ['401', { status: 401, body: { code: 57, message: 'not authorized' } }, { kind: 'authorization' }],
    ['400', { status: 400, body: { code: 2, message: 'Invalid value passed for organization_id' } }, { kind: 'fatal' }],
    ['404 code 1002', { status: 404, body: { code: 1002, message: 'Sales order does not exist' } }, { kind: 'fatal' }],
    ['404 with an HTML body', { status: 404, parseError: new Error('x') }, { kind: 'fatal' }],
    ['405', { status: 405, body: { code: 9 } }, { kind: 'fatal' }],
    ['403', { status: 403, body: { code: 3 } }, { kind: 'fatal' }],
    ['200 code 5012', { status: 200, body: { code: 5012, message: 'recurrence name already exists' } }, { kind: 'fatal' }],
  ])('%s', (_name, input, expected) => {
    const e = classify({ ...base, ...input }, NOW);
    if (expected === null) {
      expect(e).toBeNull();
      return;
    }
    expect(e?.kind).toBe(expected.kind);
    expect(e?.retriable).toBe(expected.kind === 'retriable');
    if (expected.reason) expect((e as RetriableError).reason).toBe(expected.reason);
    if (expected.retryAfterMs !== undefined) expect((e as RetriableError).retryAfterMs).toBe(expected.retryAfterMs);
    expect(e?.hint).toBeTruthy();
    expect(e?.organizationId).toBe('7');
    expect(e?.request).toBe('GET /inventory/v1/salesorders?organization_id=7');
  });

  it('a refused per_page (a server whose maximum is smaller, A19) says to lower sync.per_page', () => {
    const body = { code: 2, message: 'Invalid value passed for per_page: must be an integer between 1 and 100' };
    const e = classify({ ...base, status: 400, body }, NOW)!;
    expect(e.kind).toBe('fatal');
    expect(e.message).toContain('Invalid value passed for per_page');
    expect(e.hint).toMatch(/set sync\.per_page to the largest value it accepts/);
    // Any other refused parameter keeps the general hint.
    expect(classify({ ...base, status: 400, body: { code: 2, message: 'Invalid value passed for page' } }, NOW)!.hint).not.toMatch(
      /per_page/,
    );
  });

  it('names method, path, status, code and message on a refused request', () => {
    const e = classify({ ...base, status: 400, body: { code: 2, message: 'Invalid value passed for organization_id' } }, NOW)!;
    expect(e.message).toBe(
      'GET /inventory/v1/salesorders?organization_id=7 (organization 7) → HTTP 400 code 2: Invalid value passed for organization_id',
    );
    expect(e.hint).toContain('organization 7');
    expect(e.status).toBe(400);
    expect(e.code).toBe(2);
  });

  it('gives the next midnight of the reset zone for code 45', () => {
    const e = classify({ ...base, status: 429, body: { code: 45 }, quotaResetTimeZone: 'Asia/Kolkata' }, NOW) as QuotaExhaustedError;
    // 10:00 UTC is 15:30 in India; its midnight is 18:30 UTC.
    expect(e.resumeAt.toISOString()).toBe('2026-01-15T18:30:00.000Z');
    expect(e.message).toContain('can continue at 2026-01-15T18:30:00.000Z');
    expect(e.hint).toContain('midnight Asia/Kolkata');
    expect(e.hint).toContain('other integrations');
  });

  it('names the scope a 401 needs', () => {
    const e = classify({ ...base, status: 401, body: { code: 57 } }, NOW) as AuthorizationError;
    expect(e.hint).toContain('SvcInventory.salesorders.READ');
    // Code 57 taken at its word (the scope); no verdict yet: decideRetry gives it at the bound.
    expect([e.reach, e.scope]).toEqual(['family', 'SvcInventory.salesorders.READ']);
    expect(e.message).not.toContain('needs scope');
    const token = classify({ ...base, status: 401, body: { code: 14 } }, NOW) as AuthorizationError;
    expect([token.reach, token.scope]).toEqual(['connection', undefined]);
    const other = classify({ method: 'GET', path: '/billing/v1/mystery', family: 'billing', status: 401 }, NOW) as AuthorizationError;
    expect(other.hint).toContain('SvcSubscriptions.*');
  });

  it('fails at once, naming the request and the address, what sending it again cannot mend', () => {
    const fault = (code: string, message: string) => classify({ ...base, networkError: Object.assign(new Error(message), { code }) }, NOW)!;
    const ftp = fault('EBADURL', 'cannot request ftp://api.example.test/inventory/v1/salesorders: ftp: is not http or https');
    expect(ftp).toBeInstanceOf(ConfigError);
    expect(ftp.retriable).toBe(false);
    expect(ftp.message).toBe(
      'GET /inventory/v1/salesorders?organization_id=7 (organization 7): cannot request ftp://api.example.test/inventory/v1/salesorders: ' +
        'ftp: is not http or https',
    );
    expect(ftp.hint).toMatch(/set api_url to the https:\/\/ address of the API/);
    const loop = fault('ETOOMANYREDIRECTS', '20 redirects in a row from https://api.example.test/x, the last to /x');
    expect(loop).toBeInstanceOf(ConfigError);
    expect(loop.message).toContain('20 redirects in a row from https://api.example.test/x');
    expect(loop.hint).toMatch(/API address is probably wrong/);
    const big = fault('EANSWERTOOLARGE', 'the answer is larger than sync.max_answer_mb (64 MB) once decoded (Content-Encoding: gzip)');
    expect(big).toBeInstanceOf(FatalError);
    expect(big.message).toMatch(/^GET \/inventory\/v1\/salesorders\?organization_id=7 \(organization 7\): the answer is larger/);
    expect(big.hint).toMatch(/lower sync\.per_page .* raise sync\.max_answer_mb/);
    // A reset stays transient.
    expect(fault('ECONNRESET', 'socket hang up')).toBeInstanceOf(RetriableError);
  });

  it('scrubs secrets out of server-supplied text', () => {
    const e = classify(
      { ...base, status: 400, body: { code: 2, message: 'bad token abc123secret' }, scrub: (s) => s.replace('abc123secret', '[REDACTED]') },
      NOW,
    )!;
    expect(e.message).not.toContain('abc123secret');
  });
});
