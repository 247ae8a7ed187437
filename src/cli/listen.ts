/**
 * `cloudplane listen --forward-to URL`: makes a listener (a temporary subscription whose
 * deliveries the service streams to this process; webhooks/listener.ts), prints its signing
 * secret once, POSTs every delivery to the local receiver with exactly the headers and body
 * an HTTP attempt carries, and reports the receiver's answer, so the delivery history and
 * the retry schedule work as for any subscription. The stream is reconnected when it
 * drops (the listener lives for its lease meanwhile); Ctrl-C deletes the listener.
 */
import type { Command } from 'commander';
import { ApiClient, envelopeError, parseJson } from './client';
import { serverSentEvents } from './server-sent-events';
import { fieldOf, hasStrings, scalarText, textOf } from '../lib/unknown-values';
import { CliError, EXIT, ExitCode } from './exit-codes';

export interface ListenTarget {
  apiUrl: string;
  apiKey: string;
  /** Of each API call (not of the stream, which stays open). */
  timeoutMs?: number;
}

export interface ListenOptions extends ListenTarget {
  forwardTo: string;
  /** Event types or `category.*`; every category when absent. */
  events?: string[];
  out?: NodeJS.WritableStream;
  err?: NodeJS.WritableStream;
  /** Ends the listener (Ctrl-C); runListen then deletes it and resolves 0. */
  signal?: AbortSignal;
}

