/**
 * What a driver keeps of its own calls in a resource's status (status.external): here, with
 * the resources whose status holds it; the drivers (drivers/types.ts) fill it in.
 */

/** A JSON value, as a resource's status holds it (an undefined member is left out). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json | undefined };

/** What a driver remembers of its own calls for one resource (status.external). */
export type ExternalRecord = { [key: string]: Json | undefined };
