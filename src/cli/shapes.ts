/**
 * Reading what the CLI did not make (the API's answers, files, errors thrown by fetch) by
 * looking at it: each shape is checked where it is read, nothing is taken on trust.
 */
import { types } from 'node:util';

/** An object (an array, an error) whose fields can be read. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** `value[key]` when `value` is an object; undefined otherwise. */
export const fieldOf = (value: unknown, key: string): unknown => (isRecord(value) ? value[key] : undefined);

/** Whether `value` is an object whose `keys` all hold strings (an answer's data, as the CLI reads it). */
export const hasStrings = <K extends string>(value: unknown, ...keys: K[]): value is Record<K, string> =>
  isRecord(value) && keys.every((key) => typeof value[key] === 'string');

/** What a thrown value says: an error's message, or the value itself as text. */
export const messageOf = (err: unknown): string => (types.isNativeError(err) ? err.message : String(err));
