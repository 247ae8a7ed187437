/**
 * Upkeep of the store's secrets, run by the leader every CLOUDPLANE_SECRET_SWEEP_SECONDS:
 * - A secret whose resource does not exist, or no longer needs it, is removed once it is
 *   older than CLOUDPLANE_ORPHAN_SECRET_GRACE_SECONDS. A create writes the secret before
 *   the resource (so a reconciler always finds it), and a crash in between left the
 *   secret behind for ever; the grace lets a create in flight finish first.
 * - A webhook's previous secret is dropped once its rotation overlap has ended, so a
 *   rotated-away secret is kept no longer than it signs.
 * - An Idempotency-Key's record is deleted once it has expired (CLOUDPLANE_IDEMPOTENCY_TTL_SECONDS).
 * Which secrets these are is known above the controllers (webhooks/, accounts/, api/, usage/):
 * the rules are handed in (src/secret-upkeep.ts, by service.ts).
 */
import type { Logger } from 'pino';
import type { Store, StoredObject, StoredSecret } from '../store/types';
import { BACKGROUND_TURN_BUDGET_MS, yieldIfDue } from '../lib/event-loop-turns';
import { textOf } from '../lib/unknown-values';

/** Which resource the secrets of one name prefix belong to. */
export interface SecretOwnership {
  prefix: string;
  /** The owning resource, or null when the secret does not say (it is then left alone). */
  owner(secret: StoredSecret): { kind: string; id: string } | null;
  /** Whether an existing owner still needs its secret; always, without this. */
  needs?(owner: StoredObject<unknown, { status?: string }>): boolean;
}

/** The owner of a secret named `<prefix><owner's id>`. */
export const ownedByName =
  (kind: string, prefix: string) =>
  (secret: StoredSecret): { kind: string; id: string } => ({ kind, id: secret.name.slice(prefix.length) });

export interface SecretSweeperOptions {
  store: Store;
  logger: Logger;
  intervalMs: number;
  /** How old a secret without its resource must be before it is removed. */
  orphanGraceMs: number;
  /** Which resource owns the secrets of each name prefix. */
  ownership: readonly SecretOwnership[];
  /** Secrets that keep a previous value while a rotation overlaps (webhook signing secrets): `drop` removes it once the overlap ended. */
  previous: { prefix: string; drop(store: Store, secret: StoredSecret, now: number): Promise<boolean> };
  /** Records that expire (`expires_at`) unless a request still holds them by its lease (Idempotency-Key records). */
  expiring: { prefix: string; lapsed(data: Record<string, string>, now: number): boolean };
}

/** The rules of SecretSweeperOptions, as the composition root hands them in. */
export type SecretSweepRules = Pick<SecretSweeperOptions, 'ownership' | 'previous' | 'expiring'>;

export interface SweepResult {
  /** Secrets removed because their resource does not exist or no longer needs them. */
  removedOrphans: number;
  /** Webhook secrets whose expired previous secret was dropped. */
  droppedPrevious: number;
  /** Idempotency-Key records past their expiry (api/plugins/idempotency.ts). */
  expiredIdempotencyKeys: number;
}

export class SecretSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly o: SecretSweeperOptions) {}

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

  /** One pass over every secret; `now` places it in time (tests). */
  async sweep(now = Date.now()): Promise<SweepResult> {
    const result: SweepResult = { removedOrphans: 0, droppedPrevious: 0, expiredIdempotencyKeys: 0 };
    // A store that cannot write, or whose cache may lag (a watch re-establishing), waits for
    // the next pass: a resource missing from a stale cache must not cost its secret.
    if (this.o.store.persistence() !== 'synced') return result;
    for (const rule of this.o.ownership) {
      for (const secret of await this.o.store.listSecrets(rule.prefix)) {
        // Most checks are answered from memory: a sweep of many secrets lets the event loop turn.
        await yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
        if (await this.removeIfOrphaned(rule, secret, now)) result.removedOrphans++;
      }
    }
    for (const secret of await this.o.store.listSecrets(this.o.previous.prefix)) {
      await yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
      if (await this.o.previous.drop(this.o.store, secret, now)) result.droppedPrevious++;
    }
    for (const secret of await this.o.store.listSecrets(this.o.expiring.prefix)) {
      await yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
      if (await this.removeIfExpired(secret, now)) result.expiredIdempotencyKeys++;
    }
    return result;
  }

  /**
   * A record past its expiry only takes room, unless a request still running holds it by
   * its lease. A retry that takes it over between the list and the delete loses its
   * record, and with it only the replay of its answer.
   */
  private async removeIfExpired(secret: StoredSecret, now: number): Promise<boolean> {
    if (!(Date.parse(secret.data.expires_at ?? '') <= now) || !this.o.expiring.lapsed(secret.data, now)) return false;
    await this.o.store.deleteSecret(secret.team, secret.name);
    return true;
  }

  private async removeIfOrphaned(rule: SecretOwnership, secret: StoredSecret, now: number): Promise<boolean> {
    if (now - Date.parse(secret.createdAt) < this.o.orphanGraceMs) return false;
    const owner = rule.owner(secret);
    if (!owner) return false;
    const resource = await this.o.store.get<unknown, { status?: string }>(owner.kind, secret.team, owner.id);
    if (resource && (rule.needs?.(resource) ?? true)) return false;
    await this.o.store.deleteSecret(secret.team, secret.name);
    this.o.logger.info(
      { team: secret.team, secret: secret.name, owner: `${owner.kind} ${owner.id}`, reason: resource ? 'no longer needed' : 'does not exist' },
      'removed a secret its resource does not need (left by a crash)',
    );
    return true;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.sweep()
        .catch((err: unknown) => {
          this.o.logger.warn({ err: textOf(err) }, 'secret sweep failed; trying again at the next one');
        })
        .finally(() => {
          this.running = null;
          this.schedule(this.o.intervalMs);
        });
    }, delayMs);
  }
}
