/** Load balancers: HTTP, HTTPS and TCP, with attached servers as backends. */
import { Static, Type } from '@sinclair/typebox';
import { domainError, fieldInvalid, validationFailed } from '../lib/errors';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
import { asStored } from './family';
import {
  baseRecordProperties,
  reconcileRecord,
  reconcileRecordProperties,
  baseStatusProperties,
  ExternalRecordSchema,
  IdOf,
  Region,
  ResourceName,
  strictObject,
  connectionSecretProperty,
  recordTimes,
  Timestamp,
} from './schema-kit';
import type { ExternalRecord } from './external-record';
import { REGIONAL_COLUMNS } from './presentation';

const STATES = ['creating', 'running', 'failed', 'deleted', 'destroyed'] as const;
const ALGORITHMS = ['round_robin', 'least_connections', 'ip_hash'];
const PROTOCOLS = ['http', 'https', 'tcp'];
const BACKEND_STATES = ['healthy', 'unhealthy', 'draining'];

export interface LoadBalancerSpec {
  name: string;
  region: string;
  algorithm: string;
  protocol: string;
  port: number;
  health_check_path: string;
  sticky_sessions: boolean;
  ssl_certificate_id: string | null;
  backends: BackendSpec[];
}

/**
 * A backend names its server by API id (`server_id`) or, in a manifest, by the Server
 * custom resource's metadata.name in the same namespace (`serverRef`), which Git can know
 * before any id exists. Exactly one of the two; the reconciler resolves the reference.
 */
export interface BackendSpec {
  server_id?: string;
  serverRef?: { name: string };
  port: number;
}

export interface ObservedBackend {
  server_id: string;
  /** The serverRef name this backend was resolved from; null for a backend given by id. */
  server_ref?: string | null;
  port: number;
  status: 'healthy' | 'unhealthy' | 'draining';
  /** For a draining backend: when it leaves the list. */
  drain_until: string | null;
}

export interface LoadBalancerStatus extends BaseStatus {
  ipv4: string | null;
  backends: ObservedBackend[];
  external?: ExternalRecord;
}

export type LoadBalancer = Resource<LoadBalancerSpec, LoadBalancerStatus>;

const Algorithm = Type.String({ enum: ALGORITHMS, description: 'Balancing algorithm: round_robin, least_connections or ip_hash.' });
const Protocol = Type.String({ enum: PROTOCOLS, description: 'Frontend protocol: http, https or tcp.' });
const Port = (description: string) => Type.Integer({ minimum: 1, maximum: 65535, description });
const HealthCheckPath = Type.String({ minLength: 1, maxLength: 255, pattern: '^/', description: 'HTTP path the health check requests, starting with /.' });
const Sticky = Type.Boolean({ description: 'Cookie-based session stickiness.' });
const Certificate = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
  description:
    "The certificate for HTTPS termination, required when protocol is https: the name of a kubernetes.io/tls Secret (tls.crt, tls.key) in the team's namespace in cluster mode (a DNS subdomain name); the simulated provider takes any such name.",
});

/** A Kubernetes object name (RFC 1123 subdomain). */
const ObjectName = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
  description: 'metadata.name of a Server custom resource in the same namespace.',
});
export const EXACTLY_ONE_SERVER = 'exactly one of server_id and serverRef';

const BackendRef = Type.Object(
  {
    server_id: Type.Optional(IdOf('svr', 'The attached server, by API id; or give serverRef.')),
    serverRef: Type.Optional(
      strictObject({ name: ObjectName }, 'The attached server, by the name of its Server custom resource in this namespace; or give server_id.'),
    ),
    port: Port('Backend port on the server.'),
  },
  {
    additionalProperties: false,
    // Refused by the API server on kubectl apply, before the operator sees it; the reconciler checks again.
    'x-kubernetes-validations': [{ rule: 'has(self.server_id) != has(self.serverRef)', message: EXACTLY_ONE_SERVER }],
  },
);

