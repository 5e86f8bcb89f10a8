import { describe, expect, it } from 'vitest';
import { isSensitiveName, redactByName, redactUrlQuery } from '../../src/normalize/redaction.js';

describe('redactUrlQuery', () => {
  it.each([
    ['https://sync.example.com/hooks/acme/books/1?secret=s3cr3t', 'https://sync.example.com/hooks/acme/books/1?secret=[redacted]'],
    ['https://h.example.com/x?a=1&token=abc&b=2', 'https://h.example.com/x?a=1&token=[redacted]&b=2'],
    ['https://h.example.com/x?API_KEY=k#frag', 'https://h.example.com/x?API_KEY=[redacted]#frag'],
    ['https://h.example.com/x?access%5Ftoken=t', 'https://h.example.com/x?access%5Ftoken=[redacted]'],
    ['https://h.example.com/x?page=2&entity=invoice', 'https://h.example.com/x?page=2&entity=invoice'],
    ['https://h.example.com/x?secret=', 'https://h.example.com/x?secret='],
    ['https://h.example.com/token/path', 'https://h.example.com/token/path'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrlQuery(url)).toBe(expected);
  });
});

describe('isSensitiveName', () => {
  it.each([
    ['Authorization', true],
    ['X-Svcsync-Secret', true],
    ['x-api-key', true],
    ['password', true],
    ['X-Hub-Signature', true],
    ['Cookie', true],
    ['X-Source', false],
    ['invoice_id', false],
    ['Content-Type', false],
  ])('%s: %s', (name, expected) => {
    expect(isSensitiveName(name)).toBe(expected);
  });
});

describe('redactByName', () => {
  const rule = { urls: ['url'], pairs: ['headers', 'query_parameters'], name: 'param_name', value: 'param_value' };

  it('replaces credentials found by name and keeps everything else, without touching the record given', () => {
    const raw = {
      webhook_id: '1',
      url: 'https://h.example.com/x?secret=abc&entity=invoice',
      headers: [
        { param_name: 'Authorization', param_value: 'Bearer xyz' },
        { param_name: 'X-Source', param_value: 'svc' },
      ],
      query_parameters: [{ param_name: 'token', param_value: '' }],
      form_data: [{ param_name: 'password', param_value: 'not in the rule' }],
    };
    const before = JSON.stringify(raw);
    const out = redactByName(rule, raw);
    expect(out).toEqual({
      ...raw,
      url: 'https://h.example.com/x?secret=[redacted]&entity=invoice',
      headers: [
        { param_name: 'Authorization', param_value: '[redacted]' },
        { param_name: 'X-Source', param_value: 'svc' },
      ],
    });
    expect(JSON.stringify(raw)).toBe(before);
  });

  it('returns the record itself when nothing is sensitive, and skips odd shapes', () => {
    const raw = { url: 42, headers: 'Authorization: x', query_parameters: [null, 'token', { param_name: 5, param_value: 'v' }] };
    expect(redactByName(rule, raw)).toBe(raw);
  });
});
