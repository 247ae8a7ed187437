/**
 * Turns what the API client rejected with (CONTRACT's error envelope: code, message and,
 * on 422, details naming each field) into what a form shows: one message for the form,
 * and one per field, so every validation message of the API reaches the user.
 */
export interface Problem {
  message: string;
  code: string | null;
  fields: Record<string, string>;
}

interface ErrorLike {
  message?: unknown;
  code?: unknown;
  details?: unknown;
}

export function problemOf(err: unknown): Problem {
  const e = (typeof err === 'object' && err !== null ? err : {}) as ErrorLike;
  const message = typeof e.message === 'string' && e.message ? e.message : String(err);
  const fields: Record<string, string> = {};
  if (Array.isArray(e.details)) {
    for (const detail of e.details as { field?: unknown; message?: unknown }[]) {
      if (typeof detail.field !== 'string' || typeof detail.message !== 'string') continue;
      fields[detail.field] = fields[detail.field] ? `${fields[detail.field]}; ${detail.message}` : detail.message;
    }
  }
  return { message, code: typeof e.code === 'string' ? e.code : null, fields };
}

/**
 * The messages about `name` or any part of it (`events` gathers `events[0]` too; a field
 * of an object body such as `filter.server.region` is shown under `filter`).
 */
export function fieldMessage(problem: Problem | null, name: string): string | null {
  if (!problem) return null;
  const messages = Object.entries(problem.fields)
    .filter(([field]) => field === name || field.startsWith(`${name}[`) || field.startsWith(`${name}.`))
    .map(([field, message]) => (field === name ? message : `${field}: ${message}`));
  return messages.length ? messages.join('; ') : null;
}

/** Fields the API named that no input of the form shows, so that none goes unseen. */
export function otherFields(problem: Problem | null, shown: string[]): string[] {
  if (!problem) return [];
  return Object.entries(problem.fields)
    .filter(([field]) => !shown.some((name) => field === name || field.startsWith(`${name}[`) || field.startsWith(`${name}.`)))
    .map(([field, message]) => `${field}: ${message}`);
}
