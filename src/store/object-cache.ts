/**
 * The objects a store serves reads from, by kind, each kind's held per team
 * (team-partition.ts), and the ordered indexes of its listed kinds for pages
 * (list-index.ts), kept in step: every change goes through `set` and `delete`. Both stores
 * answer `get`, `list`, `page`, `named` and `count` with it: the embedded store holds its
 * committed objects here, the Kubernetes store the custom resources its watches bring.
 *
 * What is kept per object is the store's own (`E`), under `team/id` in its kind: the object
 * itself, or the object with what it was read from; `objectOf` takes the object out.
 */
import { promised } from '../lib/promised';
import { ListedKind, ListIndexes } from './list-index';
import { TeamPartition } from './team-partition';
import { Page, PageRequest, readAs, StoredObject } from './types';

/** The team of a `team/id` key: team ids hold no `/`. */
const teamOfKey = (key: string) => key.slice(0, key.indexOf('/'));

export class ObjectCache<E> {
  private readonly kinds = new Map<string, TeamPartition<E>>();
  /** Ordered indexes of `kinds` for pages, changed wherever `kinds` is (set, delete). */
  private readonly indexes: ListIndexes<E>;

  constructor(
    listed: readonly ListedKind[] | undefined,
    private readonly objectOf: (entry: E) => StoredObject,
  ) {
    this.indexes = new ListIndexes(listed, objectOf);
  }

  /** What is kept of a kind under `team/id`. */
  entry(kind: string, key: string): E | undefined {
    return this.kinds.get(kind)?.get(key);
  }

  set(kind: string, key: string, entry: E): void {
    let forKind = this.kinds.get(kind);
    if (!forKind) this.kinds.set(kind, (forKind = new TeamPartition(teamOfKey)));
    const previous = forKind.get(key);
    // A new object's id, held once for the partition and the index.
    const id = forKind.set(key, entry);
    this.indexes.replace(kind, previous, entry, id);
  }

  delete(kind: string, key: string): void {
    const previous = this.kinds.get(kind)?.get(key);
    if (previous === undefined) return;
    this.kinds.get(kind)?.delete(key);
    this.indexes.replace(kind, previous, undefined);
  }

  /** The `team/id` keys of a kind, as they are kept (no array made). */
  keysOf(kind: string): Iterable<string> {
    return this.kinds.get(kind)?.keys() ?? [];
  }

  /** What is kept of every kind. */
  *all(): Generator<E> {
    for (const forKind of this.kinds.values()) yield* forKind.values();
  }

  /** What is kept of a kind, of one team or of every team. */
  values(kind: string, team?: string): Iterable<E> {
    return this.kinds.get(kind)?.values(team) ?? [];
  }

  // The reads of the Store interface, as properties the stores take over as their own.

  readonly peek = <S, St>(kind: string, team: string, id: string): StoredObject<S, St> | undefined => {
    const entry = this.kinds.get(kind)?.getOfTeam(team, id);
    return entry && readAs<S, St>(this.objectOf(entry));
  };

  readonly get = <S, St>(kind: string, team: string, id: string): Promise<StoredObject<S, St> | undefined> => promised(() => this.peek<S, St>(kind, team, id));

  readonly list = <S, St>(kind: string, team?: string): Promise<StoredObject<S, St>[]> =>
    promised(() => Array.from(this.values(kind, team), (entry) => readAs<S, St>(this.objectOf(entry))));

  readonly keys = (kind: string): Promise<string[]> => promised(() => Array.from(this.kinds.get(kind)?.keys() ?? []));

  readonly page = (kind: string, team: string | undefined, request: PageRequest): Promise<Page> => promised(() => this.indexes.of(kind).page(team, request));

  readonly named = (kind: string, team: string, name: string): Promise<StoredObject[]> => promised(() => this.indexes.of(kind).named(team, name));

  readonly count = (kind: string, team: string): Promise<number> => promised(() => this.indexes.of(kind).count(team));
}
