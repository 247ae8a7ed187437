/**
 * The cloudnative-pg database driver: where CloudNativePG (https://cloudnative-pg.io) runs
 * in the cluster, each database is its `postgresql.cnpg.io/v1` Cluster in the team's
 * namespace, and CloudNativePG's operator does the rest: the Pods, claims, Services
 * (`<name>-rw` for the primary), certificates, failover and streaming replicas. The driver
 * writes, by server-side apply and all named after the database's id:
 * - a Secret `<name>-admin` (kubernetes.io/basic-auth: `dbadmin` and the administrator's
 *   password, read from the store secret as the other drivers read it): the Cluster's
 *   `bootstrap.initdb.secret`, and the password Secret of `dbadmin` as a managed role, so
 *   that CloudNativePG reports when it set that password (a reset is a new Secret version);
 * - a Secret `<name>-user-<hash>` per user (basic-auth), the `passwordSecret` of its role in
 *   `spec.managed.roles` (declarative roles); a user removed stays listed `ensure: absent`,
 *   so CloudNativePG drops its role;
 * - the Cluster: `instances` = num_nodes, `imageName` of the major, the claims' size and
 *   class, resources from the plan, `bootstrap.initdb` of `defaultdb` owned by `dbadmin`,
 *   the trusted sources as `spec.postgresql.pg_hba` lines (then a reject for everyone
 *   else: CloudNativePG's own last line lets anyone in with a password);
 * - a Database `<name>-db-<hash>` per logical database (CloudNativePG 1.25 and later),
 *   owned by `dbadmin`, reclaim policy `delete`: removing it drops the database.
 *
 * It reads the Cluster's status: running once CloudNativePG says `Cluster in healthy
 * state` with a ready primary and the administrator's password set; standby_nodes = readyInstances - 1; the host is the write
 * Service (`<name>-rw.<namespace>.svc`). Up to date once every object holds what the driver
 * set and CloudNativePG reports the roles reconciled, each with its Secret's current password,
 * and the Databases applied.
 *
 * Refused, said in `rejected` while the database runs on: a change of major (that is
 * CloudNativePG's major upgrade, a later step). A database made from a backup fails, as on
 * the statefulset driver: backups are simulated for now.
 *
 * An object under the database's names that Cloudplane did not make for it is never
 * touched: the database fails, saying what is in the way.
 */
import { createHash } from 'node:crypto';
import type { KubeConfig, KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ADMIN_USER, DEFAULT_DATABASE, PG_VERSIONS } from '../../resources/database';
import type { DatabaseDesired, DatabaseDriver, DatabaseObserved, DatabaseOutputs } from '../database';
import type { BackupDriver } from '../backup';
import type { DriverHealth, Managed, Observation, Step } from '../types';
import { passwordsOf, trustedHbaLines } from '../postgres-sql';
import { AppliedObjects, holdsDesired, ObjectHeader } from './applied';
import { madeFor, managedLabels, ownerReferencesOf, Placement, placementOf } from './objects';
import { POSTGRES_PORT, resourcesOf } from './postgres-manifests';

export const CNPG_API_VERSION = 'postgresql.cnpg.io/v1';
/** The phase CloudNativePG gives a Cluster whose instances all run as it wants them. */
export const CNPG_HEALTHY = 'Cluster in healthy state';
export const DEFAULT_CNPG_IMAGE = 'ghcr.io/cloudnative-pg/postgresql:<major>';

export interface CloudNativePgSettings {
  /** The Cluster's imageName, `<major>` standing for the major. */
  image: string;
  /** The StorageClass of the claims; null: the cluster's default. */
  storageClass: string | null;
}

export interface CloudNativePgDriverOptions {
  kubeConfig: KubeConfig;
  systemNamespace: string;
  logger: Logger;
  settings?: Partial<CloudNativePgSettings>;
  /** Takes the databases' backups (the simulated one, for now). */
  backups: BackupDriver;
  requestTimeoutMs?: number;
  /** How soon to look again while something is under way (default 2 s). */
  progressPollMs?: number;
}

const DEFAULT_PROGRESS_POLL_MS = 2_000;

