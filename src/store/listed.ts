/**
 * Every object of a listed kind's team that a filter selects, read a page at a time from
 * the store's ordered indexes (list-index.ts): O(log N + matches). `Store.list` reads every
 * object of the kind instead, so a caller that wants a team's active webhooks or one
 * subscription's deliveries should walk this, not filter a list.
 */
import { PageRequest, Position, readAs, StoredObject, Store } from './types';
import { BACKGROUND_TURN_BUDGET_MS, yieldIfDue } from '../lib/event-loop-turns';

const PAGE_SIZE = 500;

export async function* listedObjects<S, St>(
  store: Store,
  kind: string,
  team: string | undefined,
  filter: Pick<PageRequest, 'status' | 'where' | 'created'>,
): AsyncGenerator<StoredObject<S, St>> {
  let after: Position | undefined;
  do {
    const { items, next } = await store.page(kind, team, { sort: 'created_at', order: 'asc', ...filter, after, limit: PAGE_SIZE });
    for (const item of items) yield readAs<S, St>(item);
    after = next ?? undefined;
  } while (after);
}

/**
 * Every object of a kind, of every team, one at a time (a sweep of a whole kind): read by
 * key as the walk reaches it, rather than `Store.list` making every object at once (the
 * embedded store parses those it does not keep parsed), and giving the event loop back
 * between turns.
 */
export async function* eachObject<S, St>(store: Store, kind: string): AsyncGenerator<StoredObject<S, St>> {
  for (const key of await store.keys(kind)) {
    const slash = key.indexOf('/');
    const object = store.peek<S, St>(kind, key.slice(0, slash), key.slice(slash + 1));
    if (object) yield object;
    const due = yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
    if (due) await due;
  }
}

/** What listedObjects walks, in one array. */
export async function listedArray<S, St>(
  store: Store,
  kind: string,
  team: string | undefined,
  filter: Pick<PageRequest, 'status' | 'where' | 'created'>,
): Promise<StoredObject<S, St>[]> {
  const all: StoredObject<S, St>[] = [];
  for await (const object of listedObjects<S, St>(store, kind, team, filter)) all.push(object);
  return all;
}
