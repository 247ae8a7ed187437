/**
 * One kind's objects (or what a store keeps per object) by key, held per team, so that
 * `Store.list(kind, team)` reads that team's objects alone: the controllers and the agent
 * list a kind of one team on each reconcile or turn, and with one map per kind that read
 * every team's objects of the kind and threw most of them away.
 *
 * Keys are the store's own, `<team>/<rest>`; `teamOf` finds the team in one. A team's map
 * holds the rest alone, as a string of its own: the key of a map of every object, held as
 * a slice of the store's longer key (kind, team and id), kept all of it alive, about 150
 * bytes an object where the id alone is 40 or so.
 */
import { ownCopy } from '../lib/own-copy';

export class TeamPartition<V> {
  private readonly teams = new Map<string, Map<string, V>>();

  constructor(private readonly teamOf: (key: string) => string) {}

  get(key: string): V | undefined {
    const team = this.teamOf(key);
    return this.teams.get(team)?.get(key.slice(team.length + 1));
  }

  /** `get` for a caller that knows the key's team and the rest of it: no key made or cut (a read of every request). */
  getOfTeam(team: string, rest: string): V | undefined {
    return this.teams.get(team)?.get(rest);
  }

  /** Sets the key's value; for a new key, answers the rest of it as held here, for others to hold the same string. */
  set(key: string, value: V): string | undefined {
    const team = this.teamOf(key);
    const rest = key.slice(team.length + 1);
    let values = this.teams.get(team);
    if (!values) this.teams.set(team, (values = new Map<string, V>()));
    // A key already there keeps its string: only a new one is copied.
    if (values.has(rest)) {
      values.set(rest, value);
      return undefined;
    }
    const held = ownCopy(rest);
    values.set(held, value);
    return held;
  }

  delete(key: string): boolean {
    const team = this.teamOf(key);
    const values = this.teams.get(team);
    if (!values?.delete(key.slice(team.length + 1))) return false;
    if (values.size === 0) this.teams.delete(team);
    return true;
  }

  /** The team's values; every team's without one. */
  *values(team?: string): Generator<V> {
    if (team !== undefined) {
      yield* this.teams.get(team)?.values() ?? [];
      return;
    }
    for (const values of this.teams.values()) yield* values.values();
  }

  *keys(): Generator<string> {
    for (const [team, values] of this.teams) for (const rest of values.keys()) yield `${team}/${rest}`;
  }

  *entries(): Generator<[string, V]> {
    for (const [team, values] of this.teams) for (const [rest, value] of values) yield [`${team}/${rest}`, value];
  }
}