const LoadBalancerCreate = strictObject({
  name: ResourceName(),
  region: Region(),
  algorithm: Type.Optional(Algorithm),
  protocol: Type.Optional(Protocol),
  port: Type.Optional(Port('Frontend port; default 80 for http, 443 for https, required for tcp.')),
  health_check_path: Type.Optional(HealthCheckPath),
  sticky_sessions: Type.Optional(Sticky),
  ssl_certificate_id: Type.Optional(Certificate),
});

/** A PATCH body, as validated against the update schema. */
const LoadBalancerUpdate = strictObject({
  algorithm: Type.Optional(Algorithm),
  port: Type.Optional(Port('Frontend port.')),
  protocol: Type.Optional(Protocol),
  health_check_path: Type.Optional(HealthCheckPath),
  sticky_sessions: Type.Optional(Sticky),
  ssl_certificate_id: Type.Optional(Certificate),
});

/** The spec backends that break the rule (both or neither of server_id and serverRef), by index. */
export function backendsNamingNotOneServer(backends: readonly BackendSpec[]): number[] {
  return backends.flatMap((b, i) => ((b.server_id === undefined) === (b.serverRef === undefined) ? [i] : []));
}

// tcp has no default port.
const DEFAULT_PORTS: Record<string, number | undefined> = { http: 80, https: 443 };

/** docs/api.md: https needs a certificate; http on 443 and https on 80 are invalid pairs. */
function assertProtocolPort(protocol: string, port: number, certificate: string | null): void {
  if ((protocol === 'http' && port === 443) || (protocol === 'https' && port === 80)) {
    throw domainError('invalid_protocol_port', `Protocol ${protocol} cannot listen on port ${port}.`, 'port');
  }
  if (protocol === 'https' && !certificate) {
    throw fieldInvalid('ssl_certificate_id', 'is required when protocol is https');
  }
}

/** A traffic counter: int64, as the bytes through a load balancer pass 2^31 (2 GiB) soon enough and a client reading an int32 would fail on them. */
const Counter = (description: string) => Type.Integer({ minimum: 0, format: 'int64', description });
const trafficProperties = (what: string) => ({
  sessions_total: Counter(`Sessions (connections) ${what} since its data-plane processes started.`),
  bytes_in: Counter(`Bytes received from the clients ${what} since its data-plane processes started.`),
  bytes_out: Counter(`Bytes sent to the clients ${what} since its data-plane processes started.`),
  current_sessions: Counter(`Sessions ${what} open now.`),
});

/** GET /load-balancers/{id}/stats (api/routes/load-balancers.ts): the traffic, read live from the data plane. */
export const loadBalancerStatsSchema = strictObject({
  ...trafficProperties('through the load balancer'),
  instances: Type.Integer({
    minimum: 0,
    description: 'How many data-plane processes (HAProxy Pods) the counters are summed over; 0 when none serves (and always on the simulated provider).',
  }),
  observed_at: Timestamp('When the counters were read.'),
  backends: Type.Array(
    strictObject({
      server_id: Type.String({ description: 'The backend server.' }),
      port: Type.Integer({ description: 'Backend port.' }),
      up: Type.Boolean({ description: "Whether the data plane's own health check of it passes (on every process)." }),
      ...trafficProperties('to this backend'),
    }),
    { description: 'Each backend the load balancer has, a draining one included.' },
  ),
});

/** Backends are attached and detached by actions, its traffic read (api/routes/load-balancers.ts). */
const LOAD_BALANCER_COMMANDS: readonly FamilyCommand[] = [
  {
    words: ['attach'],
    summary: 'Attach a server as a backend',
    method: 'POST',
    path: '/{id}/attach',
    versioned: true,
    dryRun: true,
    body: Type.Object({
      server_id: Type.String({ minLength: 1, description: 'The server to attach (svr_...).' }),
      port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Backend port; defaults to the frontend port.' })),
    }),
  },
  {
    words: ['detach'],
    summary: 'Detach a backend server',
    method: 'POST',
    path: '/{id}/detach',
    versioned: true,
    dryRun: true,
    body: Type.Object({ server_id: Type.String({ minLength: 1, description: 'The attached server to detach.' }) }),
  },
  {
    words: ['stats'],
    summary: 'Live traffic counters',
    method: 'GET',
    path: '/{id}/stats',
    columns: ['sessions_total', 'current_sessions', 'bytes_in', 'bytes_out', 'instances', 'observed_at'],
  },
];