/** What the driver records of a database (status.external). */
const CnpgRecord = Type.Object({
  /** The major it runs, fixed at its creation. */
  major: Type.String(),
  storage_class: Type.Union([Type.String(), Type.Null()]),
  /** The users whose roles and Secrets were applied last. */
  users: Type.Array(Type.String()),
  /** Users removed: listed `ensure: absent`, so that CloudNativePG drops their roles. */
  absent: Type.Array(Type.String()),
  /** The logical databases whose Database resources were applied last. */
  db_names: Type.Array(Type.String()),
  /** Set when the API server does not serve CloudNativePG's Database kind (before 1.25): logical databases are refused. */
  no_database_kind: Type.Optional(Type.Boolean()),
});
type CnpgRecord = Static<typeof CnpgRecord>;

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
/** A short, stable, name-safe token for a role or database name (they may hold `_`). */
const tokenOf = (name: string) => createHash('sha256').update(name).digest('hex').slice(0, 10);

export const adminSecretName = (placement: Placement) => `${placement.name}-admin`;
export const userSecretName = (placement: Placement, user: string) => `${placement.name}-user-${tokenOf(user)}`;
export const databaseObjectName = (placement: Placement, db: string) => `${placement.name}-db-${tokenOf(db)}`;
/** CloudNativePG's Service on the primary. */
export const writeServiceName = (placement: Placement) => `${placement.name}-rw`;

type Named = KubernetesObject & ObjectHeader;

export interface CnpgObjects {
  adminSecret: V1Secret & Named;
  userSecrets: Array<V1Secret & Named>;
  cluster: Named & { spec: Record<string, unknown> };
  databases: Array<Named & { spec: Record<string, unknown> }>;
}

/** The pg_hba lines of the trusted sources; with blocks, everyone else refused before CloudNativePG's own catch-all. */
export function hbaLinesOf(blocks: string[] | null): string[] {
  return blocks === null ? trustedHbaLines(null) : [...trustedHbaLines(blocks), 'host all all all reject'];
}

/** The roles of `spec.managed.roles`: the users, and those removed as absent. */
function absentOf(record: CnpgRecord, desired: DatabaseDesired): string[] {
  const wanted = new Set(desired.users.map((u) => u.name));
  return [...new Set([...record.absent, ...record.users])].filter((name) => !wanted.has(name)).sort();
}

/** The objects of `resource` (pure); `passwords` null builds them without their Secrets' data (for reading back). */
export function cnpgObjects(
  resource: Managed<DatabaseDesired>,
  placement: Placement,
  settings: CloudNativePgSettings,
  record: CnpgRecord,
  passwords: { password: string; users: Record<string, string> } | null,
): CnpgObjects {
  const { desired, id } = resource;
  const { namespace, name } = placement;
  const labels = { ...managedLabels(id), 'app.kubernetes.io/component': 'database' };
  const metadata = (objectName: string, extra: Record<string, string> = {}) => ({
    name: objectName,
    namespace,
    labels: { ...labels, ...extra },
    ownerReferences: ownerReferencesOf(resource.owner),
  });
  const basicAuth = (objectName: string, username: string, password: string | undefined): V1Secret & Named => ({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/basic-auth',
    // cnpg.io/reload: CloudNativePG looks at the Secret again when it changes (a reset password).
    metadata: metadata(objectName, { 'cnpg.io/reload': 'true' }),
    ...(passwords ? { data: { username: base64(username), password: base64(password ?? '') } } : {}),
  });
  const present = (role: string, secretName: string) => ({ name: role, ensure: 'present', login: true, inherit: true, passwordSecret: { name: secretName } });
  // The administrator is a managed role too: CloudNativePG then reports when its password (the initdb owner's) is set.
  const roles = [
    present(ADMIN_USER, adminSecretName(placement)),
    ...desired.users.map((user) => present(user.name, userSecretName(placement, user.name))),
    ...absentOf(record, desired).map((user) => ({ name: user, ensure: 'absent' })),
  ];
  return {
    adminSecret: basicAuth(adminSecretName(placement), ADMIN_USER, passwords?.password),
    userSecrets: desired.users.map((user) => basicAuth(userSecretName(placement, user.name), user.name, passwords?.users[user.name])),
    cluster: {
      apiVersion: CNPG_API_VERSION,
      kind: 'Cluster',
      metadata: metadata(name),
      spec: {
        instances: desired.num_nodes,
        imageName: settings.image.replaceAll('<major>', record.major),
        storage: { size: `${desired.storage_gb}Gi`, ...(record.storage_class ? { storageClass: record.storage_class } : {}) },
        resources: resourcesOf(desired.size),
        bootstrap: { initdb: { database: DEFAULT_DATABASE, owner: ADMIN_USER, secret: { name: adminSecretName(placement) } } },
        managed: { roles },
        postgresql: { pg_hba: hbaLinesOf(desired.trusted_blocks) },
      },
    },
    databases: (desired.db_names ?? []).map((db) => ({
      apiVersion: CNPG_API_VERSION,
      kind: 'Database',
      metadata: metadata(databaseObjectName(placement, db)),
      spec: { cluster: { name }, name: db, owner: ADMIN_USER, ensure: 'present', databaseReclaimPolicy: 'delete' },
    })),
  };
}

