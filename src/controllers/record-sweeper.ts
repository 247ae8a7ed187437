/**
 * Upkeep of the store's secrets and records, run by the leader every
 * CLOUDPLANE_SECRET_SWEEP_SECONDS, for each kind it is handed (store/record-kinds.ts):
 * - An entry whose resource does not exist, or no longer needs it, is removed once it is
 *   older than CLOUDPLANE_ORPHAN_SECRET_GRACE_SECONDS. A create writes the secret before
 *   the resource (so a reconciler always finds it), and a crash in between left the
 *   secret behind for ever; the grace lets a create in flight finish first.
 * - An entry of a kind that expires (an Idempotency-Key's record) is removed once expired.
 * - A webhook's previous secret is dropped once its rotation overlap has ended, so a
 *   rotated-away secret is kept no longer than it signs.
 * Which entries these are is known above the controllers (webhooks/, accounts/, api/,
 * usage/): the kinds are handed in (src/record-upkeep.ts, by service.ts).
 */
import type { Logger } from 'pino';
import type { NamedEntries, Store, StoredEntry } from '../store/types';
import { entriesOf, RecordKind } from '../store/record-kinds';
import { BACKGROUND_TURN_BUDGET_MS, yieldIfDue } from '../lib/event-loop-turns';
import { textOf } from '../lib/unknown-values';

export interface RecordSweeperOptions {
  store: Store;
  logger: Logger;
  intervalMs: number;
  /** How old an entry without its resource must be before it is removed. */
  orphanGraceMs: number;
  /** Every kind of entry the service keeps; those with an owner or an expiry are swept. */
  kinds: readonly RecordKind[];
  /** Secrets that keep a previous value while a rotation overlaps (webhook signing secrets): `drop` removes it once the overlap ended. */
  previous: { prefix: string; drop(store: Store, secret: StoredEntry, now: number): Promise<boolean> };
}

/** The rules of RecordSweeperOptions, as the composition root hands them in. */
export type RecordSweepRules = Pick<RecordSweeperOptions, 'kinds' | 'previous'>;

export interface SweepResult {
  /** Entries removed because their resource does not exist or no longer needs them. */
  removedOrphans: number;
  /** Webhook secrets whose expired previous secret was dropped. */
  droppedPrevious: number;
  /** Entries past their expiry (Idempotency-Key records: api/plugins/idempotency.ts). */
  expired: number;
}

export class RecordSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly o: RecordSweeperOptions) {}

  /** Sweeps at once, then every interval, until stopped. */
  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass over every kind's entries; `now` places it in time (tests). */
  async sweep(now = Date.now()): Promise<SweepResult> {
    const result: SweepResult = { removedOrphans: 0, droppedPrevious: 0, expired: 0 };
    // A store that cannot write, or whose cache may lag (a watch re-establishing), waits for
    // the next pass: a resource missing from a stale cache must not cost its entry.
    if (this.o.store.persistence() !== 'synced') return result;
    for (const kind of this.o.kinds) {
      if (!kind.owner && !kind.expired) continue;
      const entries = entriesOf(this.o.store, kind);
      for (const entry of await entries.list(kind.prefix)) {
        // Most checks are answered from memory: a sweep of many entries lets the event loop turn.
        await yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
        if (kind.expired?.(entry, now)) {
          await entries.delete(entry.team, entry.name);
          result.expired++;
        } else if (kind.owner && (await this.removeIfOrphaned(kind, entries, entry, now))) result.removedOrphans++;
      }
    }
    for (const secret of await this.o.store.secrets.list(this.o.previous.prefix)) {
      await yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
      if (await this.o.previous.drop(this.o.store, secret, now)) result.droppedPrevious++;
    }
    return result;
  }

  private async removeIfOrphaned(kind: RecordKind, entries: NamedEntries, entry: StoredEntry, now: number): Promise<boolean> {
    if (now - Date.parse(entry.createdAt) < this.o.orphanGraceMs) return false;
    const owner = kind.owner?.(entry);
    if (!owner) return false;
    const resource = await this.o.store.get<unknown, { status?: string }>(owner.kind, entry.team, owner.id);
    if (resource && (kind.needs?.(resource, entry) ?? true)) return false;
    await entries.delete(entry.team, entry.name);
    this.o.logger.info(
      {
        team: entry.team,
        [kind.sealed ? 'secret' : 'record']: entry.name,
        owner: `${owner.kind} ${owner.id}`,
        reason: resource ? 'no longer needed' : 'does not exist',
      },
      `removed a ${kind.sealed ? 'secret' : 'record'} its resource does not need (left by a crash)`,
    );
    return true;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.sweep()
        .catch((err: unknown) => {
          this.o.logger.warn({ err: textOf(err) }, 'secret and record sweep failed; trying again at the next one');
        })
        .finally(() => {
          this.running = null;
          this.schedule(this.o.intervalMs);
        });
    }, delayMs);
  }
}
