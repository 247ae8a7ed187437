/**
 * The first status a create carried sealed in annotations (first-status.ts) is written to
 * the status subresource by the object's next status write: a reconciler's, when its
 * provider is quick, which so spares a write. Should none come within
 * FIRST_STATUS_WRITE_MS (a slow provider, a kind nothing writes again, such as an agent's
 * message), the replica that created the object writes it as it is, so that kubectl and
 * kstatus see it. A write that lost to another writer's (a 409) is done already.
 */
import type { Logger } from 'pino';
import { ConflictError, NotFoundError, StoredObject } from '../types';
import { messageOf } from '../../lib/unknown-values';

/**
 * Longer than a saturated operator takes from create to running on the cluster benchmark
 * (p99 3-5 s on 2 CPUs): at 2 s its writes came back under load, 2.6-2.9 a load balancer.
 */
export const FIRST_STATUS_WRITE_MS = 5_000;

/** How often the writes that came due are made. */
const TICK_MS = 1_000;
/** Writes made at once: the API server's other callers keep their share of the connections. */
const CONCURRENT_WRITES = 8;

interface Due {
  kind: string;
  team: string;
  id: string;
  at: number;
}

export interface FirstStatusWritesContext {
  /** The object as cached now. */
  peek(kind: string, team: string, id: string): StoredObject | undefined;
  /** Writes the object's status as it is, with its resourceVersion as precondition. */
  writeStatus(object: StoredObject): Promise<unknown>;
  logger: Logger;
}

export class FirstStatusWrites {
  /** `kind/team/id` -> when its first status is due; in the order scheduled, which is the order due. */
  private readonly due = new Map<string, Due>();
  private timer: NodeJS.Timeout | undefined;
  private writing = false;

  constructor(private readonly o: FirstStatusWritesContext) {}

  /** Writes the first status of an object just created, unless another status write comes first. */
  schedule(kind: string, team: string, id: string): void {
    const key = `${kind}/${team}/${id}`;
    this.due.delete(key);
    this.due.set(key, { kind, team, id, at: Date.now() + FIRST_STATUS_WRITE_MS });
    this.timer ??= setInterval(() => void this.writeDue(), TICK_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.due.clear();
  }

  private async writeDue(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      const now = Date.now();
      const ready: Due[] = [];
      for (const [key, due] of this.due) {
        if (due.at > now) break;
        this.due.delete(key);
        ready.push(due);
      }
      for (let i = 0; i < ready.length; i += CONCURRENT_WRITES) await Promise.all(ready.slice(i, i + CONCURRENT_WRITES).map((due) => this.write(due)));
    } finally {
      this.writing = false;
      if (this.due.size === 0) this.stop();
    }
  }

  private async write(due: Due): Promise<void> {
    const object = this.o.peek(due.kind, due.team, due.id);
    if (!object?.meta.statusUnwritten || object.meta.deletionTimestamp) return;
    try {
      await this.o.writeStatus(object);
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      // The API server away, say: try again later; until then every reader has the status all the same.
      this.o.logger.debug({ kind: due.kind, id: due.id, err: messageOf(err) }, 'could not write a first status yet');
      this.schedule(due.kind, due.team, due.id);
    }
  }
}
