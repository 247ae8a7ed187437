/**
 * The simulated driver of each family: what a family adds to the shared simulation of
 * provisioning, configuration and release (driver.ts) — its outputs, and the state it
 * observes: a server's power, a load balancer's backend health checks, a tunnel's
 * traffic.
 */
import { createHash } from 'node:crypto';
import type { Managed, Step } from '../types';
import type { ServerDesired, ServerObserved, ServerOutputs, PowerState } from '../server';
import type { BackendHealth, LoadBalancerDesired, LoadBalancerDriver, LoadBalancerOutputs, LoadBalancerTraffic } from '../load-balancer';
import type { TunnelStats, VpnGatewayDesired, VpnGatewayOutputs } from '../vpn-gateway';
import type { BucketOutputs, FileShareOutputs } from '../storage';
import type { BucketSpec, FileShareSpec } from '../../resources/storage';
import type { DatabaseDesired, DatabaseDriver, DatabaseObserved, DatabaseOutputs } from '../database';
import type { BackupDriver } from '../backup';
import { SimulatedBackupDriver } from './backups';
import { ADMIN_USER, DEFAULT_DATABASE, PG_VERSIONS } from '../../resources/database';
import type { KubernetesClusterDesired, KubernetesClusterObserved, KubernetesClusterOutputs } from '../kubernetes-cluster';
import { NEWEST_KUBERNETES_VERSION } from '../../resources/kubernetes-cluster';
import { draw, Simulation } from './simulation';
import { FamilyState, SimulatedDriver, SimulatedRecord, simulatedRecordOf } from './driver';
import { asStored } from '../../resources/family';
import { nowIso } from '../../lib/time';

/** How often a simulated health check gives a new answer. */
const HEALTH_CHECK_WINDOW_MS = 30_000;
/** How often a load balancer with backends is looked at again. */
const BACKEND_POLL_MS = 10_000;
const HANDSHAKE_INTERVAL_MS = 120_000;
/** How often an active gateway's counters are looked at again. */
const TUNNEL_POLL_MS = 30_000;

/** How many base delays a simulated cluster waits before asking again for a change the provider refused. */
const REFUSED_RETRY_DELAYS = 20;

const failedMove = (operation: string, reason: string) => `${operation.replace(/_/g, ' ')} failed: ${reason}`;

export class SimulatedServerDriver extends SimulatedDriver<ServerDesired, ServerOutputs, ServerObserved> {
  constructor(sim: Simulation) {
    super('server', sim);
  }

  protected configOf({ name, region, plan, image }: ServerDesired): unknown {
    return { name, region, plan, image };
  }

  protected outputsOf(resource: Managed<ServerDesired>): ServerOutputs {
    return { ipv4: this.sim.allocateAddress(resource.id) };
  }

  /** One move at a time: power first, then reboots, each once the one before has ended. */
  protected override async plan(resource: Managed<ServerDesired>, record: SimulatedRecord): Promise<SimulatedRecord> {
    const { desired } = resource;
    const power = this.powerOf(resource, record);
    if (power.moving) return record;
    const requests = asStored(desired).reboot_requests ?? 0;
    if (power.state !== desired.power_state)
      return {
        ...record,
        power: { ...(await this.start(resource, desired.power_state === 'off' ? 'power_off' : 'power_on')), state: desired.power_state, requests },
      };
    if (power.state === 'on' && this.rebootsDone(resource, record) < requests && !this.rebootPending(resource, record)) {
      return { ...record, reboot: { ...(await this.start(resource, 'reboot')), requests } };
    }
    return record;
  }

