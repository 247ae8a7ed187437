/**
 * Svix (svix-server, https://github.com/svix/svix-webhooks) beside Cloudplane in the webhook
 * benchmark (bench/webhooks.ts). Finds a built svix-server (`BENCH_SVIX_BIN`) and PostgreSQL's
 * programs, starts a throwaway PostgreSQL cluster and svix-server on free loopback ports, and
 * reads the CPU time of every process of each from /proc. Nothing of Svix is built here: the
 * binary is built from its own repository (bench/README.md says how).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync, spawn, ChildProcess } from 'node:child_process';
import { freePort } from '../test/helpers/kube-apiserver';

/** Linux's clock ticks per second (USER_HZ), the unit of /proc's CPU times. */
const CLOCK_TICKS_PER_S = 100;

/** What a Svix row needs, found on this machine. */
export interface SvixPrograms {
  bin: string;
  /** Directory of PostgreSQL's initdb, pg_ctl and postgres. */
  pgBinDir: string;
  /** The user PostgreSQL runs as when the benchmark runs as root (PostgreSQL refuses root). */
  pgUser: { name: string; uid: number; gid: number } | null;
}

/** The build of svix-server measured: its version, the commit it was built from, and the files of that tree that differed. */
export interface SvixBuild {
  version: string;
  commit: string;
  /** `git status --porcelain` of the tree the binary sits in (the local build's changes, e.g. a [patch] or a .cargo/config.toml); empty when unknown. */
  local_changes: string[];
}

const isExecutable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
};

/** A directory holding initdb, pg_ctl and postgres: `BENCH_SVIX_PG_BIN_DIR`, Debian's newest, or PATH's. */
function postgresBinDir(): string | null {
  const holds = (dir: string) => ['initdb', 'pg_ctl', 'postgres'].every((program) => isExecutable(path.join(dir, program)));
  const named = process.env.BENCH_SVIX_PG_BIN_DIR;
  if (named) return holds(named) ? named : null;
  const debian = '/usr/lib/postgresql';
  const versions = fs.existsSync(debian)
    ? fs
        .readdirSync(debian)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const version of versions) if (holds(path.join(debian, version, 'bin'))) return path.join(debian, version, 'bin');
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && holds(dir)) return dir;
  return null;
}

/** A user of /etc/passwd by name, for running PostgreSQL under it. */
function passwdUser(name: string): { name: string; uid: number; gid: number } | null {
  try {
    for (const line of fs.readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [user, , uid, gid] = line.split(':');
      if (user === name) return { name, uid: Number(uid), gid: Number(gid) };
    }
  } catch {
    // no /etc/passwd: not found
  }
  return null;
}

/** svix-server and PostgreSQL, or the reason the Svix row is skipped (one line, printed as is). */
export function findSvix(): { programs: SvixPrograms } | { skipped: string } {
  const bin = process.env.BENCH_SVIX_BIN;
  if (!bin) return { skipped: 'Svix row skipped: svix-server not found (BENCH_SVIX_BIN is not set; bench/README.md says how to build it).' };
  if (!isExecutable(bin)) return { skipped: `Svix row skipped: svix-server not found (BENCH_SVIX_BIN=${bin} is not an executable file).` };
  const pgBinDir = postgresBinDir();
  if (!pgBinDir)
    return {
      skipped: `Svix row skipped: the PostgreSQL it needs was not found (no initdb, pg_ctl and postgres in ${process.env.BENCH_SVIX_PG_BIN_DIR ?? 'BENCH_SVIX_PG_BIN_DIR, /usr/lib/postgresql/*/bin or PATH'}).`,
    };
  let pgUser = null;
  if (process.getuid?.() === 0) {
    const name = process.env.BENCH_SVIX_PG_USER ?? 'postgres';
    pgUser = passwdUser(name);
    if (!pgUser)
      return { skipped: `Svix row skipped: running as root, and PostgreSQL refuses root, but there is no user ${name} to run it as (BENCH_SVIX_PG_USER).` };
  }
  return { programs: { bin, pgBinDir, pgUser } };
}

