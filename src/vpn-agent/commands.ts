/**
 * The agent's tools (ip, wg, swanctl) and daemons (wireguard-go, charon). Arguments never
 * carry a key: keys travel in 0600 files of the state directory.
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';

/** A tool that failed: the command and what it said on stderr, never its stdout (which may hold a key). */
export class CommandError extends Error {}

export interface RunOptions {
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /**
   * Secrets the command works with: blanked out of its error. A tool may quote what it
   * refused (`wg` prints a malformed key back), and errors reach the log and /status.
   */
  redact?: readonly string[];
}

export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: options.timeoutMs ?? 15_000, env: options.env ?? process.env, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) {
        resolve(stdout);
        return;
      }
      const said = String(stderr).trim().split('\n').slice(-3).join(' | ');
      const why = err.killed ? 'timed out' : said || err.message;
      reject(new CommandError(`${path.basename(command)} ${args[0] ?? ''} failed: ${redacted(why, options.redact ?? [])}`));
    });
  });
}

export function redacted(text: string, secrets: readonly string[]): string {
  return secrets.filter((secret) => secret.length > 0).reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}

/** Whether a command succeeds; for probes whose failure is an answer. */
export async function succeeds(command: string, args: readonly string[]): Promise<boolean> {
  try {
    await run(command, args);
    return true;
  } catch {
    return false;
  }
}

/** Writes a file only its owner can read, replacing any earlier one in one step. */
export function writePrivateFile(file: string, content: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, content, { mode: 0o600 });
  fs.chmodSync(temporary, 0o600);
  fs.renameSync(temporary, file);
}

export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, stillWorth: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (!stillWorth()) throw new CommandError(`${what}: gave up`);
    if (Date.now() > deadline) throw new CommandError(`${what}: not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

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
