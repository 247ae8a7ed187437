/**
 * Keys of many teams waiting in one lane of a WorkQueue: first in, first out within a
 * team, and the teams with keys waiting served in turns (round robin), one key a turn.
 * In one first-in-first-out line a team's burst (10,000 creates) put every other team's
 * single change behind all of it; in turns that change goes out within one turn of each
 * team waiting. A team's line exists only while it holds keys, so memory stays bounded by
 * the keys waiting, as before.
 */
import Denque from 'denque';

/** The team a key belongs to; keys without one (cluster-scoped, system objects) share the lane ''. */
export type TeamOf = (key: string) => string;

/** `team/id` (the controllers' keys): the part before the first slash; '' for a key without one. */
export const teamBeforeSlash: TeamOf = (key) => {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
};

export class TeamTurns {
  private readonly byTeam = new Map<string, Denque<string>>();
  /** The teams holding keys, in the order of their next turn. */
  private readonly turns = new Denque<string>();
  private size = 0;

  constructor(private readonly teamOf: TeamOf) {}

  get length(): number {
    return this.size;
  }

  push(key: string): void {
    const team = this.teamOf(key);
    let keys = this.byTeam.get(team);
    if (!keys) {
      keys = new Denque<string>();
      this.byTeam.set(team, keys);
      this.turns.push(team);
    }
    keys.push(key);
    this.size++;
  }

  /** The oldest key of the team whose turn it is; the team then waits behind the others. */
  shift(): string | undefined {
    const team = this.turns.shift();
    if (team === undefined) return undefined;
    const keys = this.byTeam.get(team)!;
    const key = keys.shift()!;
    this.size--;
    if (keys.length > 0) this.turns.push(team);
    else this.byTeam.delete(team);
    return key;
  }
}