  protected stateOf(resource: Managed<ServerDesired>, record: SimulatedRecord, ready: boolean): FamilyState<ServerObserved> {
    const { desired } = resource;
    const reboots_done = this.rebootsDone(resource, record);
    if (!ready) return { observed: { power: 'starting', reboots_done } };
    const power = this.powerOf(resource, record);
    if (power.failure) return { observed: { power: power.state, reboots_done }, failure: power.failure };
    if (power.moving)
      return { observed: { power: power.state === 'off' ? 'stopping' : 'starting', reboots_done }, upToDate: false, pollAfterMs: power.remainingMs };
    if (record.reboot) {
      const reboot = this.progressOf(resource, 'reboot', record.reboot);
      if (reboot.state === 'failed') return { observed: { power: 'on', reboots_done }, failure: failedMove('reboot', reboot.reason) };
      if (reboot.state === 'pending') return { observed: { power: 'rebooting', reboots_done }, upToDate: false, pollAfterMs: reboot.remainingMs };
    }
    const settled: PowerState = power.state;
    const upToDate = settled === desired.power_state && (settled === 'off' || reboots_done >= (asStored(desired).reboot_requests ?? 0));
    return { observed: { power: settled, reboots_done }, upToDate };
  }

  private powerOf(resource: Managed<ServerDesired>, record: SimulatedRecord): { state: 'on' | 'off'; moving: boolean; remainingMs?: number; failure?: string } {
    const move = record.power;
    if (!move) return { state: 'on', moving: false };
    const operation = move.state === 'off' ? 'power_off' : 'power_on';
    const progress = this.progressOf(resource, operation, move);
    if (progress.state === 'pending') return { state: move.state, moving: true, remainingMs: progress.remainingMs };
    if (progress.state === 'failed') return { state: move.state, moving: false, failure: failedMove(operation, progress.reason) };
    return { state: move.state, moving: false };
  }

  private rebootPending(resource: Managed<ServerDesired>, record: SimulatedRecord): boolean {
    return record.reboot !== undefined && this.progressOf(resource, 'reboot', record.reboot).state === 'pending';
  }

  /** A finished reboot carries out the requests it was started for; a finished stop or start settles those before it. */
  private rebootsDone(resource: Managed<ServerDesired>, record: SimulatedRecord): number {
    let done = 0;
    if (record.reboot && this.progressOf(resource, 'reboot', record.reboot).state === 'succeeded') done = record.reboot.requests;
    if (record.power) {
      const operation = record.power.state === 'off' ? 'power_off' : 'power_on';
      if (this.progressOf(resource, operation, record.power).state === 'succeeded') done = Math.max(done, record.power.requests);
    }
    return done;
  }
}

export class SimulatedLoadBalancerDriver extends SimulatedDriver<LoadBalancerDesired, LoadBalancerOutputs, BackendHealth[]> implements LoadBalancerDriver {
  constructor(sim: Simulation) {
    super('load_balancer', sim);
  }

  /** Backends change without a configuration change: the simulated data plane takes them at once. */
  protected configOf({ backends: _backends, ...config }: LoadBalancerDesired): unknown {
    return config;
  }

  protected outputsOf(resource: Managed<LoadBalancerDesired>): LoadBalancerOutputs {
    return { ipv4: this.sim.allocateAddress(resource.id) };
  }

  /** A backend passes its health check while its server has an address, save a simulated failure (CLOUDPLANE_SIM_FAILURES backend=...). */
  protected stateOf(resource: Managed<LoadBalancerDesired>, _record: SimulatedRecord, ready: boolean): FamilyState<BackendHealth[]> {
    if (!ready) return { observed: [] };
    const window = Math.floor(Date.now() / HEALTH_CHECK_WINDOW_MS);
    const failureRate = this.sim.failureRate('backend');
    const observed = resource.desired.backends
      .filter((b) => !b.draining)
      .map((b) => ({
        server_id: b.server_id,
        port: b.port,
        up: b.address !== null && draw('backend', resource.id, b.server_id, b.port, window) >= failureRate,
      }));
    return { observed, pollAfterMs: observed.length > 0 ? BACKEND_POLL_MS : undefined };
  }

