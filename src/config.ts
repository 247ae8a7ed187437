/**
 * Every setting of the service, read once from the environment. README.md documents
 * each variable; a malformed value stops start-up with a message naming it.
 */
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from './lib/package-root';
import { parseIpv4Block } from './lib/cidr';
import { parseKey } from './lib/secret-key';
import {
  DEFAULT_PLAN_RESOURCES,
  DEFAULT_SERVER_IMAGES,
  missingPlans,
  ServerImageCatalog,
  ServerPlanResources,
  ServerImageCatalogSchema,
  ServerPlanResourcesSchema,
} from './lib/server-catalog';
import { Value } from '@sinclair/typebox/value';
import type { Static, TSchema } from '@sinclair/typebox';

export interface SimulationConfig {
  /** Base provisioning delay of the simulated provider. */
  delayMs: number;
  /** Per-family overrides of the delay, e.g. `vpn_gateway=8000`. */
  delays: Record<string, number>;
  /** Per-family probability (0..1) that a provider operation fails, e.g. `server=0.2,backend=0.5`. */
  failures: Record<string, number>;
}

/** Which driver does each family's work (src/drivers/registry.ts chooses and checks them). */
export interface DriverConfig {
  /**
   * The provider whose drivers families use by default: `local` on the embedded default (a
   * family's driver that runs real software on this machine where it has one and finds its
   * binaries, the simulated one otherwise), `kubernetes` in cluster mode, or `simulated`.
   */
  provider: 'local' | 'kubernetes' | 'simulated';
  /** Per-family choices (CLOUDPLANE_DRIVER_<FAMILY>), by family name such as `load_balancer`. */
  overrides: Record<string, string>;
  /** Where the local database driver takes PostgreSQL's programs from (CLOUDPLANE_POSTGRES_BIN_DIR); unset, it looks for them. */
  postgresBinDir: string | null;
  /** Where the local database driver keeps each database's files (CLOUDPLANE_LOCAL_DATABASE_DIR; `<data dir>/databases`). */
  localDatabaseDir: string;
  /** Directories the local Kubernetes cluster driver looks in for etcd, kube-apiserver and kwok before PATH (CLOUDPLANE_KUBERNETES_BIN_PATH). */
  kubernetesBinPath: string[];
  /** Where the local Kubernetes cluster driver keeps each cluster's files (CLOUDPLANE_LOCAL_KUBERNETES_DIR; `<data dir>/kubernetes-clusters`). */
  localKubernetesDir: string;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** Manifests applied to the first team at the install's first start (src/init-manifests.ts). */
  initDir?: string;
  /** Embedded store: compact its log into a snapshot once the log is this large. */
  storeCompactBytes: number;
  /** Embedded store: how many objects it keeps parsed; the others are read from the data directory when read. */
  storeParsedObjects: number;
  /** How far V8 grows its heap past what a full collection left live, in percent (0: V8's own choice); lib/heap-growth.ts. */
  heapGrowingPercent: number;
  bootstrapApiKey?: string;
  logLevel: string;
  /** The level of the one line logged per answered request (an access log). */
  requestLogLevel: RequestLogLevel;
  rateLimitPerMinute: number;
  /** What all of a team's keys and sessions may send in a minute together: a team with many keys gets no more. */
  teamRateLimitPerMinute: number;
  deletedRetentionMs: number;
  /** Length of a day for servers' daily backup policies: a day, unless shortened for a demo or a test. */
  backupPolicyDayMs: number;
  backendDrainMs: number;
  /** How often at most a VPN gateway's tunnel counters are written to its record (a tunnel going up or down is written at once). */
  tunnelCounterIntervalMs: number;
  resyncMs: number;
  /** The most resync passes a second per reconciled kind (0: unpaced); a larger collection's resync takes longer instead of costing more. */
  resyncPassesPerSecond: number;
  workersPerController: number;
  regions: string[];
  unavailableRegions: string[];
  /** The team network a VPN gateway's local_network_cidr defaults to. */
  vpcCidr: string;
  simulation: SimulationConfig;
  /** Whether teams may ask the simulated drivers for faults (/api/v1/simulation/faults; docs/api.md, "The simulation API"). */
  simulationApi: boolean;
  drivers: DriverConfig;
  agentLlm?: {
    url: string;
    model: string;
    apiKey?: string;
    /** Calls to the endpoint at once, for all teams; and of one team (its place in the fair turns, lib/fair-gate.ts). */
    concurrency: number;
    concurrencyPerTeam: number;
  };
  /** How long events are kept and searchable in the audit log. */
  eventRetentionMs: number;
  /** How long published events may wait in an outbox for a write that takes them out (events/write-timing.ts DRAIN_DELAY_MS). */
  outboxDrainMs: number;
  /** Cluster mode: the store of record is the Kubernetes API (CLOUDPLANE_STORE=kubernetes). */
  kubernetes?: KubernetesConfig;
  /** NATS JetStream for events (cluster mode); without it the embedded bus is used. */
  nats?: {
    servers: string[];
    stream: string;
    subjectPrefix: string;
    duplicateWindowMs: number;
    maxAgeMs: number;
    /** The key-value bucket of the counts the replicas share (quota claims, rate-limit windows). */
    countsBucket: string;
  };
  webhooks: WebhookConfig;
  /** CLOUDPLANE_QUOTAS: per-team quotas over the families' defaults, by quota name (src/resources/quota.ts says what counts). */
  quotas: Record<string, number>;
  secrets: SecretsConfig;
  idempotency: IdempotencyConfig;
  usage: UsageConfig;
  http: HttpConfig;
  overload: OverloadConfig;
  watches: WatchConfig;
  /** The S3 endpoint of the bucket driver `s3` (either mode). */
  s3: S3Config;
  /** The built web console (`make build` writes it to dist/console), served at `/`. */
  consoleDir: string;
  /** The address people reach the service at (CLOUDPLANE_PUBLIC_URL); undefined means the listen address. */
  publicUrl?: string;
  sessions: SessionConfig;
  /** Sign-in through an OpenID Connect provider; without it, an API key is exchanged for a session. */
  oidc?: OidcConfig;
}

