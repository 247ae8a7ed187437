/**
 * TeamPartition: a map of keys held per team must answer every read exactly as one map
 * of every key would, with a team's values being the keys of that team, whatever the
 * sets and deletions (including a team's last key going and coming back).
 */
import fc from 'fast-check';
import { TeamPartition } from '../../src/store/team-partition';

const teamOf = (key: string) => key.slice(0, key.indexOf('/'));

describe('TeamPartition', () => {
  it('reads like one map, and a team reads its own keys alone', () => {
    const key = fc.tuple(fc.constantFrom('team_a', 'team_b', 'team_c'), fc.constantFrom('1', '2', '3', 'x/y')).map(([team, id]) => `${team}/${id}`);
    const operation = fc.oneof(
      fc.record({ op: fc.constant('set' as const), key, value: fc.integer() }),
      fc.record({ op: fc.constant('delete' as const), key, value: fc.constant(0) }),
    );
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 60 }), (operations) => {
        const partition = new TeamPartition<number>(teamOf);
        const one = new Map<string, number>();
        for (const { op, key: k, value } of operations) {
          if (op === 'set') {
            partition.set(k, value);
            one.set(k, value);
          } else {
            expect(partition.delete(k)).toBe(one.delete(k));
          }
        }
        const sorted = <T>(items: Iterable<T>) => [...items].sort();
        expect(sorted(partition.entries())).toEqual(sorted(one.entries()));
        expect(sorted(partition.keys())).toEqual(sorted(one.keys()));
        expect(sorted(partition.values())).toEqual(sorted(one.values()));
        for (const team of ['team_a', 'team_b', 'team_c', 'team_none']) {
          const ofTeam = [...one].filter(([k]) => teamOf(k) === team).map(([, v]) => v);
          expect(sorted(partition.values(team))).toEqual(sorted(ofTeam));
        }
        for (const k of ['team_a/1', 'team_b/x/y', 'team_c/3']) {
          expect(partition.get(k)).toBe(one.get(k));
        }
      }),
    );
  });
});
