/**
 * What every PostgreSQL driver does in SQL, whatever runs the server (the local driver's
 * postmasters on this machine, the kubernetes driver's StatefulSet): passwords set only as
 * SCRAM verifiers (lib/scram.ts), users made and dropped, logical databases made and
 * dropped, and the pg_hba.conf lines of the trusted sources. Each driver brings its own
 * connections: to the primary, and to one logical database of it.
 */
import type { Client } from 'pg';
import { ADMIN_USER, DEFAULT_DATABASE } from '../resources/database';
import { scramSha256Verifier } from '../lib/scram';
import type { DatabaseDesired } from './database';

/** A user with its password readable. */
export interface UserWithPassword {
  name: string;
  password_version: number;
  password: string;
}

/** Runs `use` on a connection to one logical database of the primary, as a superuser. */
export type InDatabase = (database: string, use: (client: Client) => Promise<void>) => Promise<void>;

/** The passwords, all readable; a step waits (throws) while one is not. */
export function passwordsOf(desired: DatabaseDesired): { password: string; users: UserWithPassword[] } {
  const { password } = desired;
  if (password === null) throw new Error("the administrator's password cannot be read yet");
  const users = desired.users.map((user) => {
    if (user.password === null) throw new Error(`the password of user ${user.name} cannot be read yet`);
    return { ...user, password: user.password };
  });
  return { password, users };
}

/** Sets a password as its SCRAM verifier: the password itself never reaches the server. */
export async function setPassword(client: Client, role: string, password: string): Promise<void> {
  await client.query(`ALTER ROLE ${client.escapeIdentifier(role)} PASSWORD ${client.escapeLiteral(scramSha256Verifier(password))}`);
}

/** Makes the users not there yet, and sets the passwords reset since `applied`. */
export async function applyUsers(client: Client, users: UserWithPassword[], applied: Record<string, number>): Promise<void> {
  const { rows } = await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles');
  const present = new Set(rows.map((row) => row.rolname));
  for (const user of users) {
    if (!present.has(user.name))
      await client.query(`CREATE ROLE ${client.escapeIdentifier(user.name)} LOGIN PASSWORD ${client.escapeLiteral(scramSha256Verifier(user.password))}`);
    else if (applied[user.name] !== user.password_version) await setPassword(client, user.name, user.password);
  }
}

/**
 * Creates and drops logical databases, and drops the users no longer wanted (what they
 * owned passes to the administrator, in every database); every user may create in the
 * public schema of every logical database, as the owner may. `internalRoles`: roles the
 * driver itself logs in as, never dropped.
 */
export async function applyDbNames(client: Client, inDatabase: InDatabase, desired: DatabaseDesired, internalRoles: readonly string[] = []): Promise<void> {
  const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE NOT datistemplate');
  const present = new Set(rows.map((row) => row.datname));
  const wanted = new Set([DEFAULT_DATABASE, ...(desired.db_names ?? [])]);
  for (const name of wanted) if (!present.has(name)) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)} OWNER ${ADMIN_USER}`);
  for (const name of present) if (!wanted.has(name) && name !== 'postgres') await client.query(`DROP DATABASE ${client.escapeIdentifier(name)} WITH (FORCE)`);
  const roles = await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolcanlogin AND rolname <> $1', [ADMIN_USER]);
  const keep = new Set([...desired.users.map((user) => user.name), ...internalRoles]);
  const leaving = roles.rows.map((row) => row.rolname).filter((name) => !keep.has(name));
  for (const database of [...wanted, 'postgres']) {
    await inDatabase(database, async (inDb) => {
      for (const name of leaving)
        await inDb.query(`REASSIGN OWNED BY ${inDb.escapeIdentifier(name)} TO ${ADMIN_USER}; DROP OWNED BY ${inDb.escapeIdentifier(name)}`);
      for (const user of desired.users) await inDb.query(`GRANT USAGE, CREATE ON SCHEMA public TO ${inDb.escapeIdentifier(user.name)}`);
    });
  }
  for (const name of leaving) await client.query(`DROP ROLE ${client.escapeIdentifier(name)}`);
}

/** The pg_hba.conf lines of the trusted sources: the trusted blocks, or anyone with a password. */
export function trustedHbaLines(blocks: string[] | null): string[] {
  return (blocks ?? ['0.0.0.0/0']).map((block) => `host all all ${block} scram-sha-256`);
}
