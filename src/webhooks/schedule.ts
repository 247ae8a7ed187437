/**
 * The retry schedule of docs/api.md: attempt 1 at once, attempts 2-6 after 1, 5, 25, 125
 * and 625 seconds, then one every 600 seconds, until 15 attempts or 24 hours after the
 * first, whichever comes first. `timeScale` shrinks every interval (tests run the whole
 * schedule in seconds); 1 in production.
 */
import { MAX_ATTEMPTS } from '../resources/webhook';

const FIRST_DELAYS_S = [1, 5, 25, 125, 625];
const LATER_DELAY_S = 600;
const GIVE_UP_AFTER_S = 24 * 3600;

/** When the attempt after attempt number `attempt` (1-based) is due, or null when none is left. */
export function nextAttemptAt(attempt: number, firstAttemptAt: number, lastAttemptAt: number, timeScale: number, notBefore?: number): number | null {
  if (attempt >= MAX_ATTEMPTS) return null;
  const delayS = FIRST_DELAYS_S[attempt - 1] ?? LATER_DELAY_S;
  const scheduled = lastAttemptAt + delayS * 1000 * timeScale;
  // A receiver's Retry-After (on 429 or 503; `notBefore`) may push the next attempt later, never earlier.
  const at = notBefore !== undefined ? Math.max(scheduled, notBefore) : scheduled;
  return at - firstAttemptAt > GIVE_UP_AFTER_S * 1000 * timeScale ? null : at;
}

/** Parses Retry-After (seconds or an HTTP date) into milliseconds, scaled like the schedule. */
export function retryAfterMs(header: string | undefined, now: number, timeScale: number): number | undefined {
  if (!header) return undefined;
  const seconds = /^\d+$/.test(header.trim()) ? Number(header.trim()) : (Date.parse(header) - now) / 1000;
  if (!Number.isFinite(seconds) || seconds < 0) return undefined;
  return Math.min(seconds, GIVE_UP_AFTER_S) * 1000 * timeScale;
}