interface CnpgCluster extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: {
    phase?: string;
    readyInstances?: number;
    currentPrimary?: string;
    writeService?: string;
    managedRolesStatus?: {
      byStatus?: Record<string, string[]>;
      cannotReconcile?: Record<string, string[]>;
      /** Per role, the version of its password Secret that CloudNativePG last set in PostgreSQL. */
      passwordStatus?: Record<string, { resourceVersion?: string }>;
    };
  };
}

interface CnpgDatabase extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: { applied?: boolean; observedGeneration?: number; message?: string };
}

export class CloudNativePgDatabaseDriver implements DatabaseDriver {
  readonly backups: BackupDriver;
  private readonly objects: AppliedObjects;
  private readonly settings: CloudNativePgSettings;
  private readonly progressPollMs: number;

  constructor(private readonly o: CloudNativePgDriverOptions) {
    this.backups = o.backups;
    this.objects = new AppliedObjects(o.kubeConfig, o.requestTimeoutMs);
    this.settings = { image: DEFAULT_CNPG_IMAGE, storageClass: null, ...o.settings };
    this.progressPollMs = o.progressPollMs ?? DEFAULT_PROGRESS_POLL_MS;
  }

  health(): DriverHealth {
    return this.objects.outcomes.health();
  }

  async observe(m: Managed<DatabaseDesired>): Promise<Observation<DatabaseOutputs, DatabaseObserved>> {
    const notReady = { ready: false as const, outputs: null, observed: { standby_nodes: 0 } };
    if (m.desired.backup_restore)
      return {
        exists: true,
        upToDate: true,
        ...notReady,
        failure: 'the cloudnative-pg driver does not restore a backup into a new database yet (its backups are simulated)',
      };
    const placement = placementOf(m, this.o.systemNamespace);
    const record = recordOf(m.external) ?? this.newRecord(m);
    // With the passwords where they can be read: a Secret holding an old one (a reset) is out of date.
    const wanted = cnpgObjects(m, placement, this.settings, record, readablePasswords(m.desired));
    const cluster = await this.objects.read<CnpgCluster>(wanted.cluster);
    const adminSecret = await this.objects.read<V1Secret>(wanted.adminSecret);
    if (!cluster && !adminSecret) return { exists: false };
    const foreign = [cluster, adminSecret].find((object) => object && !madeFor(object.metadata, m.id));
    if (foreign)
      return {
        exists: true,
        upToDate: true,
        ...notReady,
        failure: `a ${foreign.kind ?? 'object'} ${placement.namespace}/${foreign.metadata?.name ?? ''} that Cloudplane did not make for this database is in the way`,
      };

    const status = cluster?.status ?? {};
    const roles = status.managedRolesStatus ?? {};
    const reconciled = new Set(roles.byStatus?.reconciled ?? []);
    /** The role's password is the one its Secret holds now (a reset is a new version of the Secret). */
    const passwordSet = (role: string, secret: V1Secret | null) =>
      reconciled.has(role) && secret !== null && roles.passwordStatus?.[role]?.resourceVersion === secret.metadata?.resourceVersion;
    // Running once the administrator can log in: a healthy Cluster's owner role has no password until CloudNativePG sets it.
    const ready =
      status.phase === CNPG_HEALTHY && (status.readyInstances ?? 0) >= 1 && Boolean(status.currentPrimary) && Boolean(roles.passwordStatus?.[ADMIN_USER]);
    const databases = record.no_database_kind ? [] : await Promise.all(wanted.databases.map((db) => this.objects.read<CnpgDatabase>(db)));
    const userSecrets = await Promise.all(wanted.userSecrets.map((secret) => this.objects.read<V1Secret>(secret)));
    const upToDate =
      cluster !== null &&
      holdsDesired(cluster, wanted.cluster) &&
      adminSecret !== null &&
      holdsDesired(adminSecret, wanted.adminSecret) &&
      passwordSet(ADMIN_USER, adminSecret) &&
      userSecrets.every((secret, i) => secret !== null && holdsDesired(secret, wanted.userSecrets[i])) &&
      m.desired.users.every((user, i) => passwordSet(user.name, userSecrets[i])) &&
      !(record.no_database_kind && wanted.databases.length > 0) &&
      databases.every(
        (db, i) =>
          db !== null && holdsDesired(db, wanted.databases[i]) && db.status?.applied === true && db.status.observedGeneration === db.metadata?.generation,
      ) &&
      sameNames(
        record.users,
        m.desired.users.map((u) => u.name),
      ) &&
      sameNames(record.db_names, m.desired.db_names ?? []);
    const rejected =
      m.desired.version && m.desired.version !== record.major
        ? `the cloudnative-pg driver runs PostgreSQL ${record.major} and does not move a database to another major`
        : record.no_database_kind && wanted.databases.length > 0
          ? `this cluster's CloudNativePG has no Database resource (1.25 or later makes logical databases): ${(m.desired.db_names ?? []).join(', ')} not made`
          : null;
    const cannot = Object.entries(roles.cannotReconcile ?? {}).map(([role, errors]) => `${role}: ${errors.join('; ')}`);
    if (cannot.length > 0) this.o.logger.debug({ id: m.id, roles: cannot }, 'CloudNativePG cannot reconcile some roles yet');
    const standbys = Math.max((status.readyInstances ?? 0) - 1, 0);
    const settled = ready && upToDate && standbys >= m.desired.num_nodes - 1;
    return {
      exists: true,
      upToDate: upToDate && rejected === null,
      ready,
      outputs: {
        connection: {
          host: `${status.writeService ?? writeServiceName(placement)}.${placement.namespace}.svc`,
          port: POSTGRES_PORT,
          user: ADMIN_USER,
          database: DEFAULT_DATABASE,
          ssl_mode: 'require',
        },
        version: record.major,
      },
      observed: { standby_nodes: standbys },
      failure: null,
      rejected,
      pollAfterMs: settled ? undefined : this.progressPollMs,
    };
  }