/** Console sessions (src/accounts/sessions.ts). */
export interface SessionConfig {
  /** A session unused for this long ends. */
  idleTimeoutMs: number;
  /** A session ends this long after sign-in, however busy. */
  maxAgeMs: number;
}

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** Where the bucket driver `s3` makes buckets: AWS S3 or any S3-compatible endpoint. */
export interface S3Config {
  /** The endpoint's URL; undefined means AWS S3 of the region. */
  endpoint?: string;
  region: string;
  /** Both or neither; without them the SDK's default chain (environment, instance role) signs. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Path-style URLs (`<endpoint>/<bucket>`), which most self-hosted servers need. */
  forcePathStyle: boolean;
  /** Starts every backend bucket name, so that installs sharing an endpoint do not collide. */
  bucketPrefix: string;
  /**
   * The secret the endpoint's bucket notifications must carry to POST /hooks/s3-notifications
   * (src/api/s3-notifications.ts); undefined: that route does not exist and no data.* events.
   */
  notificationSecret?: string;
}

/** Limits on connections, so slow or idle clients cannot hold the listener. */
export interface HttpConfig {
  /** How long a whole request, headers and body, may take to arrive (408 past it). */
  requestTimeoutMs: number;
  /** How long the request line and headers may take to arrive (408 past it). */
  headersTimeoutMs: number;
  /** How long a kept-alive connection may wait for its next request. */
  keepAliveTimeoutMs: number;
  /** How long a connection may send and receive nothing at all, including while a request is handled. */
  idleTimeoutMs: number;
  /** Connections open at once; further ones are closed as they arrive. */
  maxConnections: number;
  /** Connections open at once from one client address (an IPv6 /64); further ones from it are closed as they arrive. 0: no cap. */
  maxConnectionsPerAddress: number;
  /** How long a new connection may take to send its first request's headers (408 past it). */
  firstRequestTimeoutMs: number;
}

/** Load shedding: /api/v1 answers 503 service_overloaded past any of these (0 turns one off). */
/** Watches of resources as server-sent events (api/watches.ts, docs/api.md Watching changes). */
export interface WatchConfig {
  /** Watches a team may hold at once, over all its keys and families. */
  perTeam: number;
  /** Watches this replica holds at once. */
  max: number;
  /** Changes remembered for clients that resume (of every team and family). */
  history: number;
  /** The longest a watch lasts; a client asks for less with timeout_seconds. */
  maxSeconds: number;
  /** A keep-alive comment this often. */
  keepAliveMs: number;
  /** Bytes that may wait for a slow client before it is cut off. */
  bufferBytes: number;
  /** How often a console session's watch asks whether the session still holds (ResourceWatches). */
  sessionCheckMs: number;
}

export interface OverloadConfig {
  /** Mean event-loop delay over a one-second sample. */
  maxEventLoopDelayMs: number;
  /** Heap in use, as a percentage of V8's heap limit. */
  maxHeapUsedPercent: number;
  retryAfterSeconds: number;
}

export interface SecretsConfig {
  /** Embedded store: the key secrets are sealed with at rest; without it, the data directory's key file. */
  encryptionKey?: Buffer;
  /** Embedded store: keys being rotated away, accepted for opening only. */
  previousEncryptionKeys: Buffer[];
  /** Period of the leader's secret sweep (orphaned secrets, expired previous webhook secrets). */
  sweepMs: number;
  /** How old a secret whose resource does not exist must be before the sweep removes it. */
  orphanGraceMs: number;
}

/** Usage metering (src/usage). */
export interface UsageConfig {
  /** How often each process writes its request and delivery counts, and the leader checks thresholds. */
  flushMs: number;
  /** The longest window GET /api/v1/usage answers. */
  maxWindowMs: number;
  /** How long usage records are kept after their usage ended. */
  retentionMs: number;
}

export interface IdempotencyConfig {
  /** How long a POST's answer is kept for a retry with the same Idempotency-Key. */
  ttlMs: number;
  /** How long a request in flight holds its key without renewing it; past it, a crashed replica's claim is taken over. */
  leaseMs: number;
}

export interface KubernetesConfig {
  kubeconfigPath?: string;
  /** Namespace of the operator's own objects (the Lease, system secrets). */
  systemNamespace: string;
  /**
   * The ClusterRole of the operator's rights in a team namespace and its own ServiceAccount
   * (in the system namespace), bound in each namespace it makes (the chart sets both);
   * unset, nothing is bound and its rights are taken as given.
   */
  teamNamespaceBinding?: { clusterRole: string; serviceAccount: string };
  leaseName: string;
  /** This replica's name in the Lease. */
  identity: string;
  /** How long a leader's Lease holds without renewal before a standby takes over. */
  leaseDurationMs: number;
  /** How long a job's image may keep failing to pull before the job fails. */
  jobImagePullTimeoutMs: number;
  /**
   * How long adoption leaves a custom resource the API created (status-pending label) and
   * that has no status yet, before taking it in as kubectl's (the API crashed between its
   * two writes). Unmarked ones are adopted at once.
   */
  adoptionGraceMs: number;
  /** The server Pod driver's catalog: API image name → container image and command. */
  serverImages: ServerImageCatalog;
  /** The server Pod driver's plans: plan → requests and limits. */
  serverPlans: ServerPlanResources;
  /** How long a server's Pod may stay unschedulable or fail to pull before the server fails. */
  serverStartTimeoutMs: number;
  /** The HAProxy load balancer driver's Deployments. */
  haproxy: HaproxySettings;
  /** The StorageClass of file shares' PersistentVolumeClaims; undefined: the cluster's default class. */
  fileShareStorageClass?: string;
  /** The VPN gateway driver's agents. */
  vpnGateways: VpnGatewayDriverSettings;
  /** The database driver's StatefulSets. */
  databases: DatabaseDriverSettings;
  /** The Kubernetes cluster driver's hosted control planes. */
  kubernetesClusters: KubernetesClusterDriverSettings;
}

