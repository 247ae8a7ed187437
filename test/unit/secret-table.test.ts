/**
 * SecretTable: listSecrets(prefix) as a range of names must answer exactly what a scan of
 * every secret with startsWith did, whatever the names, teams, writes and deletions.
 */
import fc from 'fast-check';
import { SecretTable } from '../../src/store/secret-table';

interface Entry {
  team: string;
  name: string;
}

describe('SecretTable', () => {
  it('answers a prefix with exactly the names a scan would find, across teams, updates and deletions', () => {
    // Few letters, so that names share prefixes and one name is often the prefix of another.
    const word = fc.stringMatching(/^[ab-]{0,4}$/);
    const operation = fc.oneof(
      fc.record({ op: fc.constant('set' as const), team: fc.constantFrom('team_a', 'team_b'), name: word }),
      fc.record({ op: fc.constant('delete' as const), team: fc.constantFrom('team_a', 'team_b'), name: word }),
    );
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 60 }), fc.array(word, { minLength: 1, maxLength: 5 }), (operations, prefixes) => {
        const table = new SecretTable<Entry>();
        const scanned = new Map<string, Entry>();
        for (const { op, team, name } of operations) {
          const key = `${team}/${name}`;
          if (op === 'set') {
            table.set(key, { team, name });
            scanned.set(key, { team, name });
          } else {
            table.delete(key);
            scanned.delete(key);
          }
        }
        expect(table.size).toBe(scanned.size);
        for (const prefix of ['', ...prefixes]) {
          const expected = [...scanned.values()]
            .filter((e) => e.name.startsWith(prefix))
            .map((e) => `${e.team}/${e.name}`)
            .sort();
          expect([...table.withPrefix(prefix)].map((e) => `${e.team}/${e.name}`).sort()).toEqual(expected);
        }
      }),
    );
  });

  it('hands out the entries of a prefix in order of name, then team', () => {
    const table = new SecretTable<Entry>();
    for (const [team, name] of [
      ['team_b', 'usage-interval-lb_2'],
      ['team_a', 'usage-limits'],
      ['team_a', 'usage-interval-lb_1'],
      ['team_b', 'usage-limits'],
      ['team_a', 'apikey-x'],
    ]) {
      table.set(`${team}/${name}`, { team, name });
    }
    expect([...table.withPrefix('usage-limits')].map((e) => e.team)).toEqual(['team_a', 'team_b']);
    expect([...table.withPrefix('usage-interval-')].map((e) => e.name)).toEqual(['usage-interval-lb_1', 'usage-interval-lb_2']);
    expect([...table.withPrefix('session-')]).toEqual([]);
  });
});
