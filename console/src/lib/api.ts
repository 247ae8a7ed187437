/**
 * The only way the console's pages talk to the API (docs/console.md). Every call goes to
 * /api/v1 with the session cookie (never a key: the console keeps none); each resolves to the
 * envelope's `data`, or rejects with an ApiError carrying docs/api.md's error envelope.
 * Writes carry the session's CSRF token; a 401 sends the user to the sign-in page.
 */

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: FieldError[],
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The message the API gave for one field (`name`, `backends[0].port`), if any. */
  fieldMessage(field: string): string | undefined {
    return this.details?.find((d) => d.field === field)?.message;
  }
}

export interface Pagination {
  next_cursor: string | null;
}

export interface ListPage<T> {
  data: T[];
  pagination: Pagination;
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export const API_BASE = '/api/v1';

let csrfToken: string | null = null;
let unauthorizedHandler: () => void = () => {};

/** Set from the session (GET /api/v1/session) so that writes carry it. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** What to do when the API answers 401 (the session expired or was signed out). */
export function onUnauthorized(handler: () => void): void {
  unauthorizedHandler = handler;
}

function urlOf(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  const search = params.toString();
  return `${API_BASE}${path}${search ? `?${search}` : ''}`;
}

interface Envelope {
  data?: unknown;
  meta?: { next_cursor?: string | null };
  error?: { code: string; message: string; details?: FieldError[] };
  /** The answer's ETag: the version of the resource it shows (docs/api.md, Versions). */
  version?: string;
}

/** A resource as read, with the version its answer named (its ETag). */
export interface Versioned<T> {
  data: T;
  version: string | null;
}

async function call(method: string, path: string, options: { query?: Query; body?: unknown; ifMatch?: string } = {}): Promise<Envelope> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch;
  let response: Response;
  try {
    response = await fetch(urlOf(path, options.query), {
      method,
      headers,
      credentials: 'same-origin',
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The service could not be reached. Check your connection and try again.');
  }
  if (response.status === 204) return {};
  let envelope: Envelope;
  try {
    envelope = (await response.json()) as Envelope;
  } catch {
    throw new ApiError(response.status, 'invalid_response', `The service answered ${response.status} without a readable body.`);
  }
  if (!response.ok || envelope.error) {
    const error = envelope.error ?? { code: 'unknown_error', message: `The service answered ${response.status}.` };
    if (response.status === 401) unauthorizedHandler();
    throw new ApiError(response.status, error.code, error.message, error.details);
  }
  const version = response.headers.get('etag');
  return version === null ? envelope : { ...envelope, version };
}

/**
 * A GET answered with a document rather than an envelope (a cluster's kubeconfig, YAML): its
 * text, with the session cookie as every call; an error is still the JSON error envelope.
 */
async function documentOf(path: string, accept: string): Promise<string> {
  let response: Response;
  try {
    response = await fetch(urlOf(path), { method: 'GET', headers: { accept: `${accept}, application/json` }, credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network_error', 'The service could not be reached. Check your connection and try again.');
  }
  if (response.ok) return response.text();
  const envelope = (await response.json().catch(() => ({}))) as Envelope;
  const error = envelope.error ?? { code: 'unknown_error', message: `The service answered ${response.status}.` };
  if (response.status === 401) unauthorizedHandler();
  throw new ApiError(response.status, error.code, error.message, error.details);
}

export const api = {
  async get<T>(path: string, query?: Query): Promise<T> {
    return (await call('GET', path, { query })).data as T;
  },
  async list<T>(path: string, query?: Query): Promise<ListPage<T>> {
    const envelope = await call('GET', path, { query });
    return { data: (envelope.data ?? []) as T[], pagination: { next_cursor: envelope.meta?.next_cursor ?? null } };
  },
  async post<T>(path: string, body?: unknown): Promise<T> {
    return (await call('POST', path, { body })).data as T;
  },
  async patch<T>(path: string, body: unknown): Promise<T> {
    return (await call('PATCH', path, { body })).data as T;
  },
  /** A resource and its version, for a change that must not overwrite another's (`ifMatch` below). */
  async versioned<T>(path: string): Promise<Versioned<T>> {
    const envelope = await call('GET', path);
    return { data: envelope.data as T, version: envelope.version ?? null };
  },
  /**
   * A PATCH made only while the resource is at `version` (If-Match); else an ApiError with
   * code precondition_failed. `query`: `{ dry_run: true }` for the change as it would be.
   */
  async patchAt<T>(path: string, body: unknown, version: string | null, query?: Query): Promise<Versioned<T>> {
    const envelope = await call('PATCH', path, { body, query, ...(version === null ? {} : { ifMatch: version }) });
    return { data: envelope.data as T, version: envelope.version ?? null };
  },
  async put<T>(path: string, body: unknown): Promise<T> {
    return (await call('PUT', path, { body })).data as T;
  },
  async del(path: string, query?: Query): Promise<unknown> {
    return (await call('DELETE', path, { query })).data;
  },
  /** A document the API answers as it is (`accept`: its media type), as text. */
  document: documentOf,
};
