/**
 * Reading values of no known type (a thrown value, a parsed document, a record anyone with
 * kubectl could have edited) by checking what they hold rather than asserting it.
 */

/** A plain object's members (not an array, not null). */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `value[key]` when `value` is an object; undefined for anything else. */
export const fieldOf = (value: unknown, key: string): unknown => (typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined);

/** What a thrown value says: its `message` (an Error's, or an object's thrown like one); undefined when it has none. */
export function messageOf(err: unknown): string | undefined {
  const message = fieldOf(err, 'message');
  return typeof message === 'string' ? message : undefined;
}

/** The `code` of a thrown value: an errno name from Node (`EEXIST`), an HTTP status from the Kubernetes client. */
export const codeOf = (err: unknown): unknown => fieldOf(err, 'code');
