/**
 * --wait: follows a resource until it reaches one of the target statuses, by a watch of it
 * (its changes pushed as they happen) or, where it cannot be watched, by polling; with a
 * spinner on stderr when stderr is a terminal (never in pipes or logs).
 */
import { ApiClient } from './client';
import { CliError, EXIT } from './exit-codes';
import { DEAD_END_STATES, WaitSpec } from '../api/operations';
import { isRecord } from '../lib/unknown-values';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const POLL_MS = 500;

interface Resource {
  id: string;
  status?: string;
  status_reason?: string | null;
}

/** Whether an answer's data is a resource that can be waited for (it has an id; its status, if any, is a string). */
export const isResource = (data: unknown): data is Resource =>
  isRecord(data) && typeof data.id === 'string' && (data.status === undefined || typeof data.status === 'string');

class Spinner {
  private frame = 0;
  private timer?: NodeJS.Timeout;
  private text = '';
  constructor(private readonly stream: NodeJS.WriteStream) {}

  start(text: string): void {
    if (!this.stream.isTTY) return;
    this.text = text;
    this.timer = setInterval(() => {
      this.draw();
    }, 100);
    this.draw();
  }
  update(text: string): void {
    this.text = text;
  }
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.stream.write('\r\x1b[2K');
  }
  private draw(): void {
    this.stream.write(`\r\x1b[2K${FRAMES[this.frame++ % FRAMES.length]} ${this.text}`);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The resource once it is in a target status; CliError when it cannot get there or time runs out. */
export async function waitFor(client: ApiClient, spec: WaitSpec, first: Resource, timeoutMs: number): Promise<Resource> {
  const path = spec.poll.replace('{id}', encodeURIComponent(first.id));
  const target = spec.target.join(' or ');
  const started = Date.now();
  const spinner = new Spinner(process.stderr);
  let current = first;
  spinner.start(`${first.id}: ${first.status} -> ${target}`);
  const states = statesOf(client, path, started + timeoutMs);
  try {
    for (;;) {
      const status = current.status ?? '';
      if (spec.target.includes(status)) return current;
      if (DEAD_END_STATES.includes(status)) {
        throw new CliError(
          `${current.id} is ${status}${current.status_reason ? `: ${current.status_reason}` : ''}; it will not become ${target}`,
          EXIT.apiError,
          'wait_failed',
        );
      }
      spinner.update(`${current.id}: ${status} -> ${target} (${Math.floor((Date.now() - started) / 1000)} s)`);
      const next = await states.next();
      if (next.done) {
        throw new CliError(
          `${current.id} is still ${status} after ${Math.round((Date.now() - started) / 1000)} s; it did not become ${target} (--wait-timeout)`,
          EXIT.waitTimedOut,
          'wait_timeout',
        );
      }
      // Gone while waiting (destroyed): as deleted as it gets, or an end it cannot come back from.
      current = next.value ?? { ...current, status: 'deleted' };
      if (next.value === null && !spec.target.includes('deleted'))
        throw new CliError(`${current.id} was deleted; it will not become ${target}`, EXIT.apiError, 'wait_failed');
    }
  } finally {
    spinner.stop();
    // Closes the watch, which would otherwise hold the process until its timeout.
    await states.return(null);
  }
}

/**
 * The resource's states as they come until `deadline`, null once it is gone: pushed by a
 * watch of it (docs/api.md, Watching changes), resumed from its last event when the
 * stream ends; polled every POLL_MS where it cannot be watched (a route without watches,
 * a team holding its most, a proxy that does not pass the stream).
 */
async function* statesOf(client: ApiClient, path: string, deadline: number): AsyncGenerator<Resource | null> {
  let lastEventId: string | undefined;
  let watching = true;
  while (Date.now() < deadline) {
    if (watching) {
      try {
        const events = await client.watch(path, { lastEventId, deadline });
        watching = events !== null;
        for await (const event of events ?? []) {
          lastEventId = event.id ?? lastEventId;
          if (event.event === 'deleted') yield null;
          if (event.event !== 'added' && event.event !== 'modified') continue;
          const data: unknown = JSON.parse(event.data);
          if (isResource(data)) yield data;
        }
      } catch (err) {
        if (err instanceof CliError && err.exitCode === EXIT.notFound) {
          yield null;
          return;
        }
        // The deadline passed while watching, or the stream broke: the loop ends, or goes on polling.
        if (err instanceof CliError) throw err;
        watching = false;
      }
      continue;
    }
    await sleep(Math.max(0, Math.min(POLL_MS, deadline - Date.now())));
    try {
      const data = (await client.request('GET', path)).body?.data;
      if (!isResource(data)) throw new CliError(`${path} cannot be waited for: the API answered without it`, EXIT.apiError, 'wait_failed');
      yield data;
    } catch (err) {
      if (!(err instanceof CliError && err.exitCode === EXIT.notFound)) throw err;
      yield null;
      return;
    }
  }
}