  /**
   * No traffic passes a simulated load balancer (it has no data plane, and its servers none
   * to answer): every counter is 0 and no process is summed. What it does have is its
   * backends' simulated health, as observe gives it.
   */
  async traffic(resource: Managed<LoadBalancerDesired>): Promise<LoadBalancerTraffic> {
    const observation = await this.observe(resource);
    const up = new Map((observation.exists ? observation.observed : []).map((h) => [`${h.server_id}:${h.port}`, h.up]));
    const seen = new Set<string>();
    const backends = resource.desired.backends.flatMap((b) => {
      const key = `${b.server_id}:${b.port}`;
      if (seen.has(key)) return [];
      seen.add(key);
      return [{ server_id: b.server_id, port: b.port, up: up.get(key) ?? false, sessions_total: 0, bytes_in: 0, bytes_out: 0, current_sessions: 0 }];
    });
    return { sessions_total: 0, bytes_in: 0, bytes_out: 0, current_sessions: 0, instances: 0, observed_at: nowIso(), backends };
  }
}

export class SimulatedVpnGatewayDriver extends SimulatedDriver<VpnGatewayDesired, VpnGatewayOutputs, TunnelStats> {
  constructor(sim: Simulation) {
    super('vpn_gateway', sim);
  }

  /** The key itself stays out of the configuration (its hash is recorded): psk_version marks a rotation. */
  protected configOf({ pre_shared_key: _key, ...config }: VpnGatewayDesired): unknown {
    return config;
  }

  protected outputsOf(resource: Managed<VpnGatewayDesired>): VpnGatewayOutputs {
    return {
      local_ip: this.sim.allocateAddress(resource.id),
      public_key: resource.desired.tunnel_type === 'wireguard' ? createHash('sha256').update(`wg-public/${resource.id}`).digest('base64') : null,
    };
  }

  /** Traffic of a few kB/s to some hundred kB/s per gateway, steady so counters only grow, from the moment it became active. */
  protected stateOf(resource: Managed<VpnGatewayDesired>, record: SimulatedRecord, ready: boolean): FamilyState<TunnelStats> {
    if (!ready) return { observed: { tunnel_status: 'down', bytes_sent: 0, bytes_received: 0, last_handshake: null } };
    const now = Date.now();
    const since = this.sim.endOf(this.family, resource.id, { name: 'provision', started_at: record.provision.started_at });
    const elapsedS = Math.max(0, (now - since) / 1000);
    const down = draw('tunnel', resource.id, Math.floor(now / 60_000)) < this.sim.failureRate('tunnel');
    const sendRate = 2_000 + Math.floor(draw('send', resource.id) * 200_000);
    const receiveRate = 2_000 + Math.floor(draw('receive', resource.id) * 200_000);
    const handshakes = Math.max(0, Math.floor((now - since) / HANDSHAKE_INTERVAL_MS));
    return {
      observed: {
        tunnel_status: down ? 'down' : 'up',
        bytes_sent: Math.floor(elapsedS * sendRate),
        bytes_received: Math.floor(elapsedS * receiveRate),
        last_handshake: new Date(since + handshakes * HANDSHAKE_INTERVAL_MS).toISOString(),
      },
      pollAfterMs: TUNNEL_POLL_MS,
    };
  }
}

/** A family that observes nothing beyond existing and being ready: its whole spec is its configuration. */
class SimulatedPlainDriver<Spec, Outputs> extends SimulatedDriver<Spec, Outputs, null> {
  constructor(
    family: string,
    sim: Simulation,
    private readonly outputs: (resource: Managed<Spec>) => Outputs,
  ) {
    super(family, sim);
  }

  protected configOf(desired: Spec): unknown {
    return desired;
  }

  protected outputsOf(resource: Managed<Spec>): Outputs {
    return this.outputs(resource);
  }

  protected stateOf(): FamilyState<null> {
    return { observed: null };
  }
}

export const simulatedBucketDriver = (sim: Simulation) =>
  new SimulatedPlainDriver<BucketSpec, BucketOutputs>('bucket', sim, ({ desired }) => ({
    endpoint: `https://${desired.name}.${desired.region}.objects.cloudplane.example`,
    s3_bucket: null,
    data_events: false,
  }));

export const simulatedFileShareDriver = (sim: Simulation) =>
  new SimulatedPlainDriver<FileShareSpec, FileShareOutputs>('file_share', sim, ({ id }) => ({
    mount_target: `${sim.allocateAddress(id, '10.200')}:/exports/${id}`,
  }));

