/**
 * The objects a database is made of in its team's namespace, built from its desired state
 * (pure), all named after the database's id, labelled and owned by its custom resource:
 * - a Secret `<name>`: the connection details (`username`, `password`, `host`, `port`,
 *   `database`) as Crossplane's connection Secrets hold them, the password of the
 *   internal role `postgres` the operator and the standbys log in as (made once by the
 *   driver, read back on every later pass), and the SCRAM verifiers the first start sets
 *   (lib/scram.ts: the server is given no password itself);
 * - a ConfigMap `<name>`: pg_hba.conf (the trusted sources; PostgreSQL reads it through
 *   `hba_file`, and the driver reloads it once the kubelet has synced the file), the
 *   script each node starts with, and the first start's script that makes the role `postgres`;
 * - a headless Service `<name>-nodes` (the StatefulSet's, by which a standby finds the primary);
 * - a Service `<name>` for clients, port 5432, on the primary (`<name>-0`) alone;
 * - a StatefulSet `<name>` of the official `postgres` image, `num_nodes` Pods: `<name>-0`
 *   the primary, made by the image's own entrypoint on its first start; every other one
 *   starts as a pg_basebackup of the primary and follows it by streaming replication. One
 *   PersistentVolumeClaim per node from volumeClaimTemplates, deleted with the StatefulSet
 *   and when it scales down (persistentVolumeClaimRetentionPolicy), so that a standby
 *   added again starts from a fresh copy.
 */
