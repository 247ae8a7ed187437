/**
 * Whether a status write only took events out of the outbox (`pending_events`, with the
 * `updated_at` any write moves): the outbox relay's drain, which no client calls an
 * update and no reconciler has to look at. The stores keep `updated_at` for it, and the
 * controllers queue no pass for it. It runs on every status write, so it compares member
 * by member (sameJsonApartFrom) rather than serialising both statuses whole.
 */
import { sameJsonApartFrom } from '../lib/canonical-json';
import { isRecord } from '../lib/unknown-values';

const OUTBOX_MEMBERS: ReadonlySet<string> = new Set(['pending_events', 'updated_at']);

/** A status is an object; a missing one has no members. */
const membersOf = (status: unknown): Record<string, unknown> => (isRecord(status) ? status : {});

export function onlyOutboxDiffers(before: unknown, after: unknown): boolean {
  return sameJsonApartFrom(membersOf(before), membersOf(after), OUTBOX_MEMBERS);
}
