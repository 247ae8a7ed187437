/**
 * The waits of the write path, in one place: each is one part of the service waiting for
 * another's write, and they are set against each other, so they are read together.
 *
 * | wait | value | who waits | for whom |
 * |---|---:|---|---|
 * | `DRAIN_DELAY_MS` | 5 min (`CLOUDPLANE_OUTBOX_DRAIN_SECONDS`) | the outbox relay, holding an object's published events in its outbox | the object's next status write, which takes them out with it (one write instead of two); at most half the bus's duplicate window (an hour), which a re-publish by a new leader relies on |
 * | `OUTBOX_POLL_MS` | 200 ms, again and again | a reconciler about to remove a deleted or destroyed record | the relay, to publish the record's last events first (ResourceWriter.relayed) |
 * | `API_SETTLE_GRACE_MS` | 2 s | a reconciler seeing an unsettled spec change the API wrote | the API request, which settles its own change with the caller named |
 * | `ADOPTION_GRACE_MS` | 5 s (`CLOUDPLANE_ADOPTION_GRACE_SECONDS` in cluster mode) | adoption, seeing a custom resource without status that an earlier version's create marked | that create's own status write (its custom resource was created without its status) |
 * | `FIRST_STATUS_WRITE_MS` | 5 s | the Kubernetes store, after a create whose first status rides sealed in annotations | the object's first status write (a reconciler's, when its provider is quick); else the store writes the first status itself, so that kubectl shows it |
 *
 * How the outbox and its relay work: docs/architecture/write-path.md.
 */
import { DEFAULT_OUTBOX_DRAIN_SECONDS } from '../config';

/**
 * How long published events may wait in an outbox for another write to take them out, by
 * default. A load balancer was written three times from create to running; with 2 s here
 * its `running` event cost a fourth write of the relay's own, and most resources are not
 * written again for far longer than that.
 */
export const DRAIN_DELAY_MS = DEFAULT_OUTBOX_DRAIN_SECONDS * 1000;

/** How soon a reconciler looks again whether the relay has published a record's last events. */
export const OUTBOX_POLL_MS = 200;

/** How long an unsettled spec change written by the API is left to the request that wrote it. */
export const API_SETTLE_GRACE_MS = 2_000;

/** How long a status-less custom resource is left to the create that made it, without cluster settings. */
export const ADOPTION_GRACE_MS = 5_000;

/** How long after its create the Kubernetes store leaves a first status to another status write. */
export { FIRST_STATUS_WRITE_MS } from '../store/kubernetes/first-status-writes';
