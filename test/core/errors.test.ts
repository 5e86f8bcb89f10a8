import { describe, expect, it } from 'vitest';
import { ConfigError, FatalError, QuotaExhaustedError, describeError } from '../../src/core/errors.js';

describe('describeError', () => {
  it.each<[string, unknown, string]>([
    ['a classified error with its hint', new FatalError('GET /x failed', { hint: 'report it.' }), 'GET /x failed\n  \u2192 report it.'],
    ['a classified error without a hint', new QuotaExhaustedError('quota spent', { resumeAt: new Date(0) }), 'quota spent'],
    ['a config error with its problems', new ConfigError('bad config', ['a: missing']), 'bad config\n  - a: missing'],
    ['any other Error by its message', new TypeError('nope'), 'nope'],
    ['a thrown string', 'plain', 'plain'],
    ['a thrown number', 42, '42'],
    ['undefined', undefined, 'undefined'],
  ])('shows %s', (_case, error, shown) => {
    expect(describeError(error)).toBe(shown);
  });
});