/** The `delivery` event of the stream. */
interface StreamedDelivery {
  delivery_id: string;
  attempt: number;
  event_type: string;
  timeout_ms: number;
  headers: Record<string, string>;
  body: string;
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 5_000;
/** What the API is given of a receiver's failure; the service keeps 500 characters. */
const MAX_ERROR = 300;

/** `target` resolves the endpoint and key as every command does (a context, or the environment). */
export function registerListen(program: Command, target: () => ListenTarget): void {
  program
    .command('listen')
    .description("Receive your team's webhook deliveries here and forward them, signed, to a local receiver (like `stripe listen`)")
    .requiredOption('--forward-to <url>', 'the local receiver, e.g. http://localhost:3000/hook')
    .option('--events <types>', 'comma-separated event types or categories (load_balancer.*,server.running); all by default')
    .action(async (flags: { forwardTo: string; events?: string }) => {
      const controller = new AbortController();
      const stop = () => {
        controller.abort();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const code = await runListen({ ...target(), forwardTo: flags.forwardTo, events: parseEvents(flags.events), signal: controller.signal });
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      process.exitCode = code;
    });
}

export function parseEvents(raw: string | undefined): string[] | undefined {
  const events = (raw ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  return events.length ? events : undefined;
}

export async function runListen(options: ListenOptions): Promise<ExitCode> {
  const out = options.out ?? process.stdout;
  const err = options.err ?? process.stderr;
  const forwardTo = receiverUrl(options.forwardTo);
  if (!forwardTo) {
    err.write(`Error: --forward-to must be an http or https URL, got "${options.forwardTo}"\n`);
    return EXIT.usage;
  }
  if (!options.apiKey) {
    err.write('Error: no API key: set CLOUDPLANE_API_KEY (or a context with `cloudplane auth init`)\n');
    return EXIT.usage;
  }
  const api = apiClientOf(options);
  let listener: { id: string; secret: string };
  try {
    const created = await api.request('POST', '/webhooks/listeners', { body: { events: options.events, forward_to: forwardTo } });
    const data = created.body?.data;
    if (!hasStrings(data, 'id', 'secret')) throw new CliError('the API made no listener: its answer has no id and secret', EXIT.apiError);
    listener = data;
  } catch (error) {
    return reportFailure(error, err);
  }
  out.write(`Ready! Your webhook signing secret is ${listener.secret} (listener ${listener.id}; forwarding to ${forwardTo}; Ctrl-C to quit)\n`);

  const stopped = options.signal ?? new AbortController().signal;
  const lost = await streamUntilStopped(options, listener.id, forwardTo, stopped, out, err);
  if (lost) {
    err.write(`Error: the listener ended: ${lost}\n`);
    // The listener no longer exists on the service.
    return EXIT.notFound;
  }
  try {
    await api.request('DELETE', `/webhooks/${listener.id}`);
    out.write(`Listener ${listener.id} removed.\n`);
  } catch (error) {
    err.write(`Could not remove listener ${listener.id}:\n`);
    return reportFailure(error, err);
  }
  return EXIT.ok;
}

/** Holds the stream, reconnecting, until stopped (resolves null) or the listener is gone (resolves why). */
async function streamUntilStopped(
  options: ListenOptions,
  id: string,
  forwardTo: string,
  stopped: AbortSignal,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<string | null> {
  const api = apiClientOf(options);
  let wait = RECONNECT_MIN_MS;
  // Read through a call: the signal aborts while the loop awaits, which the compiler cannot see.
  const isStopped = () => stopped.aborted;
  while (!isStopped()) {
    const connection = new AbortController();
    const abort = () => {
      connection.abort();
    };
    stopped.addEventListener('abort', abort, { once: true });
    try {
      const response = await fetch(`${options.apiUrl}/api/v1/webhooks/${id}/stream`, {
        headers: { authorization: `Bearer ${options.apiKey}`, accept: 'text/event-stream' },
        signal: connection.signal,
      });
      if (!response.ok) {
        const failure = await refusalOf(response);
        // Gone or not ours: reconnecting cannot help.
        if (response.status === 404 || response.status === 409 || response.status === 401 || response.status === 403) return failure;
        throw new Error(failure);
      }
      if (!response.body) throw new Error('the stream was answered without a body');
      for await (const event of serverSentEvents(response.body)) {
        wait = RECONNECT_MIN_MS;
        if (event.event === 'delivery') void forward(api, id, forwardTo, JSON.parse(event.data) as StreamedDelivery, out, err);
        if (event.event === 'closed') {
          const { reason } = JSON.parse(event.data) as { reason: string };
          if (reason === 'the listener was deleted') return reason;
        }
      }
    } catch (error) {
      if (isStopped()) break;
      err.write(`Stream interrupted (${textOf(error)}); reconnecting\n`);
    } finally {
      stopped.removeEventListener('abort', abort);
      connection.abort();
    }
    if (isStopped()) break;
    await sleep(wait, stopped);
    wait = Math.min(wait * 2, RECONNECT_MAX_MS);
  }
  return null;
}

/** POSTs one delivery to the local receiver, reports its answer, and prints a line. */
async function forward(
  api: ApiClient,
  id: string,
  forwardTo: string,
  delivery: StreamedDelivery,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<void> {
  // fetch sets the length itself (of the same body); the rest goes as the service signed it.
  const { 'content-length': _length, ...headers } = delivery.headers;
  let answer: { response_status: number | null; error: string | null; retry_after: string | null };
  try {
    const response = await fetch(forwardTo, {
      method: 'POST',
      headers,
      body: delivery.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(delivery.timeout_ms),
    });
    await response.arrayBuffer().catch(() => undefined);
    answer = { response_status: response.status, error: null, retry_after: response.headers.get('retry-after') };
  } catch (error) {
    answer = { response_status: null, error: receiverError(error).slice(0, MAX_ERROR), retry_after: null };
  }
  const outcome = answer.response_status === null ? answer.error : String(answer.response_status);
  out.write(`${new Date().toISOString()}  ${delivery.event_type}  ${delivery.delivery_id}  attempt ${delivery.attempt}  -> ${outcome}\n`);
  try {
    await api.request('POST', `/webhooks/${id}/deliveries/${delivery.delivery_id}/answer`, { body: { attempt: delivery.attempt, ...answer } });
  } catch (error) {
    err.write(`Could not report the answer to ${delivery.delivery_id}: ${textOf(error)}\n`);
  }
}

function receiverError(error: unknown): string {
  // fetch's failures: a DOMException when timed out, a TypeError whose cause is the socket's error.
  if (fieldOf(error, 'name') === 'TimeoutError') return 'the receiver did not answer in time';
  const code = scalarText(fieldOf(fieldOf(error, 'cause'), 'code'));
  const message = String(fieldOf(error, 'message'));
  return code ? `${code} (${message})` : message;
}

/** The CLI's client: the API calls get its timeout and its error codes; the stream is fetched apart, as it stays open. */
function apiClientOf({ apiUrl, apiKey, timeoutMs }: ListenTarget): ApiClient {
  return new ApiClient({ apiUrl, apiKey, timeoutMs: timeoutMs ?? 30_000 });
}

function reportFailure(error: unknown, err: NodeJS.WritableStream): ExitCode {
  if (error instanceof CliError) {
    err.write(`${error.render()}\n`);
    return error.exitCode;
  }
  err.write(`Error: ${textOf(error)}\n`);
  return EXIT.apiError;
}

/** `code: message` of a refused stream, from the API's envelope when there is one. */
async function refusalOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  const error = envelopeError(parseJson(text));
  return error ? `${error.code}: ${error.message}` : `HTTP ${response.status}: ${text.slice(0, 200) || response.statusText}`;
}

function receiverUrl(raw: string): string | null {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : null;
  } catch {
    return null;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