/** What the Kubernetes cluster driver runs for each cluster's control plane and nodes. */
export interface KubernetesClusterDriverSettings {
  /** Where kube-apiserver, kube-controller-manager and kube-scheduler come from: `<registry>/<component>:v<patch>`. */
  imageRegistry: string;
  /** etcd's image. */
  etcdImage: string;
  /** KWOK's image (the `kwok` node provider). */
  kwokImage: string;
  /** The StorageClass of etcd's PersistentVolumeClaims; null: the cluster's default class. */
  storageClass: string | null;
  /** Who plays the node pools' nodes: `kwok` (Cluster API MachineDeployments are the next provider, not built). */
  nodeProvider: 'kwok';
}

/** What the Kubernetes database driver runs for each database. */
export interface DatabaseDriverSettings {
  /** The PostgreSQL image, `<major>` standing for the major (`docker.io/library/postgres:<major>`). */
  image: string;
  /** The StorageClass of each node's PersistentVolumeClaim; null: the cluster's default class. */
  storageClass: string | null;
  /** The cloudnative-pg driver's image (a Cluster's imageName), `<major>` standing for the major (`ghcr.io/cloudnative-pg/postgresql:<major>`). */
  cnpgImage: string;
}

/** What the Kubernetes VPN gateway driver runs for each gateway. */
export interface VpnGatewayDriverSettings {
  /** Cloudplane's own image, whose `vpn-agent` subcommand runs the tunnel. */
  image: string;
  /** Each read of an agent's /status. */
  statusTimeoutMs: number;
  /** A rollout that makes no progress for this long counts as failed. */
  progressDeadlineSeconds: number;
}

/** What the HAProxy load balancer driver runs for each load balancer. */
export interface HaproxySettings {
  image: string;
  replicas: number;
  /** How long a stopping or replaced HAProxy Pod may keep serving open connections. */
  drainTimeoutMs: number;
  /** How often HAProxy checks each backend's health path. */
  checkIntervalMs: number;
  /** Where each HAProxy Pod serves its stats, read by the operator for backend health. */
  statsPort: number;
  /** Each read of a Pod's stats. */
  statsTimeoutMs: number;
  /** A rollout that makes no progress for this long counts as failed. */
  progressDeadlineSeconds: number;
}

export interface WebhookConfig {
  /** http:// targets (tests, private installs); https only otherwise. */
  allowHttp: boolean;
  /** Private, loopback and link-local targets; refused otherwise (SSRF). */
  allowPrivateTargets: boolean;
  /** How long the previous secret keeps signing after a rotation. */
  secretOverlapMs: number;
  timeoutMs: number;
  /** Delivery attempts under way at once: in the process, per team, per subscription (docs/api.md "Fair sharing"). */
  inFlight: WebhookInFlightLimits;
  /** Connections kept open between attempts: over all receivers, and to one (docs/api.md "Fair sharing"). */
  idleConnections: IdleConnectionLimits;
  /** Multiplies every retry interval; 1 in production, small in tests. */
  timeScale: number;
  /** Consecutive failed attempts after which a subscription is disabled. */
  disableAfter: number;
  /** How long a finished delivery is kept after its last attempt; a deleted subscription goes with its last delivery. */
  deliveryRetentionMs: number;
  /** Where the notice of a disabled subscription is sent; without it, a warning is logged. */
  smtpUrl?: string;
  smtpFrom: string;
  /**
   * How long a `cloudplane listen` listener lives without its stream: the replica holding
   * the stream renews it every third of this; once it lapses the listener is deleted.
   */
  listenerLeaseMs: number;
}

export interface IdleConnectionLimits {
  idle: number;
  idlePerReceiver: number;
}

export interface WebhookInFlightLimits {
  global: number;
  perTeam: number;
  perSubscription: number;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false') throw new Error(`${name} must be true or false, got "${raw}"`);
  return raw === 'true';
}

