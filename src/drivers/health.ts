/**
 * A driver's health from the outcomes of its recent calls or operations: connected while
 * none failed in the window, degraded when some did, unavailable when the last five all
 * failed or the backend did not answer the last call at all.
 */
import type { DriverHealth } from './types';

/** How far back outcomes count towards a driver's health. */
export const HEALTH_WINDOW_MS = 5 * 60_000;
/** Consecutive failures after which the driver counts as unavailable. */
const FAILURES_FOR_UNAVAILABLE = 5;
const KEPT = 50;

interface Outcome {
  at: number;
  ok: boolean;
  message: string | null;
  /** A failure where the backend answered (a refusal, an error of its own), as opposed to not at all. */
  reached: boolean;
}

export class OutcomeWindow {
  private outcomes: Outcome[] = [];
  private reachable = true;
  private lastAt = 0;
  /**
   * The last answer of health() and until when it holds: it changes only when an outcome is
   * recorded (which drops it) or the oldest one leaves the window. Every answer that carries
   * meta.provider asks, so most asks cost nothing.
   */
  private answered: { health: DriverHealth; until: number } | null = null;

  constructor(private readonly windowMs = HEALTH_WINDOW_MS) {}

  /** A call or operation that worked. */
  succeeded(): void {
    this.answered = null;
    this.add({ at: Date.now(), ok: true, message: null, reached: true });
    this.reachable = true;
  }

  /** One that failed; `reached`: the backend answered (with a refusal), as opposed to not at all. */
  failed(message: string, reached = true): void {
    this.answered = null;
    this.add({ at: Date.now(), ok: false, message, reached });
    this.reachable = reached;
  }

  /**
   * The backend answers again after an outage: the failures of calls it did not answer
   * describe the outage, which is over, so they stop counting. Refusals it gave stay.
   */
  recovered(): void {
    this.answered = null;
    this.outcomes = this.outcomes.filter((o) => o.ok || o.reached);
    this.reachable = true;
  }

  /** When the last outcome was recorded (ms since the epoch), 0 if never. */
  lastOutcomeAt(): number {
    return this.lastAt;
  }

  health(): DriverHealth {
    const now = Date.now();
    if (this.answered !== null && now < this.answered.until) return this.answered.health;
    this.outcomes = this.outcomes.filter((o) => now - o.at < this.windowMs);
    const failures = this.outcomes.filter((o) => !o.ok);
    const last = this.outcomes.slice(-FAILURES_FOR_UNAVAILABLE);
    const allFailing = last.length === FAILURES_FOR_UNAVAILABLE && last.every((o) => !o.ok);
    const state = failures.length === 0 ? 'connected' : !this.reachable || allFailing ? 'unavailable' : 'degraded';
    const health: DriverHealth = Object.freeze({
      state,
      reachable: this.reachable,
      recentFailures: failures.length,
      lastFailure: failures.at(-1)?.message ?? null,
    });
    let oldest = Infinity;
    for (const o of this.outcomes) oldest = Math.min(oldest, o.at);
    this.answered = { health, until: oldest + this.windowMs };
    return health;
  }

  private add(outcome: Outcome): void {
    this.lastAt = outcome.at;
    this.outcomes.push(outcome);
    if (this.outcomes.length > KEPT) this.outcomes = this.outcomes.slice(-KEPT);
  }
}
