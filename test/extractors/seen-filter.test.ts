import { describe, expect, it } from 'vitest';
import { SeenFilter } from '../../src/extractors/seen-filter.js';

describe('SeenFilter', () => {
  it('never forgets an id it was given, including 19-digit ones and ids that differ in one digit', () => {
    const filter = new SeenFilter();
    const ids = Array.from({ length: 100_000 }, (_, i) => `46000000001234${String(i).padStart(5, '0')}`);
    for (const id of ids) filter.add(id);
    expect(ids.filter((id) => !filter.mightHave(id))).toEqual([]);
  });

  it('answers "not seen" for nearly every id it was not given, even at 1,000,000 ids', () => {
    const filter = new SeenFilter();
    for (let i = 0; i < 1_000_000; i++) filter.add(`seen-${i}`);
    let falsePositives = 0;
    for (let i = 0; i < 100_000; i++) if (filter.mightHave(`other-${i}`)) falsePositives++;
    // Theoretical rate at this load: about 2.2 %.
    expect(falsePositives / 100_000).toBeLessThan(0.04);
  });

  it('says nothing was seen while empty, and few false positives at a page scale', () => {
    const filter = new SeenFilter();
    expect(filter.mightHave('1')).toBe(false);
    for (let i = 0; i < 10_000; i++) filter.add(String(i));
    let hits = 0;
    for (let i = 10_000; i < 20_000; i++) if (filter.mightHave(String(i))) hits++;
    expect(hits).toBeLessThan(5);
  });
});
