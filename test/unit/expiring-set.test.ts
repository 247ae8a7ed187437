import { ExpiringSet } from '../../src/lib/expiring-set';

describe('ExpiringSet', () => {
  it('holds a member until its time is up', () => {
    const set = new ExpiringSet(10, 1000);
    set.add('a', 0);
    expect(set.has('a', 999)).toBe(true);
    expect(set.has('a', 1000)).toBe(false);
    expect(set.size).toBe(0);
  });

  it('drops the oldest member past its size, and a re-added member counts as new', () => {
    const set = new ExpiringSet(3, 1000);
    for (const member of ['a', 'b', 'c']) set.add(member, 0);
    set.add('a', 1);
    set.add('d', 2);
    expect(['a', 'b', 'c', 'd'].filter((m) => set.has(m, 3))).toEqual(['a', 'c', 'd']);
    for (let i = 0; i < 1000; i++) set.add(`x${i}`, 3);
    expect(set.size).toBe(3);
  });

  it("lets expired members go as new ones come, so a set only added to holds the last ttl's members", () => {
    const set = new ExpiringSet(1_000_000, 1000);
    for (let t = 0; t < 10_000; t++) set.add(`m${t}`, t);
    expect(set.size).toBe(1000);
    expect(set.has('m8999', 9_999)).toBe(false);
    expect(set.has('m9000', 9_999)).toBe(true);
  });

  it('forgets a deleted member at once', () => {
    const set = new ExpiringSet(3, 1000);
    set.add('a', 0);
    set.delete('a');
    expect(set.has('a', 1)).toBe(false);
  });
});
