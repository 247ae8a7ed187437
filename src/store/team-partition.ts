/**
 * One kind's objects (or what a store keeps per object) by key, held per team, so that
 * `Store.list(kind, team)` reads that team's objects alone: the controllers and the agent
 * list a kind of one team on each reconcile or turn, and with one map per kind that read
 * every team's objects of the kind and threw most of them away.
 *
 * Keys are the store's own; `teamOf` finds the team in one.
 */
export class TeamPartition<V> {
  private readonly teams = new Map<string, Map<string, V>>();

  constructor(private readonly teamOf: (key: string) => string) {}

  get(key: string): V | undefined {
    return this.teams.get(this.teamOf(key))?.get(key);
  }

  /** `get` for a caller that knows the key's team: no team cut out of the key again (a read of every request). */
  getOfTeam(team: string, key: string): V | undefined {
    return this.teams.get(team)?.get(key);
  }

  set(key: string, value: V): void {
    const team = this.teamOf(key);
    let values = this.teams.get(team);
    if (!values) this.teams.set(team, (values = new Map<string, V>()));
    values.set(key, value);
  }

  delete(key: string): boolean {
    const team = this.teamOf(key);
    const values = this.teams.get(team);
    if (!values?.delete(key)) return false;
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
    for (const values of this.teams.values()) yield* values.keys();
  }

  *entries(): Generator<[string, V]> {
    for (const values of this.teams.values()) yield* values.entries();
  }
}
