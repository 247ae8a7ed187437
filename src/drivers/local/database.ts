/**
 * The local database driver: each database is a real PostgreSQL on this machine, the
 * embedded default's, so that a laptop user can `psql` into what they made. A database is a
 * directory under CLOUDPLANE_LOCAL_DATABASE_DIR holding one data directory per node
 * (`node-0` the primary, `node-1`… its standbys, made by pg_basebackup and following it by
 * streaming replication), listening on free loopback ports, with the sockets the driver
 * itself connects through in a directory only their owner may enter.
 *
 * The administrator's password reaches PostgreSQL only as its SCRAM verifier (lib/scram.ts):
 * neither a server log nor the data directory ever holds it. The clusters run on after the
 * service stops, as databases outlive their control plane; one found stopped (the machine
 * restarted) is started again by the next pass. Provisioning runs in the background, at
 * most two databases at once and one per team (a FairGate), and observe reports its
 * progress.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ADMIN_USER, DEFAULT_DATABASE } from '../../resources/database';
import type { DatabaseDesired, DatabaseDriver, DatabaseObserved, DatabaseOutputs } from '../database';
import type { DriverHealth, Managed, Observation, Step } from '../types';
import type { BackupDriver } from '../backup';
import { isAlive } from '../../lib/processes';
import { textOf } from '../../lib/unknown-values';
import { sameJson } from '../../lib/canonical-json';
import { freeLoopbackPorts } from '../../lib/ports';
import { isRunning, postmasterOf, type PostgresHost } from './postgres-host';
import { backupDataOf, LocalDatabaseBackups } from './database-backups';
import { applyDbNames, applyUsers, passwordsOf, setPassword, trustedHbaLines } from '../postgres-sql';

/** What the driver records of a database (status.external). */
const LocalRecord = Type.Object({
  /** The major that runs; null when the one asked for is not installed here. */
  major: Type.Union([Type.String(), Type.Null()]),
  /** The major asked for, kept to say why there is none. */
  wanted: Type.Optional(Type.String()),
  /** The loopback port of each node, the primary's first. */
  ports: Type.Array(Type.Integer()),
  /** The password version last set. */
  password_version: Type.Integer(),
});
type LocalRecord = Static<typeof LocalRecord>;

/**
 * What a finished step applied, written beside the nodes: a database without it was not
 * finished; one whose applied state differs from the desired one is brought to it.
 */
const APPLIED = 'cloudplane.json';
const Applied = Type.Object({
  password_version: Type.Integer(),
  nodes: Type.Integer(),
  /** Each user's password version. */
  users: Type.Record(Type.String(), Type.Integer()),
  db_names: Type.Array(Type.String()),
  trusted_blocks: Type.Union([Type.Array(Type.String()), Type.Null()]),
});
type Applied = Static<typeof Applied>;

const appliedOf = (desired: DatabaseDesired): Applied => ({
  password_version: desired.password_version,
  nodes: desired.num_nodes,
  users: Object.fromEntries(desired.users.map((user) => [user.name, user.password_version])),
  db_names: desired.db_names ?? [],
  trusted_blocks: desired.trusted_blocks,
});

const POLL_MS = 500;

export class LocalDatabaseDriver implements DatabaseDriver {
  readonly backups: BackupDriver;

  constructor(private readonly host: PostgresHost) {
    this.backups = new LocalDatabaseBackups(host);
  }

  /** What start-up says the family runs. */
  describe(): string {
    return `PostgreSQL ${this.host.majors()} on this machine (databases in ${this.host.root})`;
  }

  health(): DriverHealth {
    return this.host.health();
  }

  async observe(m: Managed<DatabaseDesired>): Promise<Observation<DatabaseOutputs, DatabaseObserved>> {
    const record = recordOf(m.external);
    if (!record) return { exists: false };
    const notReady = (rest: { failure?: string | null; rejected?: string | null; upToDate?: boolean } = {}) => ({
      exists: true as const,
      upToDate: rest.upToDate ?? true,
      ready: false,
      outputs: null,
      observed: { standby_nodes: 0 },
      failure: rest.failure ?? null,
      rejected: rest.rejected ?? null,
      pollAfterMs: POLL_MS,
    });
    if (record.major === null) return notReady({ failure: `PostgreSQL ${record.wanted ?? ''} is not installed on this machine; it has ${this.host.majors()}` });
    const work = this.host.workOf(m.id);
    if (work && !work.done) return notReady();
    if (work?.failure && work.kind === 'create') return notReady({ failure: work.failure });
    const dir = this.dirOf(m.id);
    const applied = readApplied(dir);
    if (!applied) return { exists: false };

    const alive = record.ports.map((_port, node) => isRunning(path.join(dir, nodeDir(node))));
    const primary = alive[0] ? await this.askPrimary(m.id, record) : null;
    const version = m.desired.version ?? record.major;
    const upToDate = alive.every(Boolean) && sameJson(applied, appliedOf(m.desired)) && version === record.major;
    const rejected =
      version !== record.major
        ? `the local driver runs PostgreSQL ${record.major} and does not move a database to another major`
        : work?.failure && work.kind === 'update'
          ? work.failure
          : null;
    const primaryPort = record.ports[0] ?? 0;
    return {
      exists: true,
      upToDate: upToDate || version !== record.major,
      ready: primary !== null,
      outputs: {
        connection: { host: '127.0.0.1', port: primaryPort, user: ADMIN_USER, database: DEFAULT_DATABASE, ssl_mode: 'disable' },
        version: record.major,
      },
      observed: { standby_nodes: primary?.streaming ?? 0 },
      failure: null,
      rejected,
      // Standbys catching up, or a node found stopped: look again soon.
      pollAfterMs: primary === null || primary.streaming < m.desired.num_nodes - 1 ? POLL_MS * 4 : undefined,
    };
  }

