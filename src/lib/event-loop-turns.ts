/**
 * Work that never waits on I/O runs as one chain of promise callbacks, and the event loop
 * takes nothing else until the chain ends: no request, no watch event, no health probe.
 * A resync is such work (each reconcile of an unchanged resource is answered from the
 * cache): at 10,000 load balancers it held the loop for 400 ms, at 100,000 for seconds,
 * long enough for a liveness probe to fail. Loops over many items call `yieldIfDue()`
 * between items: once the current turn has run TURN_BUDGET_MS it answers a promise that
 * resolves after the event loop has had a turn (I/O first, then setImmediate), else
 * undefined, so that a short run pays nothing.
 *
 * The clock is shared by every caller: several queues' workers interleave in one chain,
 * and their budgets must not add up. After an idle spell the clock is old, so the first
 * item of a burst yields once; that costs one hop of the loop.
 */
import { performance } from 'node:perf_hooks';
// The module's own, not the global: a turn of the loop is no timer, and must come even
// where a fake clock (a test's) has replaced the global timer functions.
import { setImmediate } from 'node:timers';

/** How long a run of work may hold the event loop: requests wait at most about this long behind it. */
export const TURN_BUDGET_MS = 2;

/**
 * The budget of work nobody waits for (a periodic resync). A resync of 100,000 resources
 * is seconds of work; in 2 ms slices every request that came meanwhile waited up to 2 ms,
 * which at that size was most of a list's p99. Slices this short keep that wait below a
 * few passes, and cost one setImmediate per slice.
 */
export const BACKGROUND_TURN_BUDGET_MS = 0.25;

let turnStartedAt = performance.now();
let pending: Promise<void> | null = null;

export function yieldIfDue(budgetMs = TURN_BUDGET_MS): Promise<void> | undefined {
  if (pending) return pending;
  if (performance.now() - turnStartedAt < budgetMs) return undefined;
  pending = new Promise((resolve) =>
    setImmediate(() => {
      pending = null;
      turnStartedAt = performance.now();
      resolve();
    }),
  );
  return pending;
}

/**
 * Waits, if the current turn has used its budget, until a turn with budget left: for work
 * started by many callers at once (a dispatcher's concurrent deliveries). They all wait on
 * the same turn, and each checks again when it resumes, so the turn after it is sliced too.
 */
export async function takeTurn(budgetMs = TURN_BUDGET_MS): Promise<void> {
  for (let due = yieldIfDue(budgetMs); due; due = yieldIfDue(budgetMs)) await due;
}