export const loadBalancerFamily: FamilyDefinition<LoadBalancerSpec, LoadBalancerStatus> = {
  name: 'load_balancer',
  quota: { default: 1000 },
  title: 'load balancer',
  kind: 'LoadBalancer',
  plural: 'loadbalancers',
  shortNames: ['cplb'],
  path: 'load-balancers',
  idPrefix: 'lb',
  states: STATES,
  readyStates: ['running'],
  providerBacked: true,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: {
    updated: 'had a new configuration applied (a PATCH, or an edit of its custom resource).',
    backend_attached: 'got a server attached as a backend.',
    backend_detached: 'had a backend detached (it drains for the grace period).',
  },
  actionFields: ['backends'],
  description: 'A load balancer distributing HTTP, HTTPS or TCP traffic over attached servers.',
  schemas: {
    create: LoadBalancerCreate,
    update: LoadBalancerUpdate,
    spec: strictObject({
      name: ResourceName(),
      region: Region(),
      algorithm: Algorithm,
      protocol: Protocol,
      port: Port('Frontend port.'),
      health_check_path: HealthCheckPath,
      sticky_sessions: Sticky,
      ssl_certificate_id: Type.Union([Certificate, Type.Null()]),
      backends: Type.Array(BackendRef, { description: 'Servers attached as backends.' }),
      ...connectionSecretProperty(),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      ipv4: Type.Union([Type.String(), Type.Null()], { description: 'Address allocated by the provider.' }),
      backends: Type.Array(
        strictObject({
          server_id: Type.String(),
          server_ref: Type.Optional(Type.Union([Type.String(), Type.Null()])),
          port: Type.Integer(),
          status: Type.String({ enum: BACKEND_STATES }),
          drain_until: Type.Union([Type.String(), Type.Null()]),
        }),
        { description: 'Backends as last observed, with health.' },
      ),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('lb', STATES),
      ...reconcileRecordProperties(),
      name: ResourceName(),
      region: Region(),
      algorithm: Algorithm,
      protocol: Protocol,
      port: Port('Frontend port.'),
      ipv4: Type.Union([Type.String(), Type.Null()], { description: 'IPv4 address; null until the load balancer is running.' }),
      health_check_path: HealthCheckPath,
      sticky_sessions: Sticky,
      ssl_certificate_id: Type.Union([Type.String(), Type.Null()], { description: 'Certificate for HTTPS termination, or null.' }),
      backends: Type.Array(
        strictObject({
          server_id: Type.Union([Type.String(), Type.Null()], {
            description: 'Attached server; for a serverRef, the id it resolved to, null while it names no server.',
          }),
          server_ref: Type.Union([strictObject({ name: Type.String() }), Type.Null()], {
            description: 'The serverRef of a backend given by reference in a manifest; null for one given by id.',
          }),
          port: Type.Integer({ description: 'Backend port.' }),
          status: Type.String({ enum: BACKEND_STATES, description: 'healthy, unhealthy or draining.' }),
        }),
      ),
    }),
  },

  specFromCreate(body: Static<typeof LoadBalancerCreate> & Partial<Pick<LoadBalancerSpec, 'backends'>>, { config }) {
    assertRegionAvailable(config, body.region);
    // Only a manifest has backends here (a POST body cannot): adoption judges them too.
    const broken = backendsNamingNotOneServer(body.backends ?? []);
    if (broken.length > 0) throw validationFailed(broken.map((i) => ({ field: `backends[${i}]`, message: EXACTLY_ONE_SERVER })));
    const protocol = body.protocol ?? 'http';
    const port = body.port ?? DEFAULT_PORTS[protocol];
    if (port === undefined) throw fieldInvalid('port', 'is required when protocol is tcp');
    const certificate = body.ssl_certificate_id ?? null;
    assertProtocolPort(protocol, port, certificate);
    return {
      name: body.name,
      region: body.region,
      algorithm: body.algorithm ?? 'round_robin',
      protocol,
      port,
      health_check_path: body.health_check_path ?? '/health',
      sticky_sessions: body.sticky_sessions ?? false,
      ssl_certificate_id: certificate,
      backends: [],
    };
  },

  applyUpdate(spec, patch: Static<typeof LoadBalancerUpdate>) {
    const next = { ...spec, ...patch };
    if (patch.protocol !== undefined && patch.port === undefined) {
      // docs/api.md: the port is kept only if the new pair stays valid; else the protocol's default.
      const pairValid = !((next.protocol === 'http' && next.port === 443) || (next.protocol === 'https' && next.port === 80));
      if (!pairValid) next.port = DEFAULT_PORTS[next.protocol] ?? next.port;
    }
    assertProtocolPort(next.protocol, next.port, next.ssl_certificate_id);
    return next;
  },

  initialStatus: () => ({ ipv4: null, backends: [] }),

  nameOf: (spec) => spec.name,
  commands: LOAD_BALANCER_COMMANDS,
  connectionDetails: ({ spec, status }) =>
    status.ipv4 ? { address: status.ipv4, port: String(spec.port), protocol: spec.protocol, url: `${spec.protocol}://${status.ipv4}:${spec.port}` } : null,

  toRecord(lb) {
    const { spec, status, meta } = lb;
    const observed = asStored(status).backends ?? [];
    const seenFor = (b: BackendSpec) => observed.find((o) => (b.serverRef ? o.server_ref === b.serverRef.name : o.server_id === b.server_id && !o.server_ref));
    const attached = spec.backends.map((b) => ({ b, seen: seenFor(b) }));
    const shown = new Set(attached.map(({ seen }) => seen));
    const backends = [
      ...attached.map(({ b, seen }) => ({
        server_id: b.server_id ?? seen?.server_id ?? null,
        server_ref: b.serverRef ? { name: b.serverRef.name } : null,
        port: b.port,
        status: seen && seen.status !== 'draining' ? seen.status : 'unhealthy',
      })),
      ...observed
        .filter((o) => !shown.has(o))
        .map((o) => ({ server_id: o.server_id, server_ref: o.server_ref ? { name: o.server_ref } : null, port: o.port, status: 'draining' })),
    ];
    return {
      id: meta.id,
      name: spec.name,
      status: status.status,
      status_reason: status.status_reason ?? null,
      ...reconcileRecord(status),
      region: spec.region,
      algorithm: spec.algorithm,
      protocol: spec.protocol,
      port: spec.port,
      ipv4: status.ipv4 ?? null,
      health_check_path: spec.health_check_path,
      sticky_sessions: spec.sticky_sessions,
      ssl_certificate_id: spec.ssl_certificate_id ?? null,
      backends,
      ...recordTimes(meta, status),
    };
  },

  extraEvents(previous, next) {
    const live = (lb: LoadBalancer | undefined) => new Set((lb?.status.backends ?? []).filter((b) => b.status !== 'draining').map((b) => b.server_id));
    const before = live(previous);
    const after = live(next);
    const events: string[] = [];
    for (const id of after) if (!before.has(id)) events.push('backend_attached');
    for (const id of before) if (!after.has(id)) events.push('backend_detached');
    return events;
  },
  presentation: {
    columns: [
      ...REGIONAL_COLUMNS,
      { key: 'protocol', label: 'Protocol', secondary: true },
      { key: 'port', label: 'Port', secondary: true },
      { key: 'ipv4', label: 'IPv4', secondary: true },
      { key: 'backends', label: 'Backends', shownIn: 'cli' },
    ],
  },
};