  async create(m: Managed<DatabaseDesired>): Promise<Step> {
    passwordsOf(m.desired);
    const major = m.desired.version ?? this.host.newest();
    const bin = this.host.install.majors.get(major);
    if (!bin) return { external: { major: null, wanted: major, ports: [], password_version: m.desired.password_version } };
    const record: LocalRecord = { major, ports: await freeLoopbackPorts(m.desired.num_nodes), password_version: m.desired.password_version };
    const restore = m.desired.backup_restore?.backup_id;
    this.host.begin(m.id, m.team, 'create', async () => {
      const dir = this.dirOf(m.id);
      await fs.promises.rm(dir, { recursive: true, force: true });
      await this.host.makeDir(dir);
      await this.host.makeDir(path.join(dir, 'sockets'));
      if (restore) await this.restorePrimary(bin, dir, record, restore);
      else await this.initPrimary(bin, dir, record);
      await this.withPrimary(dir, record, async (client) => {
        const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DEFAULT_DATABASE]);
        if (!rowCount) await client.query(`CREATE DATABASE ${DEFAULT_DATABASE}`);
      });
      await this.converge(bin, dir, record, m.desired, null, 1);
    });
    return { external: record, pollAfterMs: POLL_MS };
  }

  async update(m: Managed<DatabaseDesired>): Promise<Step> {
    const current = recordOf(m.external);
    if (!current?.major) return this.create(m);
    const bin = this.host.binOf(current.major);
    passwordsOf(m.desired);
    const wanted = m.desired.num_nodes;
    const ports =
      current.ports.length < wanted ? [...current.ports, ...(await freeLoopbackPorts(wanted - current.ports.length))] : current.ports.slice(0, wanted);
    const record: LocalRecord = { ...current, ports, password_version: m.desired.password_version };
    this.host.begin(m.id, m.team, 'update', async () => {
      const dir = this.dirOf(m.id);
      await this.start(bin, path.join(dir, nodeDir(0)));
      await this.converge(bin, dir, record, m.desired, readApplied(dir), current.ports.length);
    });
    return { external: record, pollAfterMs: POLL_MS };
  }

  /**
   * Brings a database whose primary runs to the desired state: passwords, users, logical
   * databases, trusted sources, then the standbys (`nodesBefore` of them ran), and writes
   * what it applied.
   */
  private async converge(bin: string, dir: string, record: LocalRecord, desired: DatabaseDesired, applied: Applied | null, nodesBefore: number): Promise<void> {
    const { password, users } = passwordsOf(desired);
    await this.withPrimary(dir, record, async (client) => {
      if (applied?.password_version !== desired.password_version) await setPassword(client, ADMIN_USER, password);
      await applyUsers(client, users, applied?.users ?? {});
      await applyDbNames(client, (database, use) => this.withPrimary(dir, record, use, database), desired);
    });
    const wanted = desired.num_nodes;
    for (let node = 1; node < nodesBefore; node++) {
      if (node < wanted) await this.start(bin, path.join(dir, nodeDir(node)));
      else await this.removeNode(bin, path.join(dir, nodeDir(node)));
    }
    for (let node = nodesBefore; node < wanted; node++) await this.addStandby(bin, dir, record, node);
    if (!sameJson(applied?.trusted_blocks, desired.trusted_blocks))
      for (let node = 0; node < wanted; node++) await this.allow(bin, path.join(dir, nodeDir(node)), desired.trusted_blocks);
    writeApplied(dir, appliedOf(desired));
  }

  /** Who may connect over TCP: the trusted blocks, or anyone with a password; the driver itself always, through its socket. */
  private async allow(bin: string, data: string, blocks: string[] | null): Promise<void> {
    const hosts = trustedHbaLines(blocks);
    const lines = [
      "# Written by Cloudplane's local driver: the trusted sources of the database.",
      'local all all trust',
      'local replication all trust',
      ...hosts,
      '',
    ];
    await fs.promises.writeFile(path.join(data, 'pg_hba.conf'), lines.join('\n'));
    if (isRunning(data)) await this.host.program(bin, 'pg_ctl', ['-D', data, 'reload']);
  }

  /** Stops the nodes and removes their files, in the background. */
  delete(m: Managed<DatabaseDesired>): Promise<Step> {
    const record = recordOf(m.external);
    const external = record ?? { major: null, ports: [], password_version: 0 };
    if (!record?.major) return Promise.resolve({ external });
    const bin = this.host.install.majors.get(record.major) ?? null;
    this.host.begin(m.id, m.team, 'delete', async () => {
      const dir = this.dirOf(m.id);
      for (let node = record.ports.length - 1; node >= 0; node--) await this.stop(bin, path.join(dir, nodeDir(node)));
      await fs.promises.rm(dir, { recursive: true, force: true });
    });
    return Promise.resolve({ external, pollAfterMs: POLL_MS });
  }

  private async initPrimary(bin: string, dir: string, record: LocalRecord): Promise<void> {
    const data = path.join(dir, nodeDir(0));
    await this.host.program(bin, 'initdb', [
      '-D',
      data,
      '-U',
      ADMIN_USER,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '-E',
      'UTF8',
      '--no-instructions',
    ]);
    await this.configure(dir, record);
    await this.start(bin, data);
  }

  /** The primary made from a backup's copy of another database (pg_basebackup's): its data, logical databases and roles. */
  private async restorePrimary(bin: string, dir: string, record: LocalRecord, backupId: string): Promise<void> {
    const copy = backupDataOf(this.host, backupId);
    if (!copy) throw new Error(`backup ${backupId} is not on this machine (the local driver keeps backups under ${this.host.root})`);
    await this.host.program(null, 'cp', ['-a', copy, path.join(dir, nodeDir(0))]);
    await this.configure(dir, record);
    await this.start(bin, path.join(dir, nodeDir(0)));
  }

  /** Every node reads these (later lines win, over a restored copy's too); a standby's port is set after it in its own postgresql.auto.conf. */
  private async configure(dir: string, record: LocalRecord): Promise<void> {
    await fs.promises.appendFile(
      path.join(dir, nodeDir(0), 'postgresql.conf'),
      [
        '',
        "# Cloudplane's local driver: loopback only, sockets in the database's own directory.",
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${path.join(dir, 'sockets')}'`,
        "password_encryption = 'scram-sha-256'",
        `port = ${record.ports[0] ?? 0}`,
        '',
      ].join('\n'),
    );
  }

  private async addStandby(bin: string, dir: string, record: LocalRecord, node: number): Promise<void> {
    const data = path.join(dir, nodeDir(node));
    await fs.promises.rm(data, { recursive: true, force: true });
    await this.host.program(bin, 'pg_basebackup', [
      '-D',
      data,
      '-h',
      path.join(dir, 'sockets'),
      '-p',
      String(record.ports[0]),
      '-U',
      ADMIN_USER,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    await fs.promises.appendFile(path.join(data, 'postgresql.auto.conf'), `port = ${record.ports[node] ?? 0}\n`);
    await this.start(bin, data);
  }

  private async removeNode(bin: string, data: string): Promise<void> {
    await this.stop(bin, data);
    await fs.promises.rm(data, { recursive: true, force: true });
  }

  private async start(bin: string, data: string): Promise<void> {
    if (isRunning(data)) return;
    await this.host.program(bin, 'pg_ctl', ['-D', data, '-l', path.join(data, 'server.log'), '-w', '-t', '60', 'start']);
  }

  private async stop(bin: string | null, data: string): Promise<void> {
    const pid = postmasterOf(data)?.pid;
    if (pid === undefined || !isAlive(pid)) return;
    if (bin) {
      try {
        await this.host.program(bin, 'pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
        return;
      } catch (err) {
        this.host.logger.warn({ data, err: textOf(err) }, 'pg_ctl stop failed; stopping the postmaster by signal');
      }
    }
    // Immediate shutdown: the database is being deleted, nothing of it is kept.
    process.kill(pid, 'SIGQUIT');
  }

  private withPrimary<T>(dir: string, record: LocalRecord, use: (client: Client) => Promise<T>, database = 'postgres'): Promise<T> {
    return this.host.connect(path.join(dir, 'sockets'), record.ports[0] ?? 0, use, database);
  }

  /** Whether the primary answers, and how many standbys stream from it; null when it does not answer. */
  private async askPrimary(id: string, record: LocalRecord): Promise<{ streaming: number } | null> {
    try {
      const streaming = await this.withPrimary(this.dirOf(id), record, async (client) => {
        const { rows } = await client.query<{ streaming: string }>("SELECT count(*) AS streaming FROM pg_stat_replication WHERE state = 'streaming'");
        return Number(rows[0]?.streaming ?? 0);
      });
      return { streaming };
    } catch {
      return null;
    }
  }

  private dirOf(id: string): string {
    return path.join(this.host.root, id);
  }
}

const nodeDir = (node: number) => `node-${node}`;

function recordOf(external: Managed<DatabaseDesired>['external']): LocalRecord | null {
  return Value.Check(LocalRecord, external) ? external : null;
}

function readApplied(dir: string): Applied | null {
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(path.join(dir, APPLIED), 'utf8'));
    return Value.Check(Applied, parsed) ? parsed : null;
  } catch {
    return null;
  }
}

function writeApplied(dir: string, applied: Applied): void {
  const file = path.join(dir, APPLIED);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(applied));
  fs.renameSync(`${file}.tmp`, file);
}
