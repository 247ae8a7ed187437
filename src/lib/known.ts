/**
 * Values the code around has made sure are there (a map entry added just before, a field
 * a schema requires, an option the caller checked), read without a `!`: if one is missing
 * after all, that is a bug in Cloudplane, and it is thrown as one, by name, where it shows.
 */

/** `value`, or an error naming `what` when it is missing. (`what` is built on every call: a constant in hot paths.) */
export function known<T>(value: T | null | undefined, what: string): T {
  if (value === undefined || value === null) throw new Error(`internal error: ${what} is missing`);
  return value;
}
