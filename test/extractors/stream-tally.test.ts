import { describe, expect, it } from 'vitest';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { WarningTally } from '../../src/extractors/stream-tally.js';
import type { NormalizeWarning } from '../../src/normalize/normalize.js';

const w = (
  id: string,
  field: string,
  kind: NormalizeWarning['kind'],
  table = 'inventory_sales_orders__custom_fields',
): NormalizeWarning => ({ table, id, field, kind, message: `${kind} at ${field}` });

describe('WarningTally', () => {
  it('counts warnings per table, field (positions folded) and kind, keeping the first example', () => {
    const t = new WarningTally();
    // 230 records, each with the same two quirks in several positions: the flood of rule 7.
    for (let r = 0; r < 230; r++) {
      for (let i = 0; i < 6; i++) t.add(w(`SO${r}`, `custom_fields[${i}].custom_field_id`, 'no_child_key'));
      t.add(w(`SO${r}`, 'documents[0]', 'element_not_object', 'inventory_sales_orders__documents'));
    }
    t.add(w('SO9', 'line_items[1].line_items[0].rate', 'value', 'inventory_sales_orders__line_items'));
    expect(t.entries().map((c) => [c.table, c.field, c.kind, c.count, c.example])).toEqual([
      ['inventory_sales_orders__custom_fields', 'custom_fields[].custom_field_id', 'no_child_key', 1380, 'SO0'],
      ['inventory_sales_orders__documents', 'documents[]', 'element_not_object', 230, 'SO0'],
      ['inventory_sales_orders__line_items', 'line_items[].line_items[].rate', 'value', 1, 'SO9'],
    ]);
    expect(t.total()).toBe(1611);
  });

  it('keeps the same field apart when the kind differs', () => {
    const t = new WarningTally();
    t.addAll([
      w('A', 'custom_fields[0].custom_field_id', 'no_child_key'),
      w('B', 'custom_fields[3].custom_field_id', 'repeated_child_key'),
    ]);
    expect(t.entries().map((c) => c.kind)).toEqual(['no_child_key', 'repeated_child_key']);
  });

  it('logs one line per table, field and kind, with the count and an example record', () => {
    const t = new WarningTally();
    for (let r = 0; r < 50; r++) t.add(w(`SO${r}`, `custom_fields[${r % 3}].custom_field_id`, 'no_child_key'));
    const log = new CapturedLog();
    t.log(createLogger({ level: 'info', secrets: new SecretRegistry(), destination: log }), { stream: 'inventory.sales_orders' });
    expect(log.records).toHaveLength(1);
    expect(log.records[0]).toMatchObject({
      count: 50,
      example_record: 'SO0',
      field: 'custom_fields[].custom_field_id',
      stream: 'inventory.sales_orders',
    });
    expect(String(log.records[0]!['msg'])).toContain('50 records');
  });
});
