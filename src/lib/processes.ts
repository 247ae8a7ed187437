/**
 * Running the tools a program drives (ip and wg for a VPN agent; initdb and pg_ctl for
 * the local database driver): bounded in time and output, failures said with the tool's
 * own words and never a secret it was handed.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { codeOf } from './unknown-values';

/** A tool that failed: the command and what it said on stderr, never its stdout (which may hold a key). */
export class CommandError extends Error {}

/** A system user a command runs as (PostgreSQL refuses to run as root). */
export interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

export interface RunOptions {
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Runs the command as this user; only a process running as root may ask it. */
  runAs?: RunAs | null;
  /**
   * Secrets the command works with: blanked out of its error. A tool may quote what it
   * refused (`wg` prints a malformed key back), and errors reach the log and /status.
   */
  redact?: readonly string[];
}

export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<string> {
  const user = options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : {};
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: options.timeoutMs ?? 15_000, env: options.env ?? process.env, cwd: options.cwd, maxBuffer: 4 * 1024 * 1024, ...user },
      (err, stdout, stderr) => {
        if (!err) {
          resolve(stdout);
          return;
        }
        const said = String(stderr).trim().split('\n').slice(-3).join(' | ');
        const why = err.killed ? 'timed out' : said || err.message;
        reject(new CommandError(`${path.basename(command)} ${args[0] ?? ''} failed: ${redacted(why, options.redact ?? [])}`));
      },
    );
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

/** Whether a process lives; EPERM says it does, run by another user. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return codeOf(err) === 'EPERM';
  }
}

/** Whether `file` is a regular file this process may run. */
export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
