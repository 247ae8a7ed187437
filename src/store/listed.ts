/**
 * Every object of a listed kind's team that a filter selects, read a page at a time from
 * the store's ordered indexes (list-index.ts): O(log N + matches). `Store.list` reads every
 * object of the kind instead, so a caller that wants a team's active webhooks or one
 * subscription's deliveries should walk this, not filter a list.
 */
import { PageRequest, Position, readAs, StoredObject, Store } from './types';

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
