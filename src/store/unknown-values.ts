/**
 * Reading values whose type nothing vouches for (what was thrown, JSON at rest) by looking
 * at them, not by assuming a type: anything can be thrown, and the clients the store uses
 * (Node's fs, the Kubernetes client, NATS) each add fields of their own to their errors.
 */

/** A non-null object (an array too), whose members are yet to be looked at. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The `message` of what was thrown, if it has one (an Error's, most often). */
export function messageOf(thrown: unknown): unknown {
  return isRecord(thrown) ? thrown.message : undefined;
}

/** The `code` of what was thrown: an errno name from Node (`EEXIST`), an HTTP status from the Kubernetes client. */
export function codeOf(thrown: unknown): unknown {
  return isRecord(thrown) ? thrown.code : undefined;
}