  async create(m: Managed<DatabaseDesired>): Promise<Step> {
    const record = recordOf(m.external) ?? this.newRecord(m);
    if (m.desired.backup_restore) return { external: record };
    return this.apply(m, record);
  }

  async update(m: Managed<DatabaseDesired>): Promise<Step> {
    return this.apply(m, recordOf(m.external) ?? this.newRecord(m));
  }

  /** The Databases first (CloudNativePG drops each, then lets it go), then the Cluster (its owner references take its Pods, claims and Services), then the Secrets. */
  async delete(m: Managed<DatabaseDesired>): Promise<Step> {
    const placement = placementOf(m, this.o.systemNamespace);
    const record = recordOf(m.external) ?? this.newRecord(m);
    const dbNames = [...new Set([...record.db_names, ...(m.desired.db_names ?? [])])];
    const users = [...new Set([...record.users, ...record.absent, ...m.desired.users.map((u) => u.name)])];
    const headers: ObjectHeader[] = [
      ...dbNames.map((db) => header('Database', placement, databaseObjectName(placement, db))),
      header('Cluster', placement, placement.name),
      header('Secret', placement, adminSecretName(placement)),
      ...users.map((user) => header('Secret', placement, userSecretName(placement, user))),
    ];
    for (const h of headers) {
      const live = await this.objects.read<KubernetesObject>(h);
      // Only what was made for this database: someone else's object of the same name stays.
      if (!live || !madeFor(live.metadata, m.id) || live.metadata?.deletionTimestamp) continue;
      if (await this.objects.delete(h)) this.o.logger.info({ id: m.id, ...placement, kind: h.kind, name: h.metadata.name }, 'database object deleted');
    }
    return { external: m.external ?? {}, pollAfterMs: this.progressPollMs };
  }