function positiveNumber(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a number above 0, got "${raw}"`);
  return value;
}

function list(env: Env, name: string, fallback: string[]): string[] {
  const raw = env[name];
  if (raw === undefined) return fallback;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Parses `a=1,b=2.5` into a map of numbers within [min, max]. */
function numberMap(env: Env, name: string, min: number, max: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pair of list(env, name, [])) {
    const [key, ...values] = pair.split('=');
    const raw = values.at(0);
    const value = Number(raw);
    if (!key || raw === undefined || !Number.isFinite(value) || value < min || value > max) {
      throw new Error(`${name}: "${pair}" is not of the form family=number with ${min} <= number <= ${max}`);
    }
    out[key.trim()] = value;
  }
  return out;
}

/**
 * `CLOUDPLANE_QUOTAS=webhook=100,load_balancer=5000`: quotas over the families' defaults.
 * Each name is checked at start-up against the quotas the families declare
 * (resources/quota.ts quotaLimits), which this layer does not know.
 */
function quotaOverrides(env: Env): Record<string, number> {
  const name = 'CLOUDPLANE_QUOTAS';
  const given = numberMap(env, name, 0, Number.MAX_SAFE_INTEGER);
  for (const [family, value] of Object.entries(given)) {
    if (!Number.isInteger(value)) throw new Error(`${name}: the quota of ${family} must be a whole number, got ${value}`);
  }
  return given;
}

export const REQUEST_LOG_LEVELS = ['trace', 'debug', 'info'] as const;
export type RequestLogLevel = (typeof REQUEST_LOG_LEVELS)[number];

/**
 * A laptop's terminal is for the banner and warnings: requests are logged at debug on the
 * embedded store. An installation's logs are collected, and an access log is expected there:
 * info on the Kubernetes store.
 */
function requestLogLevel(env: Env): RequestLogLevel {
  const raw = env.CLOUDPLANE_REQUEST_LOG_LEVEL || (storeKind(env) === 'kubernetes' ? 'info' : 'debug');
  const level = REQUEST_LOG_LEVELS.find((known) => known === raw);
  if (!level) throw new Error(`CLOUDPLANE_REQUEST_LOG_LEVEL must be one of ${REQUEST_LOG_LEVELS.join(', ')}, got "${raw}"`);
  return level;
}

function storeKind(env: Env): 'embedded' | 'kubernetes' {
  const raw = env.CLOUDPLANE_STORE || 'embedded';
  if (raw !== 'embedded' && raw !== 'kubernetes') throw new Error(`CLOUDPLANE_STORE must be embedded or kubernetes, got "${raw}"`);
  return raw;
}

const DRIVER_PREFIX = 'CLOUDPLANE_DRIVER_';

function drivers(env: Env, dataDir: string): DriverConfig {
  const provider = env.CLOUDPLANE_PROVIDER || (storeKind(env) === 'kubernetes' ? 'kubernetes' : 'local');
  if (provider !== 'kubernetes' && provider !== 'simulated' && provider !== 'local')
    throw new Error(`CLOUDPLANE_PROVIDER must be local, simulated or kubernetes, got "${provider}"`);
  const overrides: Record<string, string> = {};
  // CLOUDPLANE_JOB_DRIVER is the older name of CLOUDPLANE_DRIVER_JOB.
  if (env.CLOUDPLANE_JOB_DRIVER) overrides.job = env.CLOUDPLANE_JOB_DRIVER;
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(DRIVER_PREFIX) || !value) continue;
    overrides[name.slice(DRIVER_PREFIX.length).toLowerCase()] = value;
  }
  return {
    provider,
    overrides,
    postgresBinDir: env.CLOUDPLANE_POSTGRES_BIN_DIR ? path.resolve(env.CLOUDPLANE_POSTGRES_BIN_DIR) : null,
    localDatabaseDir: path.resolve(env.CLOUDPLANE_LOCAL_DATABASE_DIR || path.join(dataDir, 'databases')),
    kubernetesBinPath: (env.CLOUDPLANE_KUBERNETES_BIN_PATH ?? '')
      .split(path.delimiter)
      .filter(Boolean)
      .map((dir) => path.resolve(dir)),
    localKubernetesDir: path.resolve(env.CLOUDPLANE_LOCAL_KUBERNETES_DIR || path.join(dataDir, 'kubernetes-clusters')),
  };
}

/** A JSON value of a given shape, or the fallback when unset. */
function json<S extends TSchema>(env: Env, name: string, schema: S, fallback: Static<S>, example: string): Static<S> {
  const raw = env[name];
  if (!raw) return fallback;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    // JSON.parse throws nothing but SyntaxErrors.
    if (!(err instanceof SyntaxError)) throw err;
    throw new Error(`${name} must be JSON such as ${example}: ${err.message}`);
  }
  if (!Value.Check(schema, value)) throw new Error(`${name} must be JSON such as ${example}; ${[...Value.Errors(schema, value)][0]?.path || '/'} is not`);
  return value;
}

function serverPlans(env: Env): ServerPlanResources {
  const plans = json(
    env,
    'CLOUDPLANE_SERVER_PLANS',
    ServerPlanResourcesSchema,
    DEFAULT_PLAN_RESOURCES,
    '{"s-1vcpu-1gb":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}}}',
  );
  const missing = missingPlans(plans);
  if (missing.length > 0) throw new Error(`CLOUDPLANE_SERVER_PLANS must give every plan its resources; it lacks ${missing.join(', ')}`);
  return plans;
}

/** An encryption key: base64 of 32 bytes. */
function key(env: Env, name: string): Buffer | undefined {
  const raw = env[name];
  return raw ? parseKey(raw, name) : undefined;
}

/** Encryption keys, comma-separated. */
function keys(env: Env, name: string): Buffer[] {
  return list(env, name, []).map((raw) => parseKey(raw, name));
}

/** A Kubernetes object name (a DNS subdomain), or undefined when unset. */
function objectNameSetting(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  if (raw.length > 253 || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(raw))
    throw new Error(`${name} must be a Kubernetes object name (lowercase letters, digits, '-' and '.'), got "${raw}"`);
  return raw;
}

/** The hosted control planes' images, etcd's StorageClass and the node provider (CLOUDPLANE_KUBERNETES_*). */
function kubernetesClusterSettings(env: Env): KubernetesClusterDriverSettings {
  const provider = env.CLOUDPLANE_KUBERNETES_NODE_PROVIDER || 'kwok';
  if (provider !== 'kwok')
    throw new Error(
      `CLOUDPLANE_KUBERNETES_NODE_PROVIDER must be kwok, got "${provider}" (Cluster API MachineDeployments are the next provider, not built yet)`,
    );
  return {
    imageRegistry: (env.CLOUDPLANE_KUBERNETES_IMAGE_REGISTRY || 'registry.k8s.io').replace(/\/+$/, ''),
    etcdImage: env.CLOUDPLANE_KUBERNETES_ETCD_IMAGE || 'registry.k8s.io/etcd:3.5.21-0',
    kwokImage: env.CLOUDPLANE_KUBERNETES_KWOK_IMAGE || 'registry.k8s.io/kwok/kwok:v0.8.0',
    storageClass: objectNameSetting(env, 'CLOUDPLANE_KUBERNETES_STORAGE_CLASS') ?? null,
    nodeProvider: provider,
  };
}

/** Both names or neither: a ClusterRole without whom to bind it to (or the reverse) is a mistake. */
function teamNamespaceBinding(env: Env): KubernetesConfig['teamNamespaceBinding'] {
  const clusterRole = objectNameSetting(env, 'CLOUDPLANE_TEAM_NAMESPACE_ROLE');
  const serviceAccount = objectNameSetting(env, 'CLOUDPLANE_SERVICE_ACCOUNT_NAME');
  if (!clusterRole && !serviceAccount) return undefined;
  if (!clusterRole || !serviceAccount)
    throw new Error('CLOUDPLANE_TEAM_NAMESPACE_ROLE and CLOUDPLANE_SERVICE_ACCOUNT_NAME go together: set both (the chart does) or neither');
  return { clusterRole, serviceAccount };
}

function cidr(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!parseIpv4Block(raw)) throw new Error(`${name} must be an IPv4 network such as 10.10.0.0/16, got "${raw}"`);
  return raw;
}

function httpLimits(env: Env): HttpConfig {
  const requestTimeoutMs = int(env, 'CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS', 30_000, 1);
  const headersTimeoutMs = int(env, 'CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 1);
  // Node refuses a headers timeout longer than the request's; say which variable is wrong.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new Error(
      `CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not be longer than CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  }
  const maxConnections = int(env, 'CLOUDPLANE_HTTP_MAX_CONNECTIONS', 1000, 1);
  // 64 by default: a browser opens 6 per host and a client's pool a few, so a dozen users
  // behind one NAT fit, while one address holds at most a sixteenth of the 1000 in all.
  const maxConnectionsPerAddress = int(env, 'CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS', Math.min(64, maxConnections), 0);
  if (maxConnectionsPerAddress > maxConnections) {
    throw new Error(
      `CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS (${maxConnectionsPerAddress}) must not be above CLOUDPLANE_HTTP_MAX_CONNECTIONS (${maxConnections}): the global cap is the last bound, above any one address's`,
    );
  }
  return {
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: int(env, 'CLOUDPLANE_HTTP_KEEPALIVE_TIMEOUT_MS', 72_000, 1),
    idleTimeoutMs: int(env, 'CLOUDPLANE_HTTP_IDLE_TIMEOUT_MS', 120_000, 1),
    maxConnections,
    maxConnectionsPerAddress,
    // Past the headers timeout it would never bite: that one ends a silent connection first.
    firstRequestTimeoutMs: int(env, 'CLOUDPLANE_HTTP_FIRST_REQUEST_TIMEOUT_MS', Math.min(5_000, headersTimeoutMs), 1),
  };
}

