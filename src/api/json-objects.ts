/**
 * Reading plain JSON (route schemas, the OpenAPI document, parsed bodies) without casts:
 * every object's properties are there to read as unknown, and each level is checked before
 * the next is read.
 */

/** Whether `value` is an object, whose properties can be read by name. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** The object at `path` below `value`, or undefined where a step is missing or not an object. */
export function recordAt(value: unknown, ...path: string[]): Record<string, unknown> | undefined {
  let at = value;
  for (const key of path) at = isRecord(at) ? at[key] : undefined;
  return isRecord(at) ? at : undefined;
}
