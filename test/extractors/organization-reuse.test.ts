import { describe, expect, it } from 'vitest';
import { organizationsForUnlistedFamily } from '../../src/extractors/discovery.js';

describe('organizationsForUnlistedFamily (A13: a family whose organization list answers 404)', () => {
  const cases: Array<{ name: string; listed: string[]; active: string[]; wanted?: string[]; expected: string[] }> = [
    { name: 'no ids named: every active id the other families listed', listed: ['1', '2', '3'], active: ['1', '3'], expected: ['1', '3'] },
    { name: 'nothing listed and nothing named: none', listed: [], active: [], expected: [] },
    {
      name: 'named ids all listed elsewhere: those, inactive or not (named, A22)',
      listed: ['1', '2', '3'],
      active: ['1', '3'],
      wanted: ['2', '3'],
      expected: ['2', '3'],
    },
    {
      name: 'a named id no other family listed: only such ids (the family has ids of its own, A31)',
      listed: ['b1', 'i1'],
      active: ['b1', 'i1'],
      wanted: ['b1', 'i1', 'x1'],
      expected: ['x1'],
    },
    { name: 'nothing listed, ids named: the named ids', listed: [], active: [], wanted: ['7', '8'], expected: ['7', '8'] },
    { name: 'an inactive named id is not a new one, and named: read', listed: ['1'], active: [], wanted: ['1'], expected: ['1'] },
  ];
  it.each(cases)('$name', ({ listed, active, wanted, expected }) => {
    // The organization records the other families listed; those not active say is_org_active: false.
    const records = new Map(listed.map((id) => [id, { organization_id: id, is_org_active: active.includes(id) }]));
    expect(organizationsForUnlistedFamily({ listed: records, wanted })).toEqual(expected);
  });
});
