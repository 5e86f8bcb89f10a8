import { describe, expect, it } from 'vitest';
import { AuthorizationError, ConfigError, FatalError, QuotaExhaustedError, RetriableError } from '../../src/core/errors.js';
import { itemFailureVerdict, SetAside } from '../../src/extractors/item-failure.js';
import { StopRequested } from '../../src/extractors/stop.js';
import { LeaseLost } from '../../src/loaders/lease/fence.js';

describe('itemFailureVerdict', () => {
  const live = new AbortController().signal;
  const aborted = AbortSignal.abort();
  it.each([
    ['a 404 with a code that is not gone', new FatalError('404', { status: 404, code: 2 }), live, 'set-aside'],
    ['a 400 for this record', new FatalError('400', { status: 400, code: 2 }), live, 'set-aside'],
    ['an answer without the record', new FatalError('no key'), live, 'set-aside'],
    ['retries spent on a failing server', new RetriableError('500', { status: 500, reason: 'server' }), live, 'defer-and-end'],
    ['a bug', new TypeError('x is undefined'), live, 'defer-and-end'],
    ['a configuration error', new ConfigError('bad'), live, 'defer-and-end'],
    ['a spent quota', new QuotaExhaustedError('quota', { resumeAt: new Date(0) }), live, 'propagate'],
    ['a refused token', new AuthorizationError('401', { status: 401, reach: 'connection' }), live, 'propagate'],
    ['a stop request', new StopRequested('shutdown'), live, 'propagate'],
    ['a lost lease (a FatalError, but not the item\u2019s doing)', new LeaseLost('lost'), live, 'propagate'],
    ['anything once the run is aborted', new FatalError('404', { status: 404, code: 2 }), aborted, 'propagate'],
  ])('%s → %s', (_what, error, signal, expected) => {
    expect(itemFailureVerdict(error, signal)).toBe(expected);
  });
});

describe('SetAside', () => {
  it('is no error when empty, else one naming the count and the first item with what to do', () => {
    const aside = new SetAside();
    expect(aside.error('reads', 's')).toBeNull();
    aside.add('A', new FatalError('GET /x/A: 400 bad', { status: 400, hint: 'check A' }));
    aside.add('B', new FatalError('GET /x/B: 400 bad', { status: 400 }));
    const error = aside.error('single-record reads', 'books.x')!;
    expect(error.message).toBe(
      '2 single-record reads of books.x could not be read; the others were. The first, A: GET /x/A: 400 bad\n  → check A',
    );
    expect(error.hint).toBe('they stay queued, behind the others, and are tried again on the next run; check A');
  });
});