/**
 * The caps on webhook attempts under way. Each holds a socket for up to the webhook
 * timeout, so the global cap bounds the dispatcher's file descriptors (256 of a usual
 * 1024 soft limit, beside the API's 1000 connections cap and the store's files); a team
 * gets an eighth of it, so eight teams' black-hole receivers are needed to fill it, and a
 * subscription an eighth of its team's, so one dead receiver leaves the team's others
 * room. A tighter cap than the one above it would be no cap at all, so that is refused.
 */
function webhookInFlight(env: Env): WebhookInFlightLimits {
  const global = int(env, 'CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT', 256, 1, 100_000);
  const perTeam = int(env, 'CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_TEAM', Math.min(32, global), 1, global);
  const perSubscription = int(env, 'CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION', Math.min(4, perTeam), 1, perTeam);
  return { global, perTeam, perSubscription };
}

/**
 * Connections to receivers kept open between attempts, beside the ones in use: a quarter
 * of the in-flight cap in all, so the dispatcher's sockets stay within 320 of the usual
 * 1024 descriptors, and one team's in-flight cap to one receiver. 0 opens a connection
 * per attempt.
 */
function webhookIdleConnections(env: Env, inFlight: WebhookInFlightLimits): IdleConnectionLimits {
  const idle = int(env, 'CLOUDPLANE_WEBHOOK_IDLE_CONNECTIONS', Math.ceil(inFlight.global / 4), 0, 100_000);
  return { idle, idlePerReceiver: Math.min(inFlight.perTeam, idle) };
}

const MIN_NOTIFICATION_SECRET = 32;

function s3(env: Env): S3Config {
  const endpoint = env.CLOUDPLANE_S3_ENDPOINT || undefined;
  if (endpoint !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(endpoint);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
      throw new Error(`CLOUDPLANE_S3_ENDPOINT must be an http:// or https:// URL such as https://s3.example.com, got "${endpoint}"`);
    }
  }
  const region = env.CLOUDPLANE_S3_REGION || 'us-east-1';
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(region)) throw new Error(`CLOUDPLANE_S3_REGION must be a region name such as us-east-1, got "${region}"`);
  const accessKeyId = env.CLOUDPLANE_S3_ACCESS_KEY_ID || undefined;
  const secretAccessKey = env.CLOUDPLANE_S3_SECRET_ACCESS_KEY || undefined;
  // Never the secret's value in the message: start-up errors are logged.
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) {
    throw new Error(
      `CLOUDPLANE_S3_ACCESS_KEY_ID and CLOUDPLANE_S3_SECRET_ACCESS_KEY go together; only ${accessKeyId ? 'CLOUDPLANE_S3_ACCESS_KEY_ID' : 'CLOUDPLANE_S3_SECRET_ACCESS_KEY'} is set`,
    );
  }
  const bucketPrefix = env.CLOUDPLANE_S3_BUCKET_PREFIX ?? 'cp';
  // Room is left for the team and the bucket's own name (src/drivers/s3/names.ts).
  if (!/^[a-z0-9](?:[a-z0-9-]{0,14}[a-z0-9])?$/.test(bucketPrefix)) {
    throw new Error(`CLOUDPLANE_S3_BUCKET_PREFIX must be 1 to 16 lowercase letters, digits or inner hyphens, got "${bucketPrefix}"`);
  }
  const notificationSecret = env.CLOUDPLANE_S3_NOTIFICATION_SECRET || undefined;
  // Long enough not to be guessed through the route's rate limit; never its value in the message.
  if (notificationSecret !== undefined && !new RegExp(`^[A-Za-z0-9._~-]{${MIN_NOTIFICATION_SECRET},}$`).test(notificationSecret)) {
    throw new Error(
      `CLOUDPLANE_S3_NOTIFICATION_SECRET must be at least ${MIN_NOTIFICATION_SECRET} letters, digits, '.', '_', '~' or '-' (it goes in a URL's user info as it is), got ${notificationSecret.length} characters or others`,
    );
  }
  return {
    endpoint,
    region,
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
    forcePathStyle: bool(env, 'CLOUDPLANE_S3_FORCE_PATH_STYLE', false),
    bucketPrefix,
    notificationSecret,
  };
}

/** Seconds in each unit a duration may be written in. */
const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `7200`, `7200s`, `120m`, `2h` or `1d`: a duration, in seconds without a unit. */
function duration(env: Env, name: string, fallbackMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const match = /^(\d+)(s|m|h|d)?$/.exec(raw.trim());
  const value = match ? Number(match[1]) * UNIT_SECONDS[match.at(2) ?? 's'] * 1000 : 0;
  if (!match || value <= 0 || !Number.isSafeInteger(value)) throw new Error(`${name} must be a duration above 0 such as 7200, 90m, 2h or 1d, got "${raw}"`);
  return value;
}

