/**
 * The cluster-mode database driver: each database is PostgreSQL in its team's namespace,
 * a StatefulSet of the official image with its Secret, ConfigMap and two Services, built
 * by postgres-manifests.ts and written by server-side apply.
 *
 * The database runs once its primary accepts connections: the driver connects to the
 * primary Pod's IP (as the load balancer driver reads HAProxy's stats at its Pod IP) as
 * the internal role `postgres`, whose password it made once and keeps in the database's
 * Secret, and counts the standbys streaming in pg_stat_replication. Users, logical
 * databases and passwords are applied by the same SQL as the local driver's
 * (postgres-sql.ts), passwords only as SCRAM verifiers; what was applied is recorded in
 * status.external, and a database whose applied state differs from its desired one is
 * brought to it. Trusted sources are pg_hba.conf in the ConfigMap: once the kubelet has
 * synced the mounted file (the driver reads it back through the server), the driver
 * reloads the configuration.
 *
 * Refused, and said in `rejected` while the database runs on as it is: a change of major
 * and a larger `storage_gb` (the claims of a StatefulSet are made from a template that
 * cannot change; growing them is a later step). A database made from a backup fails: its
 * backups are simulated for now (the family's backup driver), so there is nothing to
 * restore from.
 *
 * An object under the database's names that Cloudplane did not make for it is never
 * touched: the database fails, saying what is in the way.
 */
import { Client } from 'pg';
import type { KubeConfig, V1ConfigMap, V1PersistentVolumeClaim, V1Pod, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ADMIN_USER, DEFAULT_DATABASE, newDatabasePassword, PG_VERSIONS } from '../../resources/database';
import type { DatabaseDesired, DatabaseDriver, DatabaseObserved, DatabaseOutputs } from '../database';
import type { BackupDriver } from '../backup';
import type { DriverHealth, Managed, Observation, Step } from '../types';
import { applyDbNames, applyUsers, passwordsOf, setPassword } from '../postgres-sql';
import { sameJson } from '../../lib/canonical-json';
import { messageOf } from '../../lib/unknown-values';
import { AppliedObjects, holdsDesired, ObjectHeader } from './applied';
import { madeFor, Placement, placementOf } from './objects';
import { Changed, MadeWatchOptions, watchMade } from './made-watch';
import { isServing } from './deployed-pods';
import {
  clientHost,
  DEFAULT_POSTGRES_SETTINGS,
  hbaOf,
  nodesServiceName,
  OPERATOR_ROLE,
  POSTGRES_PORT,
  postgresObjects,
  PostgresObjects,
  PostgresSettings,
  primaryPodName,
  SECRET_KEYS,
} from './postgres-manifests';

export interface PostgresStatefulSetDriverOptions extends MadeWatchOptions {
  kubeConfig: KubeConfig;
  systemNamespace: string;
  logger: Logger;
  /** The image and the claims' StorageClass (defaults: DEFAULT_POSTGRES_SETTINGS). */
  postgres?: Partial<PostgresSettings>;
  /** Takes the databases' backups (the simulated one, for now). */
  backups: BackupDriver;
  requestTimeoutMs?: number;
  /** How soon to look again while something is under way (default 2 s). */
  progressPollMs?: number;
  /** Each connection to a primary, and each statement (default 3 s and 30 s). */
  connectTimeoutMs?: number;
  queryTimeoutMs?: number;
}

const DEFAULT_PROGRESS_POLL_MS = 2_000;
/** How soon to look again at a running database whose standbys are not all streaming. */
const STANDBY_POLL_MS = 5_000;

/** What the driver records of a database (status.external). */
const StatefulSetRecord = Type.Object({
  /** The major it runs, fixed at its creation. */
  major: Type.String(),
  /** The size and class its claims were made of (a StatefulSet's claim templates cannot change). */
  storage_gb: Type.Integer(),
  storage_class: Type.Union([Type.String(), Type.Null()]),
  /** What SQL has applied on the primary; null before the first time. */
  applied: Type.Union([
    Type.Object({
      password_version: Type.Integer(),
      users: Type.Record(Type.String(), Type.Integer()),
      db_names: Type.Array(Type.String()),
      trusted_blocks: Type.Union([Type.Array(Type.String()), Type.Null()]),
    }),
    Type.Null(),
  ]),
});
type StatefulSetRecord = Static<typeof StatefulSetRecord>;
type Applied = NonNullable<StatefulSetRecord['applied']>;

