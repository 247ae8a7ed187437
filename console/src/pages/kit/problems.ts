/**
 * Turns what the API client rejected with (docs/api.md's error envelope: code, message and,
 * on 422, details naming each field) into what a form shows: one message for the form,
 * and one per field, so that every validation message of the API reaches the user.
 */
import { ApiError, type FieldError } from '../../lib/api';

export interface Problem {
  message: string;
  code: string | null;
  fields: Record<string, string>;
}

export function problemOf(err: unknown): Problem {
  if (!(err instanceof ApiError)) return { message: err instanceof Error ? err.message : String(err), code: null, fields: {} };
  const fields: Record<string, string> = {};
  for (const detail of err.details ?? []) fields[detail.field] = fields[detail.field] ? `${fields[detail.field]}; ${detail.message}` : detail.message;
  return { message: err.message, code: err.code, fields };
}

const isPartOf = (field: string, name: string) => field === name || field.startsWith(`${name}[`) || field.startsWith(`${name}.`);

/**
 * The messages about `name` or any part of it (`events` gathers `events[0]` too; a field
 * of an object body such as `filter.server.region` is shown under `filter`).
 */
export function fieldMessage(problem: Problem | null, name: string): string | null {
  if (!problem) return null;
  const messages = Object.entries(problem.fields)
    .filter(([field]) => isPartOf(field, name))
    .map(([field, message]) => (field === name ? message : `${field}: ${message}`));
  return messages.length ? messages.join('; ') : null;
}

/** Fields the API named that no input of the form shows, so that none goes unseen. */
export function otherFields(problem: Problem | null, shown: string[]): string[] {
  if (!problem) return [];
  return Object.entries(problem.fields)
    .filter(([field]) => !shown.some((name) => isPartOf(field, name)))
    .map(([field, message]) => `${field}: ${message}`);
}

/** The problem's field messages as the list a SchemaForm shows beside its inputs. */
export function fieldErrorsOf(problem: Problem | null): FieldError[] {
  return Object.entries(problem?.fields ?? {}).map(([field, message]) => ({ field, message }));
}