const isLoopbackHost = (hostname: string) => hostname === 'localhost' || /^127\./.test(hostname) || hostname === '[::1]';

/** An http(s) origin; http only for a loopback host when `loopbackOnlyHttp` (an identity provider must use TLS elsewhere). */
function originUrl(env: Env, name: string, example: string, loopbackOnlyHttp = false): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const httpAllowed = !loopbackOnlyHttp || (url !== undefined && isLoopbackHost(url.hostname));
  if (!url || !(url.protocol === 'https:' || (url.protocol === 'http:' && httpAllowed)) || url.search || url.hash || url.username) {
    throw new Error(
      `${name} must be an ${loopbackOnlyHttp ? 'https:// (http:// only on loopback)' : 'http:// or https://'} URL such as ${example}, got "${raw}"`,
    );
  }
  return raw.replace(/\/+$/, '');
}

function oidc(env: Env): OidcConfig | undefined {
  const issuer = originUrl(env, 'CLOUDPLANE_OIDC_ISSUER', 'https://accounts.example.com', true);
  const clientId = env.CLOUDPLANE_OIDC_CLIENT_ID || undefined;
  const clientSecret = env.CLOUDPLANE_OIDC_CLIENT_SECRET || undefined;
  if (!issuer && !clientId && !clientSecret) return undefined;
  // Never the secret's value in the message: start-up errors are logged.
  if (!issuer || !clientId || !clientSecret) {
    const missing = [!issuer && 'CLOUDPLANE_OIDC_ISSUER', !clientId && 'CLOUDPLANE_OIDC_CLIENT_ID', !clientSecret && 'CLOUDPLANE_OIDC_CLIENT_SECRET'].filter(
      Boolean,
    );
    throw new Error(
      `an identity provider needs CLOUDPLANE_OIDC_ISSUER, CLOUDPLANE_OIDC_CLIENT_ID and CLOUDPLANE_OIDC_CLIENT_SECRET; ${missing.join(' and ')} not set`,
    );
  }
  return { issuer, clientId, clientSecret };
}

function publicUrl(env: Env): string | undefined {
  const url = originUrl(env, 'CLOUDPLANE_PUBLIC_URL', 'https://cloudplane.example.com');
  if (url && new URL(url).pathname !== '/')
    throw new Error(`CLOUDPLANE_PUBLIC_URL must be an origin without a path, such as https://cloudplane.example.com, got "${url}"`);
  return url;
}

function sessions(env: Env): SessionConfig {
  const idleTimeoutMs = duration(env, 'CLOUDPLANE_SESSION_IDLE_TIMEOUT', 2 * 3600_000);
  const maxAgeMs = duration(env, 'CLOUDPLANE_SESSION_MAX_AGE', 24 * 3600_000);
  return { idleTimeoutMs, maxAgeMs };
}

/**
 * How long the outbox relay leaves published events in an outbox, by default, for the
 * object's next write to take out (events/write-timing.ts says why).
 */
export const DEFAULT_OUTBOX_DRAIN_SECONDS = 300;

export const DEFAULT_REGIONS = ['fra1', 'ams3', 'lon1', 'nyc1', 'sfo3', 'sgp1'];

