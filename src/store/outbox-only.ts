/**
 * Whether a status write only took events out of the outbox (`pending_events`, with the
 * `updated_at` any write moves): the outbox relay's drain, which no client calls an
 * update and no reconciler has to look at. The stores keep `updated_at` for it, and the
 * controllers queue no pass for it. It runs on every status write, so it compares member
 * by member (sameJsonApartFrom) rather than serialising both statuses whole.
 */
import { sameJsonApartFrom } from '../lib/canonical-json';

const OUTBOX_MEMBERS: ReadonlySet<string> = new Set(['pending_events', 'updated_at']);

export function onlyOutboxDiffers(before: unknown, after: unknown): boolean {
  return sameJsonApartFrom((before ?? {}) as Record<string, unknown>, (after ?? {}) as Record<string, unknown>, OUTBOX_MEMBERS);
}