/** The version and commit of the svix-server binary: `BENCH_SVIX_COMMIT`, else the git tree it was built in. */
export function svixBuild(bin: string): SvixBuild {
  let version = 'unknown';
  try {
    version = execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
  } catch {
    // an old build without --version: left unknown
  }
  const dir = path.dirname(fs.realpathSync(bin));
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  let commit = process.env.BENCH_SVIX_COMMIT ?? 'unknown';
  let localChanges: string[] = [];
  try {
    const built = git('rev-parse', 'HEAD');
    if (!process.env.BENCH_SVIX_COMMIT) {
      commit = built;
      localChanges = git('status', '--porcelain')
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean);
    }
  } catch {
    // not in a git tree: BENCH_SVIX_COMMIT or unknown
  }
  return { version, commit, local_changes: localChanges };
}

/** Every process now: its parent and its CPU ticks (its own user + system, and its waited-for children's). */
function processTable(): Map<number, { ppid: number; ticks: number }> {
  const table = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After the command (in parentheses, may hold spaces): state, ppid, ...; utime, stime, cutime, cstime are the 12th to 15th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/** The pids of a process and of every process below it. */
function treeOf(table: Map<number, { ppid: number; ticks: number }>, rootPid: number): number[] {
  const below = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 0 && hops < 64; p = table.get(p)?.ppid ?? 0, hops++) if (p === rootPid) return true;
    return false;
  };
  return [...table.keys()].filter(below);
}

/**
 * CPU seconds (user + system) used so far by a process and every process below it: each live
 * one's own time, plus the time of children they already waited for (cutime, cstime: a
 * PostgreSQL backend that ended is in its postmaster's). 0 once the root is gone.
 */
export function treeCpuSeconds(rootPid: number): number {
  const table = processTable();
  return treeOf(table, rootPid).reduce((sum, pid) => sum + (table.get(pid)?.ticks ?? 0), 0) / CLOCK_TICKS_PER_S;
}

/** How many processes a tree holds now (the root and every process below it). */
export const treeSize = (rootPid: number): number => treeOf(processTable(), rootPid).length;

/** A program run to its end; rejects with its output when it fails. */
function run(
  file: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; uid?: number; gid?: number; cwd?: string; timeoutMs?: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: options.env, uid: options.uid, gid: options.gid, cwd: options.cwd, timeout: options.timeoutMs ?? 120_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${path.basename(file)} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
        else resolve(`${stdout}${stderr}`);
      },
    );
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** svix-server and its PostgreSQL, running. */
export interface RunningSvix {
  /** http://127.0.0.1:<port> of svix-server's API. */
  url: string;
  /** A bearer token for the default organisation (`svix-server jwt generate`). */
  token: string;
  build: SvixBuild;
  postgresVersion: string;
  serverPid: number;
  postmasterPid: number;
  /** CPU seconds so far of svix-server and of PostgreSQL (the postmaster and every process below it). */
  cpu(): { server: number; postgres: number };
  /** Processes of each now (svix-server's tree, PostgreSQL's). */
  processes(): { server: number; postgres: number };
  stop(): Promise<void>;
}

/** The settings svix-server runs with here (also written into the report). */
export function svixSettings(pgPort: number, svixPort: number, jwtSecret: string): Record<string, string> {
  return {
    SVIX_DB_DSN: `postgresql://postgres@127.0.0.1:${pgPort}/postgres`,
    SVIX_JWT_SECRET: jwtSecret,
    SVIX_LISTEN_ADDRESS: `127.0.0.1:${svixPort}`,
    SVIX_QUEUE_TYPE: 'memory',
    SVIX_CACHE_TYPE: 'memory',
    // Svix refuses endpoints in private and loopback address space unless whitelisted; the receiver is on 127.0.0.1.
    SVIX_WHITELIST_SUBNETS: '[127.0.0.1/32]',
    // svix-server's lowest log level is info, which writes a line per delivery; Cloudplane runs with logging off.
    RUST_LOG: 'warn',
  };
}

/**
 * A throwaway PostgreSQL cluster (initdb in a fresh directory under the temporary directory,
 * trust authentication on 127.0.0.1 only, PostgreSQL's defaults otherwise, so fsync and
 * synchronous commit are on, as Cloudplane's store fsyncs; max_connections 150 for svix-server's
 * default pool of 100), migrated by `svix-server migrate`, then svix-server itself.
 */