export function loadConfig(env: Env = process.env): Config {
  const llmUrl = env.CLOUDPLANE_AGENT_LLM_URL;
  const natsServers = list(env, 'CLOUDPLANE_NATS_URL', []);
  // Fractional days are allowed (0.0001 is 8.64 s), so tests can watch events expire.
  const eventRetentionMs = Math.max(1, Math.round(positiveNumber(env, 'CLOUDPLANE_EVENT_RETENTION_DAYS', 30) * 86_400_000));
  const dataDir = path.resolve(env.CLOUDPLANE_DATA_DIR || './data');
  const duplicateWindowMs = int(env, 'CLOUDPLANE_NATS_DUPLICATE_WINDOW_SECONDS', 3600, 1) * 1000;
  // A new leader publishes every outbox again: what it finds must still be inside NATS's duplicate window.
  const maxDrainSeconds = natsServers.length ? Math.floor(duplicateWindowMs / 2000) : 86_400;
  const outboxDrainMs = int(env, 'CLOUDPLANE_OUTBOX_DRAIN_SECONDS', Math.min(DEFAULT_OUTBOX_DRAIN_SECONDS, maxDrainSeconds), 0, maxDrainSeconds) * 1000;
  return {
    host: env.CLOUDPLANE_HOST || '127.0.0.1',
    port: int(env, 'CLOUDPLANE_PORT', 8080, 0, 65535),
    dataDir,
    initDir: env.CLOUDPLANE_INIT_DIR ? path.resolve(env.CLOUDPLANE_INIT_DIR) : undefined,
    consoleDir: path.resolve(env.CLOUDPLANE_CONSOLE_DIR || path.join(packageRoot(), 'dist', 'console')),
    storeCompactBytes: int(env, 'CLOUDPLANE_STORE_COMPACT_BYTES', 64 * 1024 * 1024, 4096),
    storeParsedObjects: int(env, 'CLOUDPLANE_STORE_PARSED_OBJECTS', 10_000, 1),
    heapGrowingPercent: int(env, 'CLOUDPLANE_HEAP_GROWING_PERCENT', 50, 0, 300),
    bootstrapApiKey: env.CLOUDPLANE_BOOTSTRAP_API_KEY || undefined,
    logLevel: env.CLOUDPLANE_LOG_LEVEL || 'info',
    requestLogLevel: requestLogLevel(env),
    rateLimitPerMinute: int(env, 'CLOUDPLANE_RATE_LIMIT_PER_MINUTE', 1000, 1),
    // Ten keys' worth by default: a team's CI, console users and scripts side by side, while
    // its quota of 100 keys cannot make it 100 keys' worth of the service.
    teamRateLimitPerMinute: int(env, 'CLOUDPLANE_RATE_LIMIT_PER_TEAM_PER_MINUTE', 10 * int(env, 'CLOUDPLANE_RATE_LIMIT_PER_MINUTE', 1000, 1), 1),
    deletedRetentionMs: int(env, 'CLOUDPLANE_DELETED_RETENTION_SECONDS', 7 * 24 * 3600, 0) * 1000,
    backupPolicyDayMs: int(env, 'CLOUDPLANE_BACKUP_POLICY_DAY_MS', 86_400_000, 1000, 86_400_000),
    backendDrainMs: int(env, 'CLOUDPLANE_BACKEND_DRAIN_SECONDS', 30, 0) * 1000,
    tunnelCounterIntervalMs: int(env, 'CLOUDPLANE_VPN_COUNTER_INTERVAL_SECONDS', 30, 1, 86_400) * 1000,
    resyncMs: int(env, 'CLOUDPLANE_RESYNC_SECONDS', 30, 1) * 1000,
    resyncPassesPerSecond: int(env, 'CLOUDPLANE_RESYNC_PASSES_PER_SECOND', 500, 0),
    workersPerController: int(env, 'CLOUDPLANE_WORKERS', 4, 1, 64),
    regions: list(env, 'CLOUDPLANE_REGIONS', DEFAULT_REGIONS),
    unavailableRegions: list(env, 'CLOUDPLANE_REGIONS_UNAVAILABLE', []),
    vpcCidr: cidr(env, 'CLOUDPLANE_VPC_CIDR', '10.10.0.0/16'),
    simulation: {
      delayMs: int(env, 'CLOUDPLANE_SIM_DELAY_MS', 3000, 0),
      delays: numberMap(env, 'CLOUDPLANE_SIM_DELAYS', 0, Number.MAX_SAFE_INTEGER),
      failures: numberMap(env, 'CLOUDPLANE_SIM_FAILURES', 0, 1),
    },
    simulationApi: bool(env, 'CLOUDPLANE_SIMULATION_API', false),
    drivers: drivers(env, dataDir),
    agentLlm: llmUrl
      ? {
          url: llmUrl,
          model: env.CLOUDPLANE_AGENT_LLM_MODEL || 'gpt-4o-mini',
          apiKey: env.CLOUDPLANE_AGENT_LLM_API_KEY,
          concurrency: int(env, 'CLOUDPLANE_AGENT_LLM_CONCURRENCY', 8, 1, 1000),
          concurrencyPerTeam: int(env, 'CLOUDPLANE_AGENT_LLM_CONCURRENCY_PER_TEAM', 2, 1, 1000),
        }
      : undefined,
    eventRetentionMs,
    outboxDrainMs,
    webhooks: {
      allowHttp: bool(env, 'CLOUDPLANE_WEBHOOK_ALLOW_HTTP', false),
      allowPrivateTargets: bool(env, 'CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
      secretOverlapMs: int(env, 'CLOUDPLANE_WEBHOOK_SECRET_OVERLAP_SECONDS', 86_400, 0) * 1000,
      timeoutMs: int(env, 'CLOUDPLANE_WEBHOOK_TIMEOUT_MS', 10_000, 1),
      inFlight: webhookInFlight(env),
      idleConnections: webhookIdleConnections(env, webhookInFlight(env)),
      timeScale: positiveNumber(env, 'CLOUDPLANE_WEBHOOK_TIME_SCALE', 1),
      disableAfter: int(env, 'CLOUDPLANE_WEBHOOK_DISABLE_AFTER', 50, 1),
      // Fractional days allowed, so tests can keep deliveries for seconds.
      deliveryRetentionMs: positiveNumber(env, 'CLOUDPLANE_WEBHOOK_DELIVERY_RETENTION_DAYS', 30) * 86_400_000,
      smtpUrl: env.CLOUDPLANE_SMTP_URL || undefined,
      smtpFrom: env.CLOUDPLANE_SMTP_FROM || 'Cloudplane <noreply@cloudplane.local>',
      listenerLeaseMs: int(env, 'CLOUDPLANE_WEBHOOK_LISTENER_LEASE_SECONDS', 30, 1, 3600) * 1000,
    },
    quotas: quotaOverrides(env),
    secrets: {
      encryptionKey: key(env, 'CLOUDPLANE_ENCRYPTION_KEY'),
      previousEncryptionKeys: keys(env, 'CLOUDPLANE_ENCRYPTION_KEY_PREVIOUS'),
      sweepMs: int(env, 'CLOUDPLANE_SECRET_SWEEP_SECONDS', 60, 1) * 1000,
      orphanGraceMs: int(env, 'CLOUDPLANE_ORPHAN_SECRET_GRACE_SECONDS', 600, 1) * 1000,
    },
    idempotency: {
      ttlMs: int(env, 'CLOUDPLANE_IDEMPOTENCY_TTL_SECONDS', 86_400, 1) * 1000,
      leaseMs: int(env, 'CLOUDPLANE_IDEMPOTENCY_LEASE_SECONDS', 30, 1, 3600) * 1000,
    },
    usage: {
      // Fractional seconds allowed, so tests see counts and thresholds within a second.
      flushMs: positiveNumber(env, 'CLOUDPLANE_USAGE_FLUSH_SECONDS', 60) * 1000,
      maxWindowMs: int(env, 'CLOUDPLANE_USAGE_MAX_WINDOW_DAYS', 366, 1, 3660) * 86_400_000,
      // Fractional days allowed, so tests can keep usage for seconds.
      retentionMs: positiveNumber(env, 'CLOUDPLANE_USAGE_RETENTION_DAYS', 400) * 86_400_000,
    },
    http: httpLimits(env),
    overload: {
      maxEventLoopDelayMs: int(env, 'CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS', 1000, 0),
      maxHeapUsedPercent: int(env, 'CLOUDPLANE_OVERLOAD_MAX_HEAP_USED_PERCENT', 90, 0, 100),
      retryAfterSeconds: int(env, 'CLOUDPLANE_OVERLOAD_RETRY_AFTER_SECONDS', 5, 1, 3600),
    },
    watches: {
      perTeam: int(env, 'CLOUDPLANE_WATCHES_PER_TEAM', 50, 1),
      max: int(env, 'CLOUDPLANE_WATCHES_MAX', 5000, 1),
      history: int(env, 'CLOUDPLANE_WATCH_HISTORY', 20_000, 1, 10_000_000),
      maxSeconds: int(env, 'CLOUDPLANE_WATCH_MAX_SECONDS', 1800, 1, 86_400),
      keepAliveMs: 15_000,
      bufferBytes: 4 * 1024 * 1024,
      sessionCheckMs: int(env, 'CLOUDPLANE_WATCH_SESSION_CHECK_SECONDS', 15, 1, 3600) * 1000,
    },
    s3: s3(env),
    publicUrl: publicUrl(env),
    sessions: sessions(env),
    oidc: oidc(env),
    kubernetes:
      storeKind(env) === 'kubernetes'
        ? {
            kubeconfigPath: env.CLOUDPLANE_KUBECONFIG || undefined,
            systemNamespace: env.CLOUDPLANE_SYSTEM_NAMESPACE || env.POD_NAMESPACE || 'cloudplane-system',
            teamNamespaceBinding: teamNamespaceBinding(env),
            leaseName: env.CLOUDPLANE_LEASE_NAME || 'cloudplane-operator',
            identity: env.POD_NAME || `${os.hostname()}-${process.pid}`,
            leaseDurationMs: int(env, 'CLOUDPLANE_LEASE_DURATION_SECONDS', 15, 2, 300) * 1000,
            jobImagePullTimeoutMs: int(env, 'CLOUDPLANE_JOB_IMAGE_PULL_TIMEOUT_SECONDS', 300, 1) * 1000,
            adoptionGraceMs: int(env, 'CLOUDPLANE_ADOPTION_GRACE_SECONDS', 5, 1, 3600) * 1000,
            serverImages: json(
              env,
              'CLOUDPLANE_SERVER_IMAGES',
              ServerImageCatalogSchema,
              DEFAULT_SERVER_IMAGES,
              '{"ubuntu-24.04":{"image":"docker.io/library/ubuntu:24.04","command":["sleep","infinity"]}}',
            ),
            serverPlans: serverPlans(env),
            serverStartTimeoutMs: int(env, 'CLOUDPLANE_SERVER_START_TIMEOUT_SECONDS', 300, 1) * 1000,
            haproxy: {
              image: env.CLOUDPLANE_HAPROXY_IMAGE || 'docker.io/library/haproxy:2.6',
              replicas: int(env, 'CLOUDPLANE_HAPROXY_REPLICAS', 2, 1, 100),
              drainTimeoutMs: int(env, 'CLOUDPLANE_HAPROXY_DRAIN_TIMEOUT_SECONDS', 60, 0, 86_400) * 1000,
              checkIntervalMs: int(env, 'CLOUDPLANE_HAPROXY_CHECK_INTERVAL_MS', 2000, 100, 3_600_000),
              statsPort: int(env, 'CLOUDPLANE_HAPROXY_STATS_PORT', 8404, 1, 65535),
              statsTimeoutMs: int(env, 'CLOUDPLANE_HAPROXY_STATS_TIMEOUT_MS', 2000, 1, 60_000),
              progressDeadlineSeconds: int(env, 'CLOUDPLANE_HAPROXY_PROGRESS_DEADLINE_SECONDS', 600, 1),
            },
            fileShareStorageClass: objectNameSetting(env, 'CLOUDPLANE_FILE_SHARE_STORAGE_CLASS'),
            databases: {
              image: env.CLOUDPLANE_POSTGRES_IMAGE || 'docker.io/library/postgres:<major>',
              storageClass: objectNameSetting(env, 'CLOUDPLANE_DATABASE_STORAGE_CLASS') ?? null,
              cnpgImage: env.CLOUDPLANE_CNPG_IMAGE || 'ghcr.io/cloudnative-pg/postgresql:<major>',
            },
            kubernetesClusters: kubernetesClusterSettings(env),
            vpnGateways: {
              image: env.CLOUDPLANE_VPN_AGENT_IMAGE || 'ghcr.io/cloudplane/cloudplane:latest',
              statusTimeoutMs: int(env, 'CLOUDPLANE_VPN_AGENT_STATUS_TIMEOUT_MS', 2000, 1, 60_000),
              progressDeadlineSeconds: int(env, 'CLOUDPLANE_VPN_AGENT_PROGRESS_DEADLINE_SECONDS', 600, 1),
            },
          }
        : undefined,
    nats: natsServers.length
      ? {
          servers: natsServers,
          stream: env.CLOUDPLANE_NATS_STREAM || 'CLOUDPLANE_EVENTS',
          subjectPrefix: env.CLOUDPLANE_NATS_SUBJECT_PREFIX || 'cloudplane.events',
          duplicateWindowMs,
          maxAgeMs: eventRetentionMs,
          countsBucket: env.CLOUDPLANE_NATS_COUNTS_BUCKET || 'CLOUDPLANE_COUNTS',
        }
      : undefined,
  };
}

/** What the VPN agent (`cloudplane vpn-agent`) reads from the environment; its flags say the rest. */
export interface VpnAgentSettings {
  logLevel: string;
  /** The userspace WireGuard used when the kernel has no WireGuard module. */
  wireguardGo: string;
  /** A WireGuard peer counts as up while its latest handshake is younger than this. */
  handshakeWindowMs: number;
}

export function loadVpnAgentSettings(env: Env = process.env): VpnAgentSettings {
  return {
    logLevel: env.CLOUDPLANE_LOG_LEVEL || 'info',
    wireguardGo: env.CLOUDPLANE_WIREGUARD_GO || 'wireguard-go',
    // 180 s: WireGuard's own REJECT_AFTER_TIME. Shorter tells a dead peer sooner but, below
    // about 130 s, calls an idle yet healthy tunnel down between its 2-minute re-handshakes.
    handshakeWindowMs: int(env, 'CLOUDPLANE_VPN_HANDSHAKE_WINDOW_SECONDS', 180, 1) * 1000,
  };
}