  /** The Secrets first (the Cluster names them), then the Cluster, then the Databases; Databases and Secrets no longer wanted go. */
  private async apply(m: Managed<DatabaseDesired>, record: CnpgRecord): Promise<Step> {
    const placement = placementOf(m, this.o.systemNamespace);
    const step: Step = { external: record, pollAfterMs: this.progressPollMs };
    const clusterHeader = header('Cluster', placement, placement.name);
    const adminHeader = header('Secret', placement, adminSecretName(placement));
    for (const h of [clusterHeader, adminHeader]) {
      const live = await this.objects.read<KubernetesObject>(h);
      if (live && !madeFor(live.metadata, m.id)) return step; // observe reports it; nothing of someone else's is touched
    }
    const { password, users } = passwordsOf(m.desired);
    const passwords = { password, users: Object.fromEntries(users.map((u) => [u.name, u.password])) };
    const wanted = cnpgObjects(m, placement, this.settings, record, passwords);
    // API call: store and drivers: secrets, written (a database's Secrets)
    for (const secret of [wanted.adminSecret, ...wanted.userSecrets]) await this.objects.apply(secret);
    // API call: drivers: CloudNativePG Clusters
    // API call: drivers: CloudNativePG Clusters, created by apply
    const applied = await this.objects.apply(wanted.cluster);
    if (!applied.ok) throw new Error(`CloudNativePG's Cluster could not be applied: ${applied.message}`);
    // API call: drivers: CloudNativePG Databases
    // API call: drivers: CloudNativePG Databases, created by apply
    let noDatabaseKind = false;
    for (const db of wanted.databases) {
      const answer = await this.objects.apply(db).catch((err: unknown) => {
        // client-node finds no such kind in the group's discovery: an operator older than 1.25.
        if (err instanceof Error && /Unrecognized API version and kind/.test(err.message)) return null;
        throw err;
      });
      if (answer === null) {
        noDatabaseKind = true;
        break;
      }
      if (!answer.ok) throw new Error(`CloudNativePG's Database ${db.metadata.name} could not be applied: ${answer.message}`);
    }
    const desiredDbs = new Set(m.desired.db_names ?? []);
    for (const db of record.db_names.filter((name) => !desiredDbs.has(name)))
      await this.deleteMade(m.id, header('Database', placement, databaseObjectName(placement, db)));
    const desiredUsers = new Set(m.desired.users.map((u) => u.name));
    for (const user of record.users.filter((name) => !desiredUsers.has(name)))
      await this.deleteMade(m.id, header('Secret', placement, userSecretName(placement, user)));
    if (record.users.length === 0 && record.db_names.length === 0 && !m.external)
      this.o.logger.info({ id: m.id, ...placement, major: record.major, nodes: m.desired.num_nodes }, 'CloudNativePG cluster applied');
    return {
      ...step,
      external: {
        ...record,
        users: [...desiredUsers].sort(),
        absent: absentOf(record, m.desired),
        db_names: noDatabaseKind ? [] : [...desiredDbs].sort(),
        ...(noDatabaseKind ? { no_database_kind: true } : {}),
      },
    };
  }

  private async deleteMade(id: string, h: ObjectHeader): Promise<void> {
    const live = await this.objects.read<KubernetesObject>(h);
    if (live && madeFor(live.metadata, id)) await this.objects.delete(h);
  }

  private newRecord(m: Managed<DatabaseDesired>): CnpgRecord {
    return {
      major: m.desired.version ?? PG_VERSIONS[PG_VERSIONS.length - 1],
      storage_class: this.settings.storageClass,
      users: [],
      absent: [],
      db_names: [],
    };
  }
}

function header(kind: 'Cluster' | 'Database' | 'Secret', placement: Placement, name: string): ObjectHeader {
  return { apiVersion: kind === 'Secret' ? 'v1' : CNPG_API_VERSION, kind, metadata: { namespace: placement.namespace, name } };
}

const sameNames = (a: string[], b: string[]) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

/** The passwords, or null while one cannot be read (the Secrets are then compared without their data). */
function readablePasswords(desired: DatabaseDesired): { password: string; users: Record<string, string> } | null {
  if (desired.password === null || desired.users.some((user) => user.password === null)) return null;
  return { password: desired.password, users: Object.fromEntries(desired.users.map((user) => [user.name, user.password ?? ''])) };
}

function recordOf(external: Managed<DatabaseDesired>['external']): CnpgRecord | null {
  return Value.Check(CnpgRecord, external) ? external : null;
}
