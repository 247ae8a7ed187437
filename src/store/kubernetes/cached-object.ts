/**
 * What the store's cache keeps of an object the API server sent. `metadata.managedFields`
 * (server-side apply's record of which manager set which field) is nothing this service
 * reads, yet it is often larger than the object itself: dropped on the way in it made
 * the cache of 10,000 load balancers much smaller (see bench/results/scale-*.json). This
 * is what client-go's informers do with a transform function. A write that sends a cached
 * object back without the field leaves the server's record as it was (an absent field is
 * left alone; only an empty list would reset it).
 */
/** Trims, in place, an object parsed from an API server answer (a watch's JSON or a typed client's), and returns it. */
export function asCached<T extends { metadata?: { managedFields?: unknown } }>(object: T): T {
  delete object.metadata?.managedFields;
  return object;
}
