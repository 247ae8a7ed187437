import { getOrCreate } from '../../src/lib/maps';

describe('getOrCreate', () => {
  it('creates and keeps a missing value once, then hands back the same one', () => {
    const byTeam = new Map<string, Set<string>>();
    let made = 0;
    const create = () => {
      made++;
      return new Set<string>();
    };
    getOrCreate(byTeam, 'a', create).add('x');
    getOrCreate(byTeam, 'a', create).add('y');
    expect(made).toBe(1);
    expect([...(byTeam.get('a') ?? [])]).toEqual(['x', 'y']);
  });
});
