/**
 * Which objects of a kind are settled (in a state, their outbox relayed), followed from the
 * store's watch: a benchmark that waits for 100,000 load balancers to run asks this every
 * second, where listing them all every second would read every object each time (and on
 * the embedded store, which parses objects it does not keep parsed, make them all anew).
 */
import type { Store, StoredObject } from '../src/store/types';

export class SettledObjects {
  private readonly settled = new Set<string>();
  private readonly inState = new Set<string>();
  readonly stop: () => void;

  /** Call before the objects are created: only changes after it are seen. */
  constructor(store: Store, kind: string, state: string) {
    this.stop = store.watch(({ type, object }) => {
      if (object.meta.kind !== kind) return;
      const id = object.meta.id;
      const done = type !== 'deleted' && object.status.status === state;
      if (done) this.inState.add(id);
      else this.inState.delete(id);
      if (done && !hasPending(object)) this.settled.add(id);
      else this.settled.delete(id);
    });
  }

  /** Objects in the state. */
  get inStateCount(): number {
    return this.inState.size;
  }

  /** Objects in the state with nothing left in their outbox. */
  get settledCount(): number {
    return this.settled.size;
  }
}

function hasPending(object: StoredObject): boolean {
  const pending = object.status.pending_events;
  return Array.isArray(pending) && pending.length > 0;
}