export async function startSvix(programs: SvixPrograms, log: (line: string) => void): Promise<RunningSvix> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-svix-'));
  const asPg = programs.pgUser ? { uid: programs.pgUser.uid, gid: programs.pgUser.gid } : {};
  if (programs.pgUser) fs.chownSync(dir, programs.pgUser.uid, programs.pgUser.gid);
  const pgData = path.join(dir, 'pgdata');
  const pg = (program: string) => path.join(programs.pgBinDir, program);
  const pgEnv = { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', HOME: dir };
  let server: ChildProcess | null = null;
  let pgStarted = false;
  const cleanUp = async () => {
    const running = server;
    if (running && running.exitCode === null && running.signalCode === null) {
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      const timer = setTimeout(() => running.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    if (pgStarted) {
      try {
        await run(pg('pg_ctl'), ['stop', '-D', pgData, '-m', 'fast', '-w'], { env: pgEnv, cwd: dir, ...asPg });
      } catch (err) {
        log(`  pg_ctl stop: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const postgresVersion = (await run(pg('postgres'), ['--version'], { env: pgEnv, ...asPg })).trim();
    await run(pg('initdb'), ['-D', pgData, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C'], { env: pgEnv, cwd: dir, ...asPg });
    const pgPort = await freePort();
    const options = `-p ${pgPort} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=150`;
    await run(pg('pg_ctl'), ['start', '-D', pgData, '-l', path.join(dir, 'postgres.log'), '-w', '-t', '60', '-o', options], { env: pgEnv, cwd: dir, ...asPg });
    pgStarted = true;
    const postmasterPid = Number(fs.readFileSync(path.join(pgData, 'postmaster.pid'), 'utf8').split('\n')[0]);
    log(`  ${postgresVersion} on 127.0.0.1:${pgPort}, postmaster ${postmasterPid}`);

    const svixPort = await freePort();
    const env = { PATH: process.env.PATH ?? '', HOME: dir, ...svixSettings(pgPort, svixPort, crypto.randomBytes(24).toString('hex')) };
    await run(programs.bin, ['migrate'], { env, cwd: dir });
    const token = /Token \(Bearer\): (\S+)/.exec(await run(programs.bin, ['jwt', 'generate'], { env, cwd: dir }))?.[1];
    if (!token) throw new Error('svix-server jwt generate printed no token');

    const logFd = fs.openSync(path.join(dir, 'svix-server.log'), 'a');
    const child = spawn(programs.bin, [], { env, cwd: dir, stdio: ['ignore', logFd, logFd] });
    server = child;
    fs.closeSync(logFd);
    if (child.pid === undefined) throw new Error(`svix-server did not start: ${programs.bin}`);
    const serverPid = child.pid;
    const url = `http://127.0.0.1:${svixPort}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(
          `svix-server exited (${String(child.exitCode ?? child.signalCode)}):\n${fs.readFileSync(path.join(dir, 'svix-server.log'), 'utf8').slice(-2000)}`,
        );
      const up = await fetch(`${url}/api/v1/health/`).then(
        (res) => res.ok,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline) throw new Error('svix-server did not answer /api/v1/health/ within 60 s');
      await sleep(200);
    }
    log(`  svix-server on ${url}, pid ${serverPid}`);
    return {
      url,
      token,
      build: svixBuild(programs.bin),
      postgresVersion,
      serverPid,
      postmasterPid,
      cpu: () => ({ server: treeCpuSeconds(serverPid), postgres: treeCpuSeconds(postmasterPid) }),
      processes: () => ({ server: treeSize(serverPid), postgres: treeSize(postmasterPid) }),
      stop: cleanUp,
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

/** One call to Svix's API; resolves with the parsed answer, rejects on any status but `expected`. */
export async function svixCall<T>(svix: { url: string; token: string }, method: string, route: string, body: unknown, expected: number): Promise<T> {
  const res = await fetch(`${svix.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${svix.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expected) throw new Error(`Svix ${method} ${route} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}
