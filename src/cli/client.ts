/**
 * The CLI's HTTP client: every request carries the key and a timeout, and every way a
 * request can fail becomes a CliError with the API's code, message and field details,
 * or a sentence about the network, never a stack trace.
 */
import { CliError, EXIT, exitCodeOfStatus, FieldDetail } from './exit-codes';
import { fieldOf, hasStrings, isRecord } from '../lib/unknown-values';
import { serverSentEvents, type ServerSentEvent } from './server-sent-events';

export type Query = Record<string, string | number | boolean | undefined>;

export interface ApiAnswer {
  status: number;
  /** The parsed envelope, or null for a 204. */
  body: { data?: unknown; meta?: { next_cursor?: string | null } } | null;
  /** The version of the resource the answer shows (its ETag), when it names one (docs/api.md, Versions). */
  version: string | null;
}

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Make the change only while the resource is at this version (If-Match). */
  ifMatch?: string;
}

export interface ClientOptions {
  apiUrl: string;
  apiKey: string;
  timeoutMs: number;
}

/** The longest watch a service grants by default (CLOUDPLANE_WATCH_MAX_SECONDS). */
const LONGEST_WATCH_SECONDS = 1800;

export class ApiClient {
  constructor(private readonly options: ClientOptions) {}

  get apiUrl(): string {
    return this.options.apiUrl;
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiAnswer> {
    const { response, text } = await this.fetch(method, path, 'application/json', options);
    const body = parseJson(text);
    if (response.ok && body !== undefined) return { status: response.status, body: body, version: response.headers.get('etag') };
    if (response.ok)
      throw new CliError(
        `${this.options.apiUrl} answered ${response.status} with something other than JSON; is it a Cloudplane API?`,
        EXIT.unavailable,
        'not_an_api',
      );
    throw apiError(response.status, body, text, response.headers.get('retry-after'));
  }

  /** A call whose answer is a document of `mediaType` (a kubeconfig), not an envelope: its text. Errors are envelopes as ever. */
  async document(method: string, path: string, mediaType: string): Promise<string> {
    const { response, text } = await this.fetch(method, path, `${mediaType}, application/json;q=0.5`);
    if (response.ok) return text;
    throw apiError(response.status, parseJson(text), text, response.headers.get('retry-after'));
  }

  /**
   * A watch of `path` (docs/api.md, Watching changes): its events until the stream ends or
   * `deadline` passes (the iteration then ends). Null
   * when the path cannot be watched here: a route without watches (400, 422, or JSON), a
   * team holding its most (429), a replica holding its most (503); poll instead.
   */
  async watch(path: string, options: { lastEventId?: string; deadline: number }): Promise<AsyncIterable<ServerSentEvent> | null> {
    const remainingMs = Math.max(1, options.deadline - Date.now());
    const url = new URL(`${this.options.apiUrl}/api/v1${path}`);
    url.searchParams.set('watch', 'true');
    // Past the service's longest watch (by default) the service would refuse the value: the
    // stream then ends at the service's time and is resumed, or at `deadline` by the signal.
    const seconds = Math.ceil(remainingMs / 1000);
    if (seconds <= LONGEST_WATCH_SECONDS) url.searchParams.set('timeout_seconds', String(seconds));
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept: 'text/event-stream', 'user-agent': 'cloudplane-cli' };
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    const signal = AbortSignal.timeout(remainingMs);
    let response: Response;
    try {
      response = await fetch(url, { headers, signal });
    } catch (err) {
      throw networkError(err, this.options.apiUrl, this.options.timeoutMs);
    }
    if (!response.ok) {
      const text = await response.text();
      if ([400, 422, 429, 503].includes(response.status)) return null;
      throw apiError(response.status, parseJson(text), text, response.headers.get('retry-after'));
    }
    if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
      await response.body?.cancel();
      return null;
    }
    return untilAborted(serverSentEvents(response.body), signal);
  }

  private async fetch(method: string, path: string, accept: string, options: RequestOptions = {}): Promise<{ response: Response; text: string }> {
    const url = new URL(`${this.options.apiUrl}/api/v1${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept, 'user-agent': 'cloudplane-cli' };
    if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch;
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    try {
      const response = await fetch(url, { method, headers, body: payload, signal: AbortSignal.timeout(this.options.timeoutMs) });
      return { response, text: await response.text() };
    } catch (err) {
      throw networkError(err, this.options.apiUrl, this.options.timeoutMs);
    }
  }
}

/** The events, ending quietly (rather than throwing) once `signal` aborts the stream under them. */
async function* untilAborted(events: AsyncIterable<ServerSentEvent>, signal: AbortSignal): AsyncGenerator<ServerSentEvent> {
  try {
    yield* events;
  } catch (err) {
    if (!signal.aborted) throw err;
  }
}

export function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The API's error envelope, `{"error": {"code", "message", "details"}}`, in an answer's body; undefined when it is not one. */
export function envelopeError(body: unknown): { code: string; message: string; details: FieldDetail[] } | undefined {
  const error = fieldOf(body, 'error');
  if (!isRecord(error) || typeof error.code !== 'string' || !error.code) return undefined;
  const listed: unknown[] = Array.isArray(error.details) ? error.details : [];
  const details = listed.filter((d) => hasStrings(d, 'field', 'message'));
  return { code: error.code, message: typeof error.message === 'string' ? error.message : '', details };
}

function apiError(status: number, body: unknown, text: string, retryAfter: string | null): CliError {
  const error = envelopeError(body);
  // A 429 or 503 says when to come back; a script retrying wants to know.
  const when = retryAfter ? ` (retry after ${retryAfter} s)` : '';
  if (error) return new CliError(`${error.message}${when}`, exitCodeOfStatus(status), error.code, error.details);
  // Not the API's envelope: a proxy or another server answered.
  const excerpt = text.trim().slice(0, 200);
  return new CliError(`HTTP ${status}${excerpt ? `: ${excerpt}` : ''} (is this a Cloudplane API?)`, exitCodeOfStatus(status));
}

function networkError(err: unknown, apiUrl: string, timeoutMs: number): CliError {
  // fetch's failures: a DOMException when timed out or aborted, a TypeError whose cause is the socket's error.
  const name = fieldOf(err, 'name');
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new CliError(`no answer from ${apiUrl} within ${timeoutMs / 1000} s (--timeout)`, EXIT.unavailable, 'timeout');
  }
  const cause = fieldOf(err, 'cause');
  const reason = fieldOf(cause, 'code') ?? fieldOf(cause, 'message') ?? fieldOf(err, 'message');
  return new CliError(`cannot reach ${apiUrl}: ${String(reason)}`, EXIT.unavailable, 'unreachable');
}
