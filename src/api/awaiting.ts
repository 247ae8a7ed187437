/**
 * Routes record what is wanted and the reconciler, the only writer of a driven family's
 * status, carries it out. An answer should still show the move begun, as the API always
 * has (`deleted`, `stopping`, `cancelled`): so a route makes its write, then waits for
 * the reconciler's status write through the store's watch. The reconciler runs on the
 * leader, maybe another replica; should it not have answered within the wait, the route
 * answers with the state the request leads to (the caller's projection), and a GET shows
 * the reconciler's own write moments later.
 */
import type { Store, StoredObject } from '../store/types';

const WAIT_MS = 5_000;

/** An object with the spec and status of R, whatever else R's type says. */
type Of<R extends StoredObject<unknown, unknown>> = StoredObject<R['spec'], R['status']>;

export async function writeAndAwait<R extends StoredObject<unknown, unknown>>(
  store: Store,
  kind: string,
  team: string,
  id: string,
  write: () => Promise<unknown>,
  done: (resource: Of<R>) => boolean,
  waitMs = WAIT_MS,
): Promise<Of<R> | undefined> {
  let resolve!: (resource: Of<R> | undefined) => void;
  const settled = new Promise<Of<R> | undefined>((r) => (resolve = r));
  // Watching before the write: the reconciler's answer may come before the write returns.
  const unwatch = store.watch((event) => {
    const { meta } = event.object;
    if (meta.kind !== kind || meta.team !== team || meta.id !== id) return;
    if (event.type === 'deleted') resolve(undefined);
    else {
      // The watch carries every kind untyped; this object is of `kind`, whose objects are R.
      const object = event.object as Of<R>;
      if (done(object)) resolve(object);
    }
  });
  const timer = setTimeout(() => {
    resolve(undefined);
  }, waitMs);
  try {
    await write();
    const current = await store.get<R['spec'], R['status']>(kind, team, id);
    if (current && done(current)) return current;
    return await settled;
  } finally {
    clearTimeout(timer);
    unwatch();
  }
}