const appliedOf = (desired: DatabaseDesired): Applied => ({
  password_version: desired.password_version,
  users: Object.fromEntries(desired.users.map((user) => [user.name, user.password_version])),
  db_names: desired.db_names ?? [],
  trusted_blocks: desired.trusted_blocks,
});

/** The kinds, in the order they are deleted: the client Service first, so no new connection arrives. */
const KINDS = [
  { key: 'service', apiVersion: 'v1', kind: 'Service' },
  { key: 'statefulSet', apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { key: 'nodesService', apiVersion: 'v1', kind: 'Service' },
  { key: 'configMap', apiVersion: 'v1', kind: 'ConfigMap' },
  { key: 'secret', apiVersion: 'v1', kind: 'Secret' },
] as const;
type Key = (typeof KINDS)[number]['key'];

interface Live {
  service: V1Service | null;
  statefulSet: V1StatefulSet | null;
  nodesService: V1Service | null;
  configMap: V1ConfigMap | null;
  secret: V1Secret | null;
}

/** The most nodes a database has: the claims a delete looks for. */
const MAX_NODES = 3;

export class PostgresStatefulSetDriver implements DatabaseDriver {
  readonly backups: BackupDriver;
  private readonly objects: AppliedObjects;
  private readonly settings: PostgresSettings;
  private readonly progressPollMs: number;

  constructor(private readonly o: PostgresStatefulSetDriverOptions) {
    this.backups = o.backups;
    this.objects = new AppliedObjects(o.kubeConfig, o.requestTimeoutMs);
    this.settings = { ...DEFAULT_POSTGRES_SETTINGS, ...o.postgres };
    this.progressPollMs = o.progressPollMs ?? DEFAULT_PROGRESS_POLL_MS;
  }

  health(): DriverHealth {
    return this.objects.outcomes.health();
  }

  /** Its Pods (the primary becoming Ready, a Pod deleted) and Services changed by others are looked at at once. */
  watchMade(changed: Changed): () => void {
    return watchMade(this.o, ['pods', 'services'], changed);
  }

  async observe(m: Managed<DatabaseDesired>): Promise<Observation<DatabaseOutputs, DatabaseObserved>> {
    const notReady = { ready: false as const, outputs: null, observed: { standby_nodes: 0 } };
    if (m.desired.backup_restore)
      return {
        exists: true,
        upToDate: true,
        ...notReady,
        failure: 'the kubernetes driver does not restore a backup into a new database yet (its backups are simulated)',
      };
    const placement = this.placementOf(m);
    const live = await this.readLive(placement);
    if (KINDS.every(({ key }) => live[key] === null)) return { exists: false };
    const foreign = inTheWay(live, m.id, placement);
    if (foreign) return { exists: true, upToDate: true, ...notReady, failure: foreign };

    const record = recordOf(m.external) ?? this.newRecord(m);
    const kept = keptPasswords(live.secret);
    const password = m.desired.password ?? kept.password;
    const operatorPassword = kept.operatorPassword;
    const wanted = password && operatorPassword ? postgresObjects(m, placement, this.settings, record, password, operatorPassword) : null;
    const objectsUpToDate = wanted !== null && KINDS.every(({ key }) => holdsDesired(live[key], wanted[key]));

    const primary = operatorPassword ? await this.askPrimary(m, placement, operatorPassword) : null;
    const upToDate = objectsUpToDate && sameJson(record.applied, appliedOf(m.desired));
    const rejected =
      m.desired.version && m.desired.version !== record.major
        ? `the kubernetes driver runs PostgreSQL ${record.major} and does not move a database to another major`
        : m.desired.storage_gb > record.storage_gb
          ? `the kubernetes driver does not grow a database's storage yet (its claims were made of ${record.storage_gb} GB)`
          : null;
    const settled = primary !== null && upToDate && primary.streaming >= m.desired.num_nodes - 1;
    return {
      exists: true,
      upToDate: upToDate && rejected === null,
      ready: primary !== null,
      outputs: {
        connection: { host: clientHost(placement), port: POSTGRES_PORT, user: ADMIN_USER, database: DEFAULT_DATABASE, ssl_mode: 'disable' },
        version: record.major,
      },
      observed: { standby_nodes: primary?.streaming ?? 0 },
      failure: null,
      rejected,
      pollAfterMs: settled ? undefined : primary && upToDate ? STANDBY_POLL_MS : this.progressPollMs,
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

  async delete(m: Managed<DatabaseDesired>): Promise<Step> {
    const placement = this.placementOf(m);
    const live = await this.readLive(placement);
    for (const { key, apiVersion, kind } of KINDS) {
      // Only what was made for this database: someone else's object of the same name stays.
      if (!madeFor(live[key]?.metadata, m.id)) continue;
      if (await this.objects.delete({ apiVersion, kind, metadata: { namespace: placement.namespace, name: nameOf(placement, key) } }))
        this.o.logger.info({ id: m.id, ...placement, kind }, 'database object deleted');
    }
    // The claims go with the StatefulSet (its retention policy); deleted here too, should its controller be slow or off.
    for (let node = 0; node < MAX_NODES; node++) {
      const header: ObjectHeader = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { namespace: placement.namespace, name: `data-${placement.name}-${node}` },
      };
      const claim = await this.objects.read<V1PersistentVolumeClaim>(header);
      if (claim && madeFor(claim.metadata, m.id) && !claim.metadata?.deletionTimestamp) await this.objects.delete(header);
    }
    return { external: m.external ?? {}, pollAfterMs: this.progressPollMs };
  }

  /**
   * Applies the objects (the Secret first: the Pods read it as they start), then, once the
   * primary answers, brings its roles, logical databases and pg_hba.conf to the desired state.
   */
  private async apply(m: Managed<DatabaseDesired>, record: StatefulSetRecord): Promise<Step> {
    const placement = this.placementOf(m);
    const step: Step = { external: record, pollAfterMs: this.progressPollMs };
    const live = await this.readLive(placement);
    if (inTheWay(live, m.id, placement)) return step; // observe reports it; nothing of someone else's is touched
    const { password, users } = passwordsOf(m.desired);
    const operatorPassword = keptPasswords(live.secret).operatorPassword ?? newDatabasePassword();
    const wanted: PostgresObjects = postgresObjects(m, placement, this.settings, record, password, operatorPassword);
    // API call: drivers: applied objects (ConfigMaps, Services)
    // API call: store and drivers: secrets, written (a database's Secret)
    // API call: drivers: StatefulSets
    // API call: drivers: StatefulSets, created by apply
    for (const key of ['secret', 'configMap', 'nodesService', 'statefulSet', 'service'] as const) await this.objects.apply(wanted[key]);
    if (!live.statefulSet) this.o.logger.info({ id: m.id, ...placement, major: record.major, nodes: m.desired.num_nodes }, 'database applied');

    const pod = await this.primaryPod(placement);
    if (!pod) return step;
    const previous = record.applied;
    const applied = await this.withPrimary(pod, operatorPassword, 'postgres', async (client) => {
      if (previous?.password_version !== m.desired.password_version) await setPassword(client, ADMIN_USER, password);
      await applyUsers(client, users, previous?.users ?? {});
      await applyDbNames(client, (database, use) => this.withPrimary(pod, operatorPassword, database, use), m.desired, [OPERATOR_ROLE]);
      return { ...appliedOf(m.desired), trusted_blocks: await this.allow(client, m.desired.trusted_blocks, previous?.trusted_blocks) };
    }).catch((err: unknown) => {
      this.o.logger.warn({ id: m.id, ...placement, err: messageOf(err) }, "could not apply a database's users and logical databases yet");
      return previous;
    });
    return { ...step, external: { ...record, applied } };
  }

  /**
   * Reloads pg_hba.conf once the file the server reads holds the trusted sources (the
   * kubelet syncs a ConfigMap's files a while after it changes); the blocks in force.
   */
  private async allow(client: Client, blocks: string[] | null, before: string[] | null | undefined): Promise<string[] | null | undefined> {
    const { rows } = await client.query<{ hba: string }>("SELECT pg_read_file(current_setting('hba_file')) AS hba");
    if (rows[0]?.hba !== hbaOf(blocks)) return before;
    await client.query('SELECT pg_reload_conf()');
    return blocks;
  }

  private newRecord(m: Managed<DatabaseDesired>): StatefulSetRecord {
    return {
      major: m.desired.version ?? PG_VERSIONS[PG_VERSIONS.length - 1],
      storage_gb: m.desired.storage_gb,
      storage_class: this.settings.storageClass,
      applied: null,
    };
  }

  /** The primary's Pod while it serves (Ready, with an IP), else null. */
  private async primaryPod(placement: Placement): Promise<V1Pod | null> {
    // API call: drivers: Pods (get: a database's primary)
    const pod = await this.objects.read<V1Pod>({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: placement.namespace, name: primaryPodName(placement) },
    });
    return pod && isServing(pod) ? pod : null;
  }

  /** Whether the primary answers, and how many standbys stream from it; null when it does not answer. */
  private async askPrimary(m: Managed<DatabaseDesired>, placement: Placement, operatorPassword: string): Promise<{ streaming: number } | null> {
    const pod = await this.primaryPod(placement);
    if (!pod) return null;
    try {
      return await this.withPrimary(pod, operatorPassword, 'postgres', async (client) => {
        const { rows } = await client.query<{ streaming: string }>("SELECT count(*) AS streaming FROM pg_stat_replication WHERE state = 'streaming'");
        return { streaming: Number(rows[0]?.streaming ?? 0) };
      });
    } catch (err) {
      this.o.logger.debug({ id: m.id, pod: pod.metadata?.name, err: messageOf(err) }, "a database's primary did not answer");
      return null;
    }
  }

  /** Uses a connection to the primary Pod's IP as the internal role. */
  private async withPrimary<T>(pod: V1Pod, operatorPassword: string, database: string, use: (client: Client) => Promise<T>): Promise<T> {
    const client = new Client({
      host: pod.status?.podIP,
      port: POSTGRES_PORT,
      user: OPERATOR_ROLE,
      password: operatorPassword,
      database,
      ssl: false,
      connectionTimeoutMillis: this.o.connectTimeoutMs ?? 3_000,
      query_timeout: this.o.queryTimeoutMs ?? 30_000,
    });
    // A connection the server ends (the Pod going) is an 'error' event; unheard, it would end the service.
    client.on('error', (err) => {
      this.o.logger.debug({ err: err.message }, 'database connection ended');
    });
    await client.connect();
    try {
      return await use(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  private async readLive(placement: Placement): Promise<Live> {
    const read = <T extends V1Service | V1StatefulSet | V1ConfigMap | V1Secret>(key: Key) => {
      const { apiVersion, kind } = KINDS.find((k) => k.key === key) ?? KINDS[0];
      return this.objects.read<T>({ apiVersion, kind, metadata: { namespace: placement.namespace, name: nameOf(placement, key) } });
    };
    // One after another: each read's outcome counts into the health before the next.
    return {
      service: await read<V1Service>('service'),
      statefulSet: await read<V1StatefulSet>('statefulSet'),
      nodesService: await read<V1Service>('nodesService'),
      configMap: await read<V1ConfigMap>('configMap'),
      secret: await read<V1Secret>('secret'),
    };
  }

  private placementOf(m: Managed<DatabaseDesired>): Placement {
    return placementOf(m, this.o.systemNamespace);
  }
}

const nameOf = (placement: Placement, key: Key) => (key === 'nodesService' ? nodesServiceName(placement) : placement.name);

function recordOf(external: Managed<DatabaseDesired>['external']): StatefulSetRecord | null {
  return Value.Check(StatefulSetRecord, external) ? external : null;
}

/** The passwords the database's Secret holds, or null for those it does not. */
function keptPasswords(secret: V1Secret | null): { password: string | null; operatorPassword: string | null } {
  const read = (key: string) => {
    const data = secret?.data?.[key];
    return data ? Buffer.from(data, 'base64').toString('utf8') : null;
  };
  return { password: read(SECRET_KEYS.password), operatorPassword: read(SECRET_KEYS.operatorPassword) };
}

/** What stands under the database's names without having been made for it, or null. */
function inTheWay(live: Live, id: string, placement: Placement): string | null {
  const foreign = KINDS.find(({ key }) => live[key] !== null && !madeFor(live[key].metadata, id));
  return foreign
    ? `a ${foreign.kind} ${placement.namespace}/${nameOf(placement, foreign.key)} that Cloudplane did not make for this database is in the way`
    : null;
}
