/**
 * Items of many teams waiting in one line (the keys of a WorkQueue lane, the records of an
 * append log's next commit): first in, first out within a team, and the teams with items
 * waiting served in turns (round robin), one item a turn.
 * In one first-in-first-out line a team's burst (10,000 creates) put every other team's
 * single change behind all of it; in turns that change goes out within one turn of each
 * team waiting. A team's line exists only while it holds keys, so memory stays bounded by
 * the keys waiting, as before.
 */
import Denque from 'denque';
import { known } from './known';

/** The team an item belongs to; items without one (cluster-scoped, system objects) share the lane ''. */
export type TeamOf<T = string> = (item: T) => string;

/** `team/id` (the controllers' keys): the part before the first slash; '' for a key without one. */
export const teamBeforeSlash: TeamOf = (key) => {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
};

export class TeamTurns<T extends string | object = string> {
  private readonly byTeam = new Map<string, Denque<T>>();
  /** The teams holding keys, in the order of their next turn. */
  private readonly turns = new Denque<string>();
  private size = 0;

  constructor(private readonly teamOf: TeamOf<T>) {}

  get length(): number {
    return this.size;
  }

  push(item: T): void {
    const team = this.teamOf(item);
    let items = this.byTeam.get(team);
    if (!items) {
      items = new Denque<T>();
      this.byTeam.set(team, items);
      this.turns.push(team);
    }
    items.push(item);
    this.size++;
  }

  /** The oldest item of the team whose turn it is; the team then waits behind the others. */
  shift(): T | undefined {
    const team = this.turns.shift();
    if (team === undefined) return undefined;
    // A team is in the turns only while it holds items.
    const items = known(this.byTeam.get(team), 'the items of a team in the turns');
    const item = known(items.shift(), 'an item of a team in the turns');
    this.size--;
    if (items.length > 0) this.turns.push(team);
    else this.byTeam.delete(team);
    return item;
  }
}
