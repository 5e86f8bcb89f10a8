import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/core/errors.js';
import { compareIds } from '../../src/extractors/verify-compare.js';
import { verifyExitCode } from '../../src/extractors/verify.js';

describe('compareIds', () => {
  const cases: Array<{
    name: string;
    api: string[];
    warehouse: string[];
    status: 'agree' | 'differ';
    apiCount: number;
    warehouseCount: number;
    missing: string[];
    extra: string[];
  }> = [
    { name: 'both empty', api: [], warehouse: [], status: 'agree', apiCount: 0, warehouseCount: 0, missing: [], extra: [] },
    {
      name: 'same ids, other order',
      api: ['3', '1', '2'],
      warehouse: ['2', '3', '1'],
      status: 'agree',
      apiCount: 3,
      warehouseCount: 3,
      missing: [],
      extra: [],
    },
    {
      name: 'the API lists one the warehouse lacks',
      api: ['1', '2', '3'],
      warehouse: ['1', '3'],
      status: 'differ',
      apiCount: 3,
      warehouseCount: 2,
      missing: ['2'],
      extra: [],
    },
    {
      name: 'a live row the API no longer lists',
      api: ['1'],
      warehouse: ['1', '9'],
      status: 'differ',
      apiCount: 1,
      warehouseCount: 2,
      missing: [],
      extra: ['9'],
    },
    {
      name: 'both ways at once, sorted',
      api: ['b', 'a', 'x'],
      warehouse: ['x', 'z', 'y'],
      status: 'differ',
      apiCount: 3,
      warehouseCount: 3,
      missing: ['a', 'b'],
      extra: ['y', 'z'],
    },
    {
      name: 'empty list, rows left in the warehouse',
      api: [],
      warehouse: ['5', '4'],
      status: 'differ',
      apiCount: 0,
      warehouseCount: 2,
      missing: [],
      extra: ['4', '5'],
    },
    { name: 'empty warehouse', api: ['7'], warehouse: [], status: 'differ', apiCount: 1, warehouseCount: 0, missing: ['7'], extra: [] },
    {
      name: 'an id listed twice counts once',
      api: ['1', '2', '2'],
      warehouse: ['1', '2'],
      status: 'agree',
      apiCount: 2,
      warehouseCount: 2,
      missing: [],
      extra: [],
    },
    // Doubles would make these equal: 4600000000123456789 and ...788 are the same double.
    {
      name: '19-digit ids compare as exact text',
      api: ['4600000000123456789'],
      warehouse: ['4600000000123456788'],
      status: 'differ',
      apiCount: 1,
      warehouseCount: 1,
      missing: ['4600000000123456789'],
      extra: ['4600000000123456788'],
    },
    {
      name: '19-digit ids that are equal',
      api: ['4600000000123456789', '4600000000123456790'],
      warehouse: ['4600000000123456790', '4600000000123456789'],
      status: 'agree',
      apiCount: 2,
      warehouseCount: 2,
      missing: [],
      extra: [],
    },
    {
      name: 'leading zeros are part of the id',
      api: ['0012'],
      warehouse: ['12'],
      status: 'differ',
      apiCount: 1,
      warehouseCount: 1,
      missing: ['0012'],
      extra: ['12'],
    },
    {
      name: 'case matters (plan codes)',
      api: ['Basic'],
      warehouse: ['basic'],
      status: 'differ',
      apiCount: 1,
      warehouseCount: 1,
      missing: ['Basic'],
      extra: ['basic'],
    },
  ];
  it.each(cases)('$name', (c) => {
    const r = compareIds(c.api, c.warehouse);
    expect(r).toEqual({ status: c.status, apiCount: c.apiCount, warehouseCount: c.warehouseCount, missing: c.missing, extra: c.extra });
  });

  it('accepts sets as they are', () => {
    const r = compareIds(new Set(['1', '2']), new Set(['2', '3']));
    expect(r.missing).toEqual(['1']);
    expect(r.extra).toEqual(['3']);
  });
});

describe('verifyExitCode', () => {
  const cases: Array<{
    name: string;
    streams: Array<{ status: 'agree' | 'differ' | 'incomplete' | 'failed'; errorKind?: 'authorization' | 'fatal' | 'retriable' }>;
    failures: Array<{ kind: 'authorization' | 'config' | 'fatal' | 'incomplete' }>;
    code: number;
  }> = [
    { name: 'everything agrees', streams: [{ status: 'agree' }, { status: 'agree' }], failures: [], code: ExitCode.ok },
    { name: 'nothing to check', streams: [], failures: [], code: ExitCode.ok },
    { name: 'a stream differs', streams: [{ status: 'agree' }, { status: 'differ' }], failures: [], code: ExitCode.partial },
    { name: 'a stream is incomplete', streams: [{ status: 'agree' }, { status: 'incomplete' }], failures: [], code: ExitCode.partial },
    { name: 'a connection stopped by the bound', streams: [], failures: [{ kind: 'incomplete' }], code: ExitCode.partial },
    {
      name: 'one stream failed, others checked',
      streams: [{ status: 'agree' }, { status: 'failed', errorKind: 'fatal' }],
      failures: [],
      code: ExitCode.partial,
    },
    {
      name: 'every stream unauthorized',
      streams: [
        { status: 'failed', errorKind: 'authorization' },
        { status: 'failed', errorKind: 'authorization' },
      ],
      failures: [],
      code: ExitCode.authorization,
    },
    { name: 'the connection unauthorized', streams: [], failures: [{ kind: 'authorization' }], code: ExitCode.authorization },
    { name: 'the connection misconfigured', streams: [], failures: [{ kind: 'config' }], code: ExitCode.config },
    {
      name: 'every stream failed, mixed causes',
      streams: [
        { status: 'failed', errorKind: 'authorization' },
        { status: 'failed', errorKind: 'fatal' },
      ],
      failures: [],
      code: ExitCode.unexpected,
    },
    { name: 'a connection failed, another checked', streams: [{ status: 'agree' }], failures: [{ kind: 'fatal' }], code: ExitCode.partial },
  ];
  it.each(cases)('$name → $code', (c) => {
    expect(verifyExitCode(c.streams, c.failures)).toBe(c.code);
  });
});