import { createHash } from 'node:crypto';
import type { V1ConfigMap, V1ResourceRequirements, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { ID_LABEL } from '../../store/kubernetes/names';
import { ADMIN_USER, DATABASE_SIZES, DEFAULT_DATABASE } from '../../resources/database';
import { scramSha256Verifier } from '../../lib/scram';
import type { DatabaseDesired } from '../database';
import type { Managed } from '../types';
import { trustedHbaLines } from '../postgres-sql';
import { managedLabels, ownerReferencesOf, Placement } from './objects';

export const POSTGRES_PORT = 5432;
/** The role the operator and the standbys log in as: a name the API keeps from users. */
export const OPERATOR_ROLE = 'postgres';
export const CONTAINER_NAME = 'postgres';
export const HBA_KEY = 'pg_hba.conf';
export const START_KEY = 'start.sh';
export const INITDB_KEY = 'operator-role.sh';
export const CONFIG_DIR = '/etc/cloudplane';
const INITDB_DIR = '/docker-entrypoint-initdb.d';
const DATA_DIR = '/var/lib/postgresql/data';
const PGDATA = `${DATA_DIR}/pgdata`;
/** The Secret's keys. */
export const SECRET_KEYS = {
  username: 'username',
  password: 'password',
  host: 'host',
  port: 'port',
  database: 'database',
  adminVerifier: 'admin-verifier',
  operatorPassword: 'operator-password',
  operatorVerifier: 'operator-verifier',
} as const;
const COMPONENT_LABEL = 'app.kubernetes.io/component';
const COMPONENT = 'database';
/** Set by the StatefulSet controller on each of its Pods. */
const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';

export interface PostgresSettings {
  /** The image, with `<major>` where the major goes: `docker.io/library/postgres:<major>`. */
  image: string;
  /** The StorageClass of the nodes' claims; null: the cluster's default. */
  storageClass: string | null;
}

export const DEFAULT_POSTGRES_SETTINGS: PostgresSettings = { image: 'docker.io/library/postgres:<major>', storageClass: null };

/** Each plan's resources per node: the plan's vCPUs and memory requested, its memory the limit. */
const SIZE_RESOURCES: Partial<Record<string, { cpu: string; memory: string }>> & Record<(typeof DATABASE_SIZES)[number], { cpu: string; memory: string }> = {
  'db-s-1vcpu-1gb': { cpu: '1', memory: '1Gi' },
  'db-s-1vcpu-2gb': { cpu: '1', memory: '2Gi' },
  'db-s-2vcpu-4gb': { cpu: '2', memory: '4Gi' },
  'db-s-4vcpu-8gb': { cpu: '4', memory: '8Gi' },
};

export function resourcesOf(size: string): V1ResourceRequirements {
  const plan = SIZE_RESOURCES[size] ?? SIZE_RESOURCES['db-s-1vcpu-1gb'];
  return { requests: { cpu: plan.cpu, memory: plan.memory }, limits: { memory: plan.memory } };
}

export const imageOf = (settings: PostgresSettings, major: string) => settings.image.replaceAll('<major>', major);
export const nodesServiceName = (placement: Placement) => `${placement.name}-nodes`;
export const primaryPodName = (placement: Placement) => `${placement.name}-0`;
/** `<svc>.<namespace>.svc`: what clients in the cluster connect to. */
export const clientHost = ({ name, namespace }: Placement) => `${name}.${namespace}.svc`;

/** What the StatefulSet selects: its own Pods, by id and role. */
export function podSelector(id: string): Record<string, string> {
  return { [ID_LABEL]: id, [COMPONENT_LABEL]: COMPONENT };
}

/**
 * A SCRAM verifier whose salt is derived from the database, the role and the password's
 * version: the same password gives the same verifier on every pass (the Secret is applied
 * unchanged), a new password a new salt.
 */
export function stableVerifier(id: string, role: string, version: number, password: string): string {
  const salt = createHash('sha256').update(`cloudplane:${id}:${role}:${version}`).digest().subarray(0, 16);
  return scramSha256Verifier(password, salt);
}

/**
 * pg_hba.conf: the pod's own socket (the image's first start), the role `postgres` from
 * anywhere (the operator, from its Pod, and the standbys, from theirs: neither address is
 * known in advance), then the trusted sources for everyone else.
 */
export function hbaOf(blocks: string[] | null): string {
  return [
    "# Written by Cloudplane's kubernetes driver: who may connect to the database.",
    'local all all trust',
    `host all,replication ${OPERATOR_ROLE} all scram-sha-256`,
    ...trustedHbaLines(blocks),
    '',
  ].join('\n');
}

/** Node 0 is the primary (the image's entrypoint makes it on its first start); any other starts as its copy. */
const START_SCRIPT = `#!/bin/bash
# Written by Cloudplane's kubernetes driver: how each node of the database starts.
set -euo pipefail
ordinal="\${HOSTNAME##*-}"
if [ "$ordinal" != 0 ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  # A standby: a copy of the primary, following it by streaming replication (-R).
  rm -rf "$PGDATA"
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  PGPASSWORD="$DB_OPERATOR_PASSWORD" gosu postgres pg_basebackup -D "$PGDATA" -h "$DB_PRIMARY_HOST" -U ${OPERATOR_ROLE} -R -X stream -c fast
fi
exec docker-entrypoint.sh postgres -c hba_file=${CONFIG_DIR}/${HBA_KEY} -c password_encryption=scram-sha-256 -c listen_addresses='*'
`;

/** Run once, by the image's entrypoint, as the primary is first made: the operator's role, by its verifier. */
const INITDB_SCRIPT = `# Written by Cloudplane's kubernetes driver: the role the operator and the standbys log in as.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres --set verifier="$DB_OPERATOR_VERIFIER" <<'SQL'
CREATE ROLE ${OPERATOR_ROLE} SUPERUSER REPLICATION LOGIN PASSWORD :'verifier';
SQL
`;

type Named = { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };

export interface PostgresObjects {
  secret: V1Secret & Named;
  configMap: V1ConfigMap & Named;
  nodesService: V1Service & Named;
  service: V1Service & Named;
  statefulSet: V1StatefulSet & Named;
}

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/**
 * The objects for `resource`, running `major`, whose claims were made of `storageGb`
 * (a StatefulSet's claim templates cannot change). `password`: the administrator's;
 * `operatorPassword`: the internal role's, kept in the Secret.
 */
export function postgresObjects(
  resource: Managed<DatabaseDesired>,
  placement: Placement,
  settings: PostgresSettings,
  made: { major: string; storage_gb: number; storage_class: string | null },
  password: string,
  operatorPassword: string,
): PostgresObjects {
  const { desired, id } = resource;
  const { namespace, name } = placement;
  const labels = { ...managedLabels(id), [COMPONENT_LABEL]: COMPONENT, 'app.kubernetes.io/name': 'postgresql' };
  const metadata = { name, namespace, labels, ownerReferences: ownerReferencesOf(resource.owner) };
  const fromSecret = (envName: string, key: string) => ({ name: envName, valueFrom: { secretKeyRef: { name, key } } });
  const nodes = nodesServiceName(placement);

  return {
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata,
      data: {
        [SECRET_KEYS.username]: base64(ADMIN_USER),
        [SECRET_KEYS.password]: base64(password),
        [SECRET_KEYS.host]: base64(clientHost(placement)),
        [SECRET_KEYS.port]: base64(String(POSTGRES_PORT)),
        [SECRET_KEYS.database]: base64(DEFAULT_DATABASE),
        [SECRET_KEYS.adminVerifier]: base64(stableVerifier(id, ADMIN_USER, desired.password_version, password)),
        [SECRET_KEYS.operatorPassword]: base64(operatorPassword),
        [SECRET_KEYS.operatorVerifier]: base64(stableVerifier(id, OPERATOR_ROLE, 0, operatorPassword)),
      },
    },
    configMap: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata,
      data: { [HBA_KEY]: hbaOf(desired.trusted_blocks), [START_KEY]: START_SCRIPT, [INITDB_KEY]: INITDB_SCRIPT },
    },
    nodesService: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { ...metadata, name: nodes },
      spec: {
        clusterIP: 'None',
        // A standby being made must find the primary before either is Ready.
        publishNotReadyAddresses: true,
        selector: podSelector(id),
        ports: [{ name: 'postgres', port: POSTGRES_PORT, targetPort: 'postgres', protocol: 'TCP' }],
      },
    },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata,
      spec: {
        type: 'ClusterIP',
        selector: { ...podSelector(id), [POD_NAME_LABEL]: primaryPodName(placement) },
        ports: [{ name: 'postgres', port: POSTGRES_PORT, targetPort: 'postgres', protocol: 'TCP' }],
      },
    },
    statefulSet: {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata,
      spec: {
        serviceName: nodes,
        replicas: desired.num_nodes,
        // The primary first: a standby starts as its copy.
        podManagementPolicy: 'OrderedReady',
        selector: { matchLabels: podSelector(id) },
        persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 60,
            containers: [
              {
                name: CONTAINER_NAME,
                image: imageOf(settings, made.major),
                command: ['/bin/bash', `${CONFIG_DIR}/${START_KEY}`],
                env: [
                  { name: 'PGDATA', value: PGDATA },
                  { name: 'POSTGRES_USER', value: ADMIN_USER },
                  { name: 'POSTGRES_DB', value: DEFAULT_DATABASE },
                  // A verifier, not the password: initdb stores it as it is.
                  fromSecret('POSTGRES_PASSWORD', SECRET_KEYS.adminVerifier),
                  fromSecret('DB_OPERATOR_VERIFIER', SECRET_KEYS.operatorVerifier),
                  fromSecret('DB_OPERATOR_PASSWORD', SECRET_KEYS.operatorPassword),
                  { name: 'DB_PRIMARY_HOST', value: `${primaryPodName(placement)}.${nodes}` },
                ],
                ports: [{ name: 'postgres', containerPort: POSTGRES_PORT, protocol: 'TCP' }],
                readinessProbe: { exec: { command: ['pg_isready', '-h', '127.0.0.1', '-p', String(POSTGRES_PORT)] }, periodSeconds: 5, failureThreshold: 3 },
                resources: resourcesOf(desired.size),
                volumeMounts: [
                  { name: 'data', mountPath: DATA_DIR },
                  { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
                  { name: 'initdb', mountPath: INITDB_DIR, readOnly: true },
                ],
              },
            ],
            volumes: [
              {
                name: 'config',
                configMap: {
                  name,
                  items: [
                    { key: HBA_KEY, path: HBA_KEY },
                    { key: START_KEY, path: START_KEY },
                  ],
                },
              },
              { name: 'initdb', configMap: { name, items: [{ key: INITDB_KEY, path: INITDB_KEY }] } },
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data', labels },
            spec: {
              accessModes: ['ReadWriteOnce'],
              ...(made.storage_class ? { storageClassName: made.storage_class } : {}),
              resources: { requests: { storage: `${made.storage_gb}Gi` } },
            },
          },
        ],
      },
    },
  };
}
