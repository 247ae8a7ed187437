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

/** What a thrown value says, as text: its message, or else the value itself written out. */
export const textOf = (err: unknown): string => messageOf(err) ?? String(err);

/** The object at `path` below `value`, or undefined where a step is missing or not an object. */
export function recordAt(value: unknown, ...path: string[]): Record<string, unknown> | undefined {
  let at = value;
  for (const key of path) at = fieldOf(at, key);
  return isRecord(at) ? at : undefined;
}

/** Whether `value` is an object whose `keys` all hold strings. */
export const hasStrings = <K extends string>(value: unknown, ...keys: K[]): value is Record<K, string> =>
  isRecord(value) && keys.every((key) => typeof value[key] === 'string');

/** A string, number or boolean written out; undefined for anything else (null, an object, a list), which has no text of its own. */
export const scalarText = (value: unknown): string | undefined =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
