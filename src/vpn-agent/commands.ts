/**
 * The agent's daemons (wireguard-go, charon); its tools (ip, wg, swanctl) run through
 * lib/processes.ts. Arguments never carry a key: keys travel in 0600 files of the state
 * directory.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';

/** A long-running daemon whose output lines go to the agent's log. */
export class Daemon {
  private readonly child: ChildProcess;
  private exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly exitPromise: Promise<void>;

  constructor(
    readonly name: string,
    command: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv,
    logger: Logger,
  ) {
    this.child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exitPromise = new Promise((resolve) => {
      this.child.once('error', (err) => {
        this.exited = { code: null, signal: null };
        logger.error({ daemon: name, err: err.message }, 'daemon could not start');
        resolve();
      });
      this.child.once('exit', (code, signal) => {
        this.exited = { code, signal };
        logger.info({ daemon: name, code, signal }, 'daemon exited');
        resolve();
      });
    });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        logger.info({ daemon: name }, line);
      });
    }
  }

  get running(): boolean {
    return this.exited === null;
  }

  describeExit(): string {
    return this.exited ? `${this.name} exited (${this.exited.signal ?? `code ${this.exited.code}`})` : `${this.name} is running`;
  }

  /** SIGTERM, then SIGKILL if it has not gone within the grace. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exitPromise;
    clearTimeout(timer);
  }
}
