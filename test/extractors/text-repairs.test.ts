import { describe, expect, it } from 'vitest';
import { listRepairs, recordRepairs, repairMessage } from '../../src/extractors/text-repairs.js';
import { WarningTally } from '../../src/extractors/stream-tally.js';

describe('repaired text as warnings of the records that held it (A38)', () => {
  it('maps list paths to the record at that position and the field within it, folded per field by the tally', () => {
    const records = [{ id: 'C1' }, { id: 'C2' }, { id: 'C3' }];
    const paths = ['contacts[0].contact_name', 'contacts[2].contact_name', 'contacts[2].line_items[4].description', 'message'];
    const warnings = listRepairs('inventory_contacts', records, paths, repairMessage('sqlite'));
    expect(warnings.map((w) => [w.id, w.field, w.kind])).toEqual([
      ['C1', 'contact_name', 'text_repaired'],
      ['C3', 'contact_name', 'text_repaired'],
      ['C3', 'line_items[4].description', 'text_repaired'],
      ['(the answer, outside its records)', 'message', 'text_repaired'],
    ]);
    const tally = new WarningTally();
    tally.addAll(warnings);
    expect(tally.entries().map((c) => [c.field, c.count, c.example])).toEqual([
      ['contact_name', 2, 'C1'],
      ['line_items[].description', 1, 'C3'],
      ['message', 1, '(the answer, outside its records)'],
    ]);
  });

  it('maps a single record’s paths, under its key or an array of one, to its fields', () => {
    const paths = ['salesorder.customer_name', 'salesorder[0].notes', 'salesorder.line_items[1].description'];
    expect(recordRepairs('inventory_sales_orders', 'S1', paths, 'm').map((w) => w.field)).toEqual([
      'customer_name',
      'notes',
      'line_items[1].description',
    ]);
  });

  it('names Postgres only for a Postgres warehouse', () => {
    expect(repairMessage('postgres')).toContain('Postgres cannot store');
    expect(repairMessage('sqlite')).not.toContain('Postgres');
  });
});
