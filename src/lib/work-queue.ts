/**
 * A work queue in the manner of client-go's: a key waiting in the queue is held once
 * however often it is added; a key being processed is not handed to a second worker,
 * and if it is added meanwhile it is processed again afterwards. Failed keys come back
 * after an exponential backoff.
 *
 * Keys wait in two first-in-first-out lanes. `add` is for a change (a watch event, a
 * timer, a retry); `addBackground` is for a periodic resync, whose keys are handed out
 * only while no change waits. A resync of a large collection queues every key at once,
 * and in one lane a change made then waited behind all of them: provisioning slowed with
 * the collection's size. A background key that is added as a change moves to the front
 * lane. The lanes are made of deques (denque): Array#shift copies the whole array once it is
 * large (V8 moves the start of small arrays only), which made taking a key O(n).
 *
 * Within each lane teams take turns (team-turns.ts): a key names its team (`teamOf`,
 * by default the part of `team/id` before the slash), and one team's burst of keys does
 * not hold up another team's key behind it.
 *
 * Background keys may also be paced (`backgroundPerSecond`): a resync then costs at most
 * that many passes a second, whatever the collection's size, and takes longer instead.
 * Unpaced, a resync of 100,000 load balancers every 30 s kept a quarter of a CPU busy in
 * bursts, which requests and the garbage collector then shared the machine with.
 */
import { backoffMs } from './backoff';
import { BACKGROUND_TURN_BUDGET_MS, TURN_BUDGET_MS, yieldIfDue } from './event-loop-turns';
import { TeamOf, teamBeforeSlash, TeamTurns } from './team-turns';
import { known } from './known';

/** The longest delay a Node timer accepts (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

export interface WorkQueueOptions {
  backoff?: BackoffOptions;
  /** The most background keys handed out a second; unlimited without it. */
  backgroundPerSecond?: number;
  /** The team a key belongs to, whose turn it waits for; by default the part of `team/id` before the slash. */
  teamOf?: TeamOf;
}

/** A token bucket holding a tenth of a second's tokens, so that a paced lane trickles rather than bursts. */
class Pace {
  private tokens: number;
  private readonly capacity: number;
  private refilledAt = Date.now();

  constructor(private readonly perSecond: number) {
    this.capacity = Math.max(1, perSecond / 10);
    this.tokens = this.capacity;
  }

  /** Takes a token and answers 0, or answers how many ms until one is there. */
  take(): number {
    const now = Date.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.refilledAt) * this.perSecond) / 1000);
    this.refilledAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.perSecond));
  }
}

export class WorkQueue {
  private readonly changes: TeamTurns;
  private readonly background: TeamTurns;
  /** Every key waiting, and its lane. A key promoted to `changes` stays in `background` as a stale entry, skipped when reached. */
  private readonly queued = new Map<string, 'change' | 'background'>();
  private readonly processing = new Set<string>();
  private readonly dirtyWhileProcessing = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private readonly waiters: Array<(key: string | null) => void> = [];
  private readonly backoff: BackoffOptions;
  private readonly pace: Pace | null;
  /** Wakes waiting workers when the pace lets the next background key out. */
  private paceTimer: NodeJS.Timeout | null = null;
  private shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.backoff = options.backoff ?? { baseMs: 100, maxMs: 60_000 };
    this.pace = options.backgroundPerSecond ? new Pace(options.backgroundPerSecond) : null;
    const teamOf = options.teamOf ?? teamBeforeSlash;
    this.changes = new TeamTurns(teamOf);
    this.background = new TeamTurns(teamOf);
  }

  /** Keys waiting in either lane. */
  get length(): number {
    return this.queued.size;
  }

  /** Background keys not handed out yet (keys since added as changes included, until their turn passes). */
  get backgroundWaiting(): number {
    return this.background.length;
  }

  /** Whether the key is waiting in the queue or being processed (not: only due later, by addAfter). */
  has(key: string): boolean {
    return this.queued.has(key) || this.processing.has(key);
  }

  add(key: string): void {
    this.enqueue(key, 'change');
  }

  /** Adds a key to be looked at when no change waits (a periodic resync). */
  addBackground(key: string): void {
    this.enqueue(key, 'background');
  }

  private enqueue(key: string, lane: 'change' | 'background'): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirtyWhileProcessing.add(key);
      return;
    }
    const waiting = this.queued.get(key);
    if (waiting === 'change' || (waiting === 'background' && lane === 'background')) return;
    if (waiting === undefined && this.waiters.length > 0 && this.mayTake(lane)) {
      const waiter = this.waiters.shift();
      if (waiter) {
        this.processing.add(key);
        waiter(key);
        return;
      }
    }
    this.queued.set(key, lane);
    (lane === 'change' ? this.changes : this.background).push(key);
  }

  /**
   * Adds the key after `ms`; an earlier pending add-after of the same key wins. A delay
   * beyond what a Node timer holds (about 24.8 days) is cut to that maximum: Node would
   * otherwise fire it after 1 ms, and a long requeue (a retention period) would spin.
   */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    ms = Math.min(ms, MAX_TIMER_MS);
    const at = Date.now() + ms;
    const existing = this.timers.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** Re-adds a key that failed, after base * 2^failures (capped). */
  addRateLimited(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const delay = backoffMs(failures, this.backoff.baseMs, this.backoff.maxMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears a key's failure count after it succeeded. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /**
   * The next key to process, or null once shut down. Workers whose passes are answered
   * from memory would otherwise take key after key without the event loop ever turning
   * (lib/event-loop-turns.ts). A background key gets the shorter budget: no one waits for
   * it, and requests should not wait behind it.
   */
  get(): Promise<string | null> {
    if (this.shuttingDown) return Promise.resolve(null);
    const due = yieldIfDue(this.changes.length === 0 && this.background.length > 0 ? BACKGROUND_TURN_BUDGET_MS : TURN_BUDGET_MS);
    if (due) return due.then(() => this.get());
    const key = this.takeWaiting();
    if (key !== undefined) {
      this.processing.add(key);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Whether a key of the lane may go out now; a background key waits for the pace, which then wakes a worker. */
  private mayTake(lane: 'change' | 'background'): boolean {
    if (lane === 'change' || !this.pace) return true;
    const waitMs = this.pace.take();
    if (waitMs === 0) return true;
    this.paceTimer ??= setTimeout(() => {
      this.wakeForBackground();
    }, waitMs);
    this.paceTimer.unref();
    return false;
  }

  private wakeForBackground(): void {
    this.paceTimer = null;
    while (!this.shuttingDown && this.waiters.length > 0) {
      const key = this.takeWaiting();
      if (key === undefined) return;
      this.processing.add(key);
      known(this.waiters.shift(), 'a worker waiting (the loop runs while one does)')(key);
    }
  }

  private takeWaiting(): string | undefined {
    const change = this.changes.shift();
    if (change !== undefined) {
      this.queued.delete(change);
      return change;
    }
    if (this.background.length === 0 || !this.mayTake('background')) return undefined;
    for (let key = this.background.shift(); key !== undefined; key = this.background.shift()) {
      if (this.queued.get(key) !== 'background') continue; // promoted to a change, and taken as one
      this.queued.delete(key);
      return key;
    }
    return undefined;
  }

  /** Marks a key's processing as finished; re-queues it if it was added meanwhile. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirtyWhileProcessing.delete(key)) this.add(key);
  }

  shutDown(): void {
    this.shuttingDown = true;
    if (this.paceTimer) clearTimeout(this.paceTimer);
    this.paceTimer = null;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const waiter of this.waiters.splice(0)) waiter(null);
  }
}