/**
 * A simulated PostgreSQL: an address of its own, the newest major unless one is asked for,
 * and every standby following. Its configuration is the spec with the password's version,
 * never the password, so nothing of the password is kept in what it records.
 */
export class SimulatedDatabaseDriver extends SimulatedDriver<DatabaseDesired, DatabaseOutputs, DatabaseObserved> implements DatabaseDriver {
  readonly backups: BackupDriver;

  constructor(sim: Simulation) {
    super('database', sim);
    this.backups = new SimulatedBackupDriver(sim);
  }

  /** Everything but the passwords: a password version says a reset is due. */
  protected configOf({ password: _password, users, ...config }: DatabaseDesired): unknown {
    return { ...config, users: users.map(({ name, password_version }) => ({ name, password_version })) };
  }

  protected outputsOf({ id, desired }: Managed<DatabaseDesired>): DatabaseOutputs {
    const host = `${id.replace(/_/g, '-')}.db.${desired.region}.cloudplane.example`;
    return {
      connection: { host, port: 25060, user: ADMIN_USER, database: DEFAULT_DATABASE, ssl_mode: 'require' },
      version: desired.version ?? PG_VERSIONS[PG_VERSIONS.length - 1],
    };
  }

  protected stateOf({ desired }: Managed<DatabaseDesired>, _record: SimulatedRecord, ready: boolean): FamilyState<DatabaseObserved> {
    return { observed: { standby_nodes: ready ? desired.num_nodes - 1 : 0 } };
  }
}

/**
 * A simulated managed Kubernetes: an API server at a name of its own under
 * cloudplane.example, the minor asked for (else the newest), and every pool's nodes ready
 * once provisioned. A configuration change (an upgrade, a pool's count, labels or taints,
 * a new token) is one simulated operation, which CLOUDPLANE_SIM_FAILURES can make the
 * provider refuse. Its configuration is the spec with the token's version, never the
 * token, so nothing of the token is kept in what it records.
 */
export class SimulatedKubernetesClusterDriver extends SimulatedDriver<KubernetesClusterDesired, KubernetesClusterOutputs, KubernetesClusterObserved> {
  constructor(sim: Simulation) {
    super('kubernetes_cluster', sim);
  }

  /**
   * A change the provider refused is asked for again only after a while (twenty of the
   * family's base delays), as a cloud's API is not retried at once: meanwhile the refusal is
   * what observe sees, and the cluster shows it (degraded).
   */
  override async update(resource: Managed<KubernetesClusterDesired>): Promise<Step> {
    const record = simulatedRecordOf(resource.external);
    if (record?.configure && this.configProgress(resource, record).rejected !== null) {
      const retryAt =
        this.sim.endOf(this.family, resource.id, { name: 'configure', ...record.configure }) + REFUSED_RETRY_DELAYS * this.sim.baseDelayMs(this.family);
      if (Date.now() < retryAt) return { external: record, pollAfterMs: retryAt - Date.now() };
    }
    return super.update(resource);
  }

  protected configOf({ token: _token, ...config }: KubernetesClusterDesired): unknown {
    return config;
  }

  protected outputsOf({ id, desired }: Managed<KubernetesClusterDesired>): KubernetesClusterOutputs {
    return { endpoint: `https://${id.replace(/_/g, '-')}.k8s.${desired.region}.cloudplane.example`, certificate_authority: null };
  }

  protected stateOf(resource: Managed<KubernetesClusterDesired>, record: SimulatedRecord, ready: boolean): FamilyState<KubernetesClusterObserved> {
    const { desired } = resource;
    const config = this.configProgress(resource, record);
    return {
      observed: {
        applying: ready && !config.upToDate && config.rejected === null,
        refused: ready ? config.rejected : null,
        version: desired.version ?? NEWEST_KUBERNETES_VERSION,
        node_pools: desired.node_pools.map((pool) => ({ name: pool.name, ready_nodes: ready ? pool.count : 0 })),
      },
    };
  }
}
