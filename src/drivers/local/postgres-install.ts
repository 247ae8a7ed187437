/**
 * Where this machine's PostgreSQL programs are, for the local database driver: the
 * directory CLOUDPLANE_POSTGRES_BIN_DIR names, else Debian's and Ubuntu's
 * /usr/lib/postgresql/<major>/bin (every major installed), else the `initdb` on PATH
 * (Homebrew, other distributions). PostgreSQL refuses to run as root; a service running as
 * root runs it as the `postgres` user the packages make, which must be able to reach the
 * databases' directory (CLOUDPLANE_LOCAL_DATABASE_DIR: the data directory is its owner's alone).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isExecutable, type RunAs } from '../../lib/processes';

/** The programs the driver runs, in each installed major's directory. */
const PROGRAMS = ['initdb', 'pg_ctl', 'postgres', 'pg_basebackup'] as const;
const DEBIAN_ROOT = '/usr/lib/postgresql';

export interface PostgresInstall {
  /** The directory of each installed major's programs, by major ('15'). */
  majors: ReadonlyMap<string, string>;
  /** Who runs them: null to run them as the service's own user. */
  runAs: RunAs | null;
}

/** The installation, or why there is none fit to use. `supported`: the majors the API offers. */
export function findPostgres(binDir: string | null, databaseDir: string, supported: readonly string[]): PostgresInstall | { missing: string } {
  const found = binDir ? fromDirectory(binDir) : (fromDebian() ?? fromPath());
  if (typeof found === 'string') return { missing: found };
  const majors = new Map([...found].filter(([major]) => supported.includes(major)));
  if (majors.size === 0) return { missing: `PostgreSQL ${[...found.keys()].join(', ')} is installed; the API offers ${supported.join(', ')}` };
  const runAs = runAsOf(databaseDir);
  if (typeof runAs === 'string') return { missing: runAs };
  return { majors, runAs };
}

/** A directory's programs, with the major they say they are. */
function fromDirectory(dir: string): Map<string, string> | string {
  const absent = PROGRAMS.filter((program) => !isExecutable(path.join(dir, program)));
  if (absent.length > 0) return `${dir} lacks ${absent.join(', ')}`;
  const major = majorOf(path.join(dir, 'initdb'));
  return major ? new Map([[major, dir]]) : `${path.join(dir, 'initdb')} does not say its version`;
}

function fromDebian(): Map<string, string> | null {
  let entries: string[];
  try {
    entries = fs.readdirSync(DEBIAN_ROOT);
  } catch {
    return null;
  }
  const majors = new Map<string, string>();
  for (const major of entries.filter((entry) => /^\d+$/.test(entry)).sort((a, b) => Number(a) - Number(b))) {
    const dir = path.join(DEBIAN_ROOT, major, 'bin');
    if (PROGRAMS.every((program) => isExecutable(path.join(dir, program)))) majors.set(major, dir);
  }
  return majors.size > 0 ? majors : null;
}

function fromPath(): Map<string, string> | string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    if (isExecutable(path.join(dir, 'initdb'))) return fromDirectory(dir);
  }
  return 'PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH; on Debian and Ubuntu: apt install postgresql)';
}

/** "initdb (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)" → "15". */
function majorOf(initdb: string): string | null {
  try {
    const said = execFileSync(initdb, ['--version'], { timeout: 5_000, encoding: 'utf8' });
    return /\(PostgreSQL\) (\d+)/.exec(said)?.[1] ?? null;
  } catch {
    return null;
  }
}

/** Who runs PostgreSQL: the service's own user, or `postgres` when the service is root. */
function runAsOf(databaseDir: string): RunAs | null | string {
  if (process.getuid?.() !== 0) return null;
  const entry = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find(([name]) => name === 'postgres');
  if (!entry) return 'the service runs as root, which PostgreSQL refuses, and there is no postgres user to run it as';
  const runAs = { name: 'postgres', uid: Number(entry[2]), gid: Number(entry[3]) };
  const closed = closedAncestor(databaseDir);
  return closed
    ? `the service runs as root, so PostgreSQL runs as the postgres user, which cannot enter ${closed}: set CLOUDPLANE_LOCAL_DATABASE_DIR to a directory it can reach, or run the service as another user`
    : runAs;
}

/** The first existing directory on the way to `dir` that others may not enter, or null. */
function closedAncestor(dir: string): string | null {
  const parts = path.resolve(dir).split(path.sep).filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    const at = `${path.sep}${parts.slice(0, i).join(path.sep)}`;
    let mode: number;
    try {
      mode = fs.statSync(at).mode;
    } catch {
      return null;
    }
    if ((mode & 0o001) === 0) return at;
  }
  return null;
}
