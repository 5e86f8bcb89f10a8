import { describe, expect, it } from 'vitest';
import { ExitCode, WarehouseError, type WarehouseFault } from '../../src/core/errors.js';
import type { OrganizationOutcome } from '../../src/extractors/organization-sync.js';
import { exitCodeOf, type ConnectionFailure } from '../../src/extractors/sync-run.js';

const org = (status: OrganizationOutcome['status']): OrganizationOutcome => ({
  connection: 'acme',
  organizationId: '1',
  families: ['books'],
  status,
  streams: [],
});
const failure = (kind: ConnectionFailure['kind']): ConnectionFailure => ({ connection: 'acme', kind, error: 'x' });
const lostLease = (): OrganizationOutcome => ({ ...org('failed'), failure: 'lease' });
const fault = (f: WarehouseFault): WarehouseError => new WarehouseError('x', { fault: f, warehouse: 'sqlite:/w.db' });

describe('exitCodeOf: what a run ends with', () => {
  const cases: Array<{
    name: string;
    orgs: OrganizationOutcome[];
    failures: ConnectionFailure[];
    fault?: WarehouseError;
    expected: ExitCode;
  }> = [
    { name: 'everything read', orgs: [org('ok')], failures: [], expected: ExitCode.ok },
    { name: 'busy elsewhere is unfinished here: partial', orgs: [org('ok'), org('busy')], failures: [], expected: ExitCode.partial },
    { name: 'only busy organizations: partial', orgs: [org('busy')], failures: [], expected: ExitCode.partial },
    { name: "a lease lost with this process's own connection: partial", orgs: [lostLease()], failures: [], expected: ExitCode.partial },
    {
      name: 'a transient warehouse fault past its retries: partial',
      orgs: [org('ok'), org('failed')],
      failures: [],
      fault: fault('connection_lost'),
      expected: ExitCode.partial,
    },
    { name: 'a full disk: partial', orgs: [org('failed')], failures: [], fault: fault('disk_full'), expected: ExitCode.partial },
    {
      name: 'a read-only warehouse: configuration error',
      orgs: [org('ok'), org('failed')],
      failures: [],
      fault: fault('read_only'),
      expected: ExitCode.config,
    },
    {
      name: "a warehouse fault svcsync cannot explain, every organization's: unexpected",
      orgs: [org('failed')],
      failures: [],
      fault: fault('other'),
      expected: ExitCode.unexpected,
    },
    {
      name: 'a warehouse fault that failed no organization still fails the run',
      orgs: [org('ok')],
      failures: [],
      fault: fault('disk_full'),
      expected: ExitCode.partial,
    },
    { name: 'a spent quota: partial', orgs: [org('quota')], failures: [], expected: ExitCode.partial },
    {
      name: 'one organization failed beside one read: partial',
      orgs: [org('ok'), org('failed')],
      failures: [],
      expected: ExitCode.partial,
    },
    { name: 'the token refused everywhere', orgs: [], failures: [failure('authorization')], expected: ExitCode.authorization },
    { name: 'a configuration that names nothing there (--org 123)', orgs: [], failures: [failure('config')], expected: ExitCode.config },
    {
      name: 'a configuration failure beside an unexpected one: unexpected',
      orgs: [],
      failures: [failure('config'), failure('fatal')],
      expected: ExitCode.unexpected,
    },
    { name: 'every organization failed', orgs: [org('failed')], failures: [], expected: ExitCode.unexpected },
  ];
  it.each(cases)('$name', ({ orgs, failures, fault, expected }) => {
    expect(exitCodeOf(orgs, failures, fault ?? null)).toBe(expected);
  });
});
