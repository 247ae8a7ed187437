/**
 * This machine as the local database driver and its backups use it: PostgreSQL's programs
 * (run as the user that runs PostgreSQL), the directory the databases and backups live in,
 * and work in the background, in one fair gate and one health for databases and backups
 * alike (BackgroundWork).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { Logger } from 'pino';
import { ADMIN_USER } from '../../resources/database';
import { isAlive, run } from '../../lib/processes';
import type { PostgresInstall } from './postgres-install';
import { BackgroundWork } from './background-work';

/** initdb and pg_basebackup of a small cluster take seconds; a busy disk may take minutes. */
const PROGRAM_TIMEOUT_MS = 180_000;
const CONNECT_TIMEOUT_MS = 3_000;
const QUERY_TIMEOUT_MS = 30_000;

export class PostgresHost extends BackgroundWork {
  constructor(
    readonly install: PostgresInstall,
    /** Where the databases (`<id>/`) and their backups (`backups/<id>/`) live. */
    readonly root: string,
    logger: Logger,
  ) {
    super(logger);
  }

  /** The directory of a major's programs; throws when it is not installed. */
  binOf(major: string): string {
    const bin = this.install.majors.get(major);
    if (!bin) throw new Error(`PostgreSQL ${major} is not installed on this machine; it has ${this.majors()}`);
    return bin;
  }

  majors(): string {
    return [...this.install.majors.keys()].join(', ');
  }

  newest(): string {
    return [...this.install.majors.keys()].sort((a, b) => Number(a) - Number(b)).at(-1) ?? '';
  }

  /** Runs one of PostgreSQL's programs (or a system one, by bare name) as PostgreSQL's user. */
  program(bin: string | null, program: string, args: string[]): Promise<string> {
    const command = bin ? path.join(bin, program) : program;
    return run(command, args, { runAs: this.install.runAs, timeoutMs: PROGRAM_TIMEOUT_MS, env: { PATH: process.env.PATH, LANG: 'C.UTF-8' } });
  }

  /** A directory PostgreSQL's user owns and only it may enter, below the root, which it may pass through. */
  async makeDir(dir: string): Promise<void> {
    await fs.promises.mkdir(this.root, { recursive: true, mode: 0o711 });
    await fs.promises.mkdir(path.dirname(dir), { recursive: true, mode: 0o711 });
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    const { runAs } = this.install;
    if (runAs) await fs.promises.chown(dir, runAs.uid, runAs.gid);
  }

  /** Uses a connection to a node through its socket, as the administrator (trusted on the socket only). */
  async connect<T>(sockets: string, port: number, use: (client: Client) => Promise<T>, database = 'postgres'): Promise<T> {
    const client = new Client({
      host: sockets,
      port,
      user: ADMIN_USER,
      database,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      query_timeout: QUERY_TIMEOUT_MS,
    });
    // A connection the server ends (a node stopping) is an 'error' event; unheard, it would end the service.
    client.on('error', (err) => {
      this.logger.debug({ err: err.message }, 'local PostgreSQL connection ended');
    });
    await client.connect();
    try {
      return await use(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/** A node's postmaster from its lock file: its pid and port, or null when there is none. */
export function postmasterOf(data: string): { pid: number; port: number } | null {
  try {
    const lines = fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n');
    const [pid, port] = [Number(lines[0]), Number(lines[3])];
    return Number.isInteger(pid) && pid > 0 ? { pid, port } : null;
  } catch {
    return null;
  }
}

export function isRunning(data: string): boolean {
  const postmaster = postmasterOf(data);
  return postmaster !== null && isAlive(postmaster.pid);
}
