/**
 * The local database driver with a real PostgreSQL: a database made through the API takes
 * connections with exactly the details the API answered (the `pg` client and `psql`), its
 * password reset stops the old one, a standby streams from the primary, and deleting it
 * stops its postmasters and removes its files. The password is in no log, event or file of
 * the data directory or of the databases' own directories.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { findPostgres } from '../../src/drivers/local/postgres-install';
import { isAlive } from '../../src/lib/processes';
import { PG_VERSIONS } from '../../src/resources/database';
import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';
import { findIn, findInFiles } from '../helpers/secret-scan';

const exec = promisify(execFile);

/** A directory PostgreSQL's user can reach when the tests run as root (the data directory is its owner's alone). */
function databasesDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-pg-'));
  fs.chmodSync(dir, 0o711);
  return dir;
}

interface Connection {
  host: string;
  port: number;
  user: string;
  database: string;
  ssl_mode: string;
  uri: string;
}

async function connect(connection: Connection, password: string, database = connection.database, user = connection.user): Promise<Client> {
  const client = new Client({ host: connection.host, port: connection.port, user, database, password, ssl: connection.ssl_mode === 'disable' ? false : true });
  // The afterAll stops the servers under clients a failed test left open: not an error of the run.
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

describe('databases on the local driver (a real PostgreSQL)', () => {
  let t: TestService;
  let dir: string;
  let newest: string | undefined;
  const logs: string[] = [];
  beforeAll(async () => {
    dir = databasesDir();
    // make test installs PostgreSQL (scripts/ensure-tools.sh); without it this says what is missing.
    const install = findPostgres(null, dir, PG_VERSIONS);
    if ('missing' in install) throw new Error(install.missing);
    newest = [...install.majors.keys()].at(-1);
    t = await startTestService(
      { CLOUDPLANE_DRIVER_DATABASE: 'local', CLOUDPLANE_LOCAL_DATABASE_DIR: dir, CLOUDPLANE_LOG_LEVEL: 'trace', CLOUDPLANE_RESYNC_SECONDS: '2' },
      undefined,
      {
        write: (line) => logs.push(line),
      },
    );
  }, 60_000);
  afterAll(async () => {
    await t.stop();
    // What a failed test left running: its postmasters stop when their directories go, within a minute; at once here.
    for (const db of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      for (const node of fs.readdirSync(path.join(dir, db)).filter((n) => n.startsWith('node-'))) {
        const pidFile = path.join(dir, db, node, 'postmaster.pid');
        if (fs.existsSync(pidFile)) process.kill(Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGQUIT');
      }
    }
  });

  it('runs a database that psql and pg reach with the details the API answered, and resets its password', async () => {
    const created = await t.api('POST', '/api/v1/databases', { name: 'orders', region: 'fra1' });
    expect(created.status).toBe(201);
    const { id, password } = created.body.data;
    const running = await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 120_000);
    const connection: Connection = running.connection;
    expect(connection).toMatchObject({ host: '127.0.0.1', user: 'dbadmin', database: 'defaultdb', ssl_mode: 'disable' });
    expect(running.version).toBe(newest);

    // psql with the URI the API gave, the password beside it as psql takes it.
    const psql = await exec('psql', [connection.uri, '-tAc', 'SELECT 1'], { env: { ...process.env, PGPASSWORD: password } });
    expect(psql.stdout.trim()).toBe('1');

    const client = await connect(connection, password);
    await client.query('CREATE TABLE orders (id int PRIMARY KEY, item text)');
    await client.query("INSERT INTO orders VALUES (1, 'tea')");
    expect((await client.query('SELECT item FROM orders')).rows).toEqual([{ item: 'tea' }]);
    await client.end();

    const reset = await t.api('POST', `/api/v1/databases/${id}/reset-password`);
    expect(reset.status).toBe(200);
    const next = reset.body.data.password;
    // The old password stops once the driver set the new one.
    await eventually(async () => {
      try {
        await (await connect(connection, password)).end();
        return false;
      } catch (err) {
        return String(err).includes('password authentication failed');
      }
    }, 60_000);
    const again = await connect(connection, next);
    expect((await again.query('SELECT item FROM orders')).rows).toEqual([{ item: 'tea' }]);
    await again.end();

    // Neither password is in the databases' files (the server logs among them) nor the service's data directory.
    // Nor in the service's log (at trace level, requests included) or the events.
    const needles = [password, next].map((value, n) => ({ label: `password ${n}`, value }));
    const events = await t.api('GET', `/api/v1/audit-log?resource_id=${id}`);
    expect(logs.join('')).toContain(id);
    expect([
      ...findInFiles(dir, needles),
      ...findInFiles(t.dataDir, needles),
      ...findIn('the log', Buffer.from(logs.join('')), needles),
      ...findIn('the events', Buffer.from(JSON.stringify(events.body)), needles),
    ]).toEqual([]);
  }, 240_000);

  it('makes users and logical databases that clients use, drops them, and lets in only trusted sources', async () => {
    const created = await t.api('POST', '/api/v1/databases', { name: 'shop', region: 'fra1' });
    const { id, password } = created.body.data;
    const running = await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 120_000);
    const connection: Connection = running.connection;
    const base = `/api/v1/databases/${id}`;
    const user = (await t.api('POST', `${base}/users`, { name: 'shop_app' })).body.data;
    expect((await t.api('POST', `${base}/dbs`, { name: 'catalog' })).status).toBe(201);

    // The user reaches the new logical database with its own password, and may create in it, once the driver made both.
    const asUser = await eventually(async () => {
      try {
        const client = await connect(connection, user.password, 'catalog', 'shop_app');
        if ((await client.query("SELECT has_schema_privilege('public', 'CREATE') AS ok")).rows[0].ok) return client;
        await client.end();
        return null;
      } catch {
        return null;
      }
    }, 60_000);
    await asUser.query('CREATE TABLE items (sku text)');
    await asUser.query("INSERT INTO items VALUES ('tea-1')");
    expect((await asUser.query('SELECT current_user, current_database()')).rows).toEqual([{ current_user: 'shop_app', current_database: 'catalog' }]);
    await asUser.end();

    // Trusted sources: a block that is not this machine's shuts the loopback client out, its address lets it in again.
    await t.api('PATCH', base, { trusted_sources: [{ type: 'ip_addr', value: '192.0.2.0/24' }] });
    await eventually(async () => {
      try {
        await (await connect(connection, password)).end();
        return false;
      } catch (err) {
        return String(err).includes('no pg_hba.conf entry');
      }
    }, 60_000);
    await t.api('PATCH', base, { trusted_sources: [{ type: 'ip_addr', value: '127.0.0.1' }] });
    const admin = await eventually(async () => {
      try {
        return await connect(connection, password);
      } catch {
        return null;
      }
    }, 60_000);

    // Dropping the user passes what it owned to the administrator; dropping the logical database removes it.
    expect((await t.api('DELETE', `${base}/users/shop_app`)).status).toBe(200);
    await eventually(async () => (await admin.query("SELECT 1 FROM pg_roles WHERE rolname = 'shop_app'")).rowCount === 0, 60_000);
    expect((await t.api('DELETE', `${base}/dbs/catalog`)).status).toBe(200);
    await eventually(async () => (await admin.query("SELECT 1 FROM pg_database WHERE datname = 'catalog'")).rowCount === 0, 60_000);
    await admin.end();
    // The logical database's life is told as data.* events, once the driver made and dropped it.
    const told = await eventually(async () => {
      const page = await t.api('GET', '/api/v1/audit-log?type=data.*&order=asc&limit=100');
      const mine = page.body.data.filter((e: { data: { database_id?: string } }) => e.data.database_id === id);
      return mine.length >= 2 ? mine : null;
    }, 60_000);
    expect(told.map((e: { type: string; data: { name: string } }) => [e.type, e.data.name])).toEqual([
      ['data.created', 'catalog'],
      ['data.destroyed', 'catalog'],
    ]);
    expect(findInFiles(dir, [{ label: 'user password', value: user.password }])).toEqual([]);
  }, 240_000);

  it('backs a database up and restores the backup into a new database that holds the rows written before it', async () => {
    const source = (await t.api('POST', '/api/v1/databases', { name: 'ledger', region: 'fra1' })).body.data;
    const running = await waitForStatus(t, `/api/v1/databases/${source.id}`, 'running', 120_000);
    expect((await t.api('POST', `/api/v1/databases/${source.id}/dbs`, { name: 'archive' })).status).toBe(201);
    const client = await connect(running.connection, source.password);
    await client.query('CREATE TABLE entries (n int)');
    await client.query('INSERT INTO entries VALUES (1), (2), (3)');
    await client.end();

    const taken = await t.api('POST', `/api/v1/databases/${source.id}/backups`, { name: 'nightly' });
    expect(taken.status).toBe(201);
    expect(taken.body.data).toMatchObject({ database_id: source.id, server_id: null, status: 'creating' });
    const backup = await waitForStatus(t, `/api/v1/databases/${source.id}/backups/${taken.body.data.id}`, 'completed', 120_000);
    expect(backup.method).toBe('pg_basebackup');

    // Written after the backup: not in what is restored.
    const later = await connect(running.connection, source.password);
    await later.query('INSERT INTO entries VALUES (4)');
    await later.end();

    const restored = await t.api('POST', '/api/v1/databases', { name: 'ledger-restored', region: 'fra1', backup_restore: { backup_id: backup.id } });
    expect(restored.status).toBe(201);
    expect(restored.body.data).toMatchObject({ backup_restore: { backup_id: backup.id }, db_names: ['defaultdb', 'archive'] });
    const copy = await waitForStatus(t, `/api/v1/databases/${restored.body.data.id}`, 'running', 120_000);
    expect(copy.connection.port).not.toBe(running.connection.port);
    // The new database's own password opens it; the source's does not.
    const reader = await connect(copy.connection, restored.body.data.password);
    expect((await reader.query('SELECT n FROM entries ORDER BY n')).rows).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await reader.end();
    await expect(connect(copy.connection, source.password)).rejects.toThrow(/password authentication failed/);
    const archive = await connect(copy.connection, restored.body.data.password, 'archive');
    await archive.end();

    // A backup of a server, or one still unknown, is refused with the field named.
    const unknown = await t.api('POST', '/api/v1/databases', { name: 'nothing', region: 'fra1', backup_restore: { backup_id: 'bkp_00000000000000000000' } });
    expect([unknown.status, unknown.body.error.details[0].field]).toEqual([422, 'backup_restore.backup_id']);
  }, 240_000);

  it('starts a database found stopped again (as after the machine restarted), its data kept', async () => {
    const created = await t.api('POST', '/api/v1/databases', { name: 'restarted', region: 'fra1' });
    const { id, password } = created.body.data;
    const running = await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 120_000);
    const client = await connect(running.connection, password);
    await client.query('CREATE TABLE kept (n int)');
    await client.query('INSERT INTO kept VALUES (42)');
    await client.end();
    const pidFile = path.join(dir, id, 'node-0', 'postmaster.pid');
    const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGINT');
    await eventually(async () => !isAlive(pid), 30_000);
    const again = await eventually(async () => {
      try {
        return await connect(running.connection, password);
      } catch {
        return null;
      }
    }, 60_000);
    expect((await again.query('SELECT n FROM kept')).rows).toEqual([{ n: 42 }]);
    await again.end();
  }, 240_000);

  it('runs a standby that streams from the primary, and deleting stops both and leaves no files', async () => {
    const created = await t.api('POST', '/api/v1/databases', { name: 'replicated', region: 'fra1', num_nodes: 2 });
    const { id, password } = created.body.data;
    const running = await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 120_000);
    const client = await connect(running.connection, password, 'postgres');
    const replicas = await eventually(async () => {
      const { rows } = await client.query("SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming'");
      return rows[0].n === 1 ? rows : null;
    }, 60_000);
    expect(replicas).toEqual([{ n: 1 }]);
    await client.end();
    await eventually(async () => (await t.api('GET', `/api/v1/databases/${id}`)).body.data.standby_nodes === 1, 30_000);

    const own = path.join(dir, id);
    const pids = ['node-0', 'node-1'].map((node) => Number(fs.readFileSync(path.join(own, node, 'postmaster.pid'), 'utf8').split('\n')[0]));
    expect((await t.api('DELETE', `/api/v1/databases/${id}`)).status).toBe(200);
    await eventually(async () => !fs.existsSync(own), 60_000);
    // pg_ctl stop returns once the lock file is gone; the process itself ends a moment later.
    await eventually(async () => pids.every((pid) => !isAlive(pid)), 30_000);
  }, 240_000);
});
