/**
 * --wait: polls the API until a resource reaches one of the target statuses, with a
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
      const elapsed = Date.now() - started;
      if (elapsed >= timeoutMs) {
        throw new CliError(
          `${current.id} is still ${status} after ${Math.round(elapsed / 1000)} s; it did not become ${target} (--wait-timeout)`,
          EXIT.waitTimedOut,
          'wait_timeout',
        );
      }
      spinner.update(`${current.id}: ${status} -> ${target} (${Math.floor(elapsed / 1000)} s)`);
      await sleep(Math.min(POLL_MS, timeoutMs - elapsed));
      try {
        const data = (await client.request('GET', path)).body?.data;
        if (!isResource(data)) throw new CliError(`${current.id} cannot be waited for: the API answered without it`, EXIT.apiError, 'wait_failed');
        current = data;
      } catch (err) {
        // Destroyed while waiting for its deletion: as deleted as it gets.
        if (err instanceof CliError && err.exitCode === EXIT.notFound && spec.target.includes('deleted')) return { ...current, status: 'deleted' };
        throw err;
      }
    }
  } finally {
    spinner.stop();
  }
}
