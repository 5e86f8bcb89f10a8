import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/core/errors.js';
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

describe('exitCodeOf: what a run ends with', () => {
  const cases: Array<{ name: string; orgs: OrganizationOutcome[]; failures: ConnectionFailure[]; expected: ExitCode }> = [
    { name: 'everything read', orgs: [org('ok')], failures: [], expected: ExitCode.ok },
    { name: 'busy elsewhere is not a failure', orgs: [org('ok'), org('busy')], failures: [], expected: ExitCode.ok },
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
  it.each(cases)('$name', ({ orgs, failures, expected }) => {
    expect(exitCodeOf(orgs, failures)).toBe(expected);
  });
});
