/**
 * The waits of the write path, in one place: each is one part of the service waiting for
 * another's write, and they are set against each other, so they are read together.
 *
 * | wait | value | who waits | for whom |
 * |---|---:|---|---|
 * | `DRAIN_DELAY_MS` | 2 s | the outbox relay, holding an object's published events in its outbox | the object's next status write, which takes them out with it (one write instead of two) |
 * | `WRITE_WAIT_MS` | 30 s more | the relay, while a queued reconcile pass will write the object | that pass; far inside the bus's duplicate window (an hour), which a re-publish after a crash relies on |
 * | `OUTBOX_POLL_MS` | 200 ms, again and again | a reconciler about to remove a deleted or destroyed record | the relay, to publish the record's last events first |
 * | `API_SETTLE_GRACE_MS` | 2 s | a reconciler seeing an unsettled spec change the API wrote | the API request, which settles its own change with the caller named |
 * | `ADOPTION_GRACE_MS` | 5 s (`CLOUDPLANE_ADOPTION_GRACE_SECONDS` in cluster mode) | adoption, seeing a custom resource without status | the service's own status write of a create (a custom resource is created without its status) |
 *
 * How the outbox and its relay work: docs/architecture/write-path.md.
 */

/** How long published events may wait in an outbox for another write to take them out. */
export const DRAIN_DELAY_MS = 2_000;

/** How much longer they may wait while a pass that will write the object is queued. */
export const WRITE_WAIT_MS = 30_000;

/** How soon a reconciler looks again whether the relay has published a record's last events. */
export const OUTBOX_POLL_MS = 200;

/** How long an unsettled spec change written by the API is left to the request that wrote it. */
export const API_SETTLE_GRACE_MS = 2_000;

/** How long a status-less custom resource is left to the create that made it, without cluster settings. */
export const ADOPTION_GRACE_MS = 5_000;
