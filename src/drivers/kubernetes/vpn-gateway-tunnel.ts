/**
 * The cluster-mode VPN gateway driver: each gateway is the VPN agent (Cloudplane's own
 * image, `vpn-agent`) running WireGuard or strongSwan in one Pod of its team's namespace,
 * three objects built by vpn-gateway-manifests.ts (the agent's Secret, a Deployment, a
 * UDP Service of type LoadBalancer) and written by server-side apply.
 *
 * Order of making: the Service first, since its ingress address (given by MetalLB or a
 * cloud's controller) is the tunnel's `local_ip` and goes into the agent's configuration;
 * the Secret with the WireGuard key at once (the key is generated once and read back from
 * the Secret on every later pass, never recorded elsewhere); the configuration and the
 * Deployment once the address is there. A change (remote CIDR, a rotated pre-shared key,
 * the peer's public key) rewrites the configuration with a new version, which the agent
 * picks up from its mounted Secret without a restart.
 *
 * The gateway is ready when the Deployment is available, the Service has its address and
 * the agent's /status (read at the Pod IP, as the load balancer driver reads HAProxy's
 * stats) reports the configuration's version as applied. The tunnel's state and counters
 * come from the same /status. An agent that cannot be reached is a tunnel that is down,
 * not the API server failing: the driver's health does not count it.
 *
 * A configuration the agent refused (its /status carries an `error` and not the wanted
 * version) is not applied: observe says so in `rejected`, with the agent's reason, and the
 * gateway runs on as it was. An IPsec gateway whose pre-shared key is missing from the
 * store never gets a configuration with an empty key (see observe for failed or refused).
 *
 * Nothing secret leaves the Secret: what the driver records is where the objects are and
 * the configuration's version, and its log lines name the gateway, never the keys.
 */
import { isIPv4 } from 'node:net';
import type { KubeConfig, V1Deployment, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Value } from '@sinclair/typebox/value';
import { AgentStatus, AgentStatusSchema } from '../../vpn-agent/status-server';
import { redacted } from '../../lib/processes';
import type { TunnelStats, VpnGatewayDesired, VpnGatewayDriver, VpnGatewayOutputs } from '../vpn-gateway';
import type { DriverHealth, Managed, Observation, Step } from '../types';
import { AppliedObjects, holdsDesired, ObjectHeader } from './applied';
import {
  AGENT_STATUS_PORT,
  agentSecretName,
  CONFIG_KEY,
  DEFAULT_VPN_AGENT_SETTINGS,
  generateWireguardKey,
  missingPreSharedKey,
  podSelector,
  PRIVATE_KEY_KEY,
  VpnAgentDeploymentSettings,
  vpnGatewayObjects,
  wireguardPublicKey,
} from './vpn-gateway-manifests';
import { madeFor, Placement, placementOf } from './objects';
import { Changed, MadeWatchOptions, watchMade } from './made-watch';
import { isAvailable, isServing, podBaseUrl, selectorOf, stalledRollout } from './deployed-pods';
import { fieldOf, messageOf } from '../../lib/unknown-values';
import { known } from '../../lib/known';

export interface VpnGatewayTunnelDriverOptions extends MadeWatchOptions {
  kubeConfig: KubeConfig;
  /** The operator's own namespace: the system team's (see namespaceOfTeam). */
  systemNamespace: string;
  logger: Logger;
  /** The agent's image, resources, rollout deadline (defaults: DEFAULT_VPN_AGENT_SETTINGS). */
  agent?: Partial<VpnAgentDeploymentSettings>;
  /** Each call to the API server (default 10 s). */
  requestTimeoutMs?: number;
  /** Each read of an agent's /status (default 2 s). */
  statusTimeoutMs?: number;
  /** How soon to look again while something is under way (default 2 s). */
  progressPollMs?: number;
  /** How soon to look again at an active gateway, for its tunnel (default 10 s). */
  tunnelPollMs?: number;
}

const DEFAULT_STATUS_TIMEOUT_MS = 2_000;
const DEFAULT_PROGRESS_POLL_MS = 2_000;
const DEFAULT_TUNNEL_POLL_MS = 10_000;

const TUNNEL_DOWN: TunnelStats = { tunnel_status: 'down', bytes_sent: 0, bytes_received: 0, last_handshake: null };

interface Live {
  service: V1Service | null;
  deployment: V1Deployment | null;
  secret: V1Secret | null;
}

/** The three kinds, in the order they are deleted: the Service first, so the tunnel's traffic stops arriving before the agent goes. */
const KINDS = [
  { key: 'service', apiVersion: 'v1', kind: 'Service' },
  { key: 'deployment', apiVersion: 'apps/v1', kind: 'Deployment' },
  { key: 'secret', apiVersion: 'v1', kind: 'Secret' },
] as const;

export class VpnGatewayTunnelDriver implements VpnGatewayDriver {
  private readonly objects: AppliedObjects;
  private readonly settings: VpnAgentDeploymentSettings;
  private readonly progressPollMs: number;
  private readonly tunnelPollMs: number;

  constructor(private readonly o: VpnGatewayTunnelDriverOptions) {
    this.objects = new AppliedObjects(o.kubeConfig, o.requestTimeoutMs);
    this.settings = { ...DEFAULT_VPN_AGENT_SETTINGS, ...o.agent };
    this.progressPollMs = o.progressPollMs ?? DEFAULT_PROGRESS_POLL_MS;
    this.tunnelPollMs = o.tunnelPollMs ?? DEFAULT_TUNNEL_POLL_MS;
  }

  /** The three objects changed by others (deleted or edited by hand, the Service given its address) are looked at at once. */
  watchMade(changed: Changed): () => void {
    return watchMade(this.o, ['deployments', 'services', 'secrets'], changed);
  }

  async observe(resource: Managed<VpnGatewayDesired>): Promise<Observation<VpnGatewayOutputs, TunnelStats>> {
    const placement = this.placementOf(resource);
    const live = await this.readLive(placement);
    if (!live.service && !live.deployment && !live.secret) return { exists: false };
    const foreign = inTheWay(live, resource.id, placement);
    if (foreign) return { exists: true, upToDate: true, ready: false, outputs: null, observed: TUNNEL_DOWN, failure: foreign };

    const localIp = ingressIp(live.service);
    const privateKey = keptPrivateKey(live.secret);
    const wireguard = resource.desired.tunnel_type === 'wireguard';
    const wanted = vpnGatewayObjects(resource, placement, this.settings, localIp, privateKey);
    const keyMissing = missingPreSharedKey(resource.desired);
    const upToDate =
      !keyMissing &&
      wanted.deployment !== null &&
      (!wireguard || privateKey !== null) &&
      holdsDesired(live.secret, wanted.secret) &&
      holdsDesired(live.deployment, wanted.deployment) &&
      holdsDesired(live.service, wanted.service);

    const deployment = live.deployment;
    const available = isAvailable(deployment);
    const agent = available ? await this.agentStatus(resource, placement.namespace) : null;
    // A gateway whose key went missing runs on with the configuration its Secret still holds.
    const runningVersion = wanted.config?.version ?? (keyMissing ? keptConfigVersion(live.secret) : null);
    const applied = agent !== null && runningVersion !== null && agent.applied_version === runningVersion;
    const ready = available && localIp !== null && applied;
    const stalled = stalledRollout(deployment, "the VPN agent's Deployment");
    // Without its key a gateway never given a configuration can never have a tunnel (and a creating one can be neither PATCHed nor deleted): it fails.
    // One that was given a configuration keeps its last key, and a new key (PATCH) brings it back: refused, not failed.
    const neverConfigured = keyMissing && keptConfigVersion(live.secret) === null;
    const refused = keyMissing ? MISSING_PRE_SHARED_KEY : agent && !applied ? agentRefusal(agent, [resource.desired.pre_shared_key, privateKey]) : null;
    return {
      exists: true,
      upToDate: upToDate && !refused,
      ready,
      outputs: { local_ip: localIp, public_key: wireguard && privateKey ? wireguardPublicKey(privateKey) : null },
      observed: agent ? tunnelOf(agent) : TUNNEL_DOWN,
      failure: neverConfigured ? NO_PRE_SHARED_KEY : stalled && !available ? stalled : null,
      rejected: neverConfigured ? null : (refused ?? (stalled && available ? stalled : null)),
      // Nothing comes of a missing key but a PATCH (whose write brings a pass anyway): looked at as seldom as a working tunnel.
      pollAfterMs: (ready && upToDate) || keyMissing ? this.tunnelPollMs : this.progressPollMs,
    };
  }

  async create(resource: Managed<VpnGatewayDesired>): Promise<Step> {
    return this.apply(resource);
  }

  async update(resource: Managed<VpnGatewayDesired>): Promise<Step> {
    return this.apply(resource);
  }

  async delete(resource: Managed<VpnGatewayDesired>): Promise<Step> {
    const placement = this.placementOf(resource);
    const live = await this.readLive(placement);
    for (const { key, apiVersion, kind } of KINDS) {
      // Only what was made for this gateway: someone else's object of the same name stays.
      const object = live[key];
      if (!object || !madeFor(object.metadata, resource.id)) continue;
      const name = known(object.metadata?.name, `the name of a live ${kind}`);
      if (await this.objects.delete({ apiVersion, kind, metadata: { name, namespace: placement.namespace } })) {
        this.o.logger.info({ id: resource.id, namespace: placement.namespace, name, kind }, 'VPN gateway object deleted');
      }
    }
    return { external: { ...placement }, pollAfterMs: this.progressPollMs };
  }

  health(): DriverHealth {
    return this.objects.outcomes.health();
  }

  /**
   * The Service first (its address is the configuration's local_ip), the Secret with the
   * key kept or made now, and the configuration and the Deployment once the address is there.
   */
  private async apply(resource: Managed<VpnGatewayDesired>): Promise<Step> {
    const placement = this.placementOf(resource);
    const step: Step = { external: { ...placement }, pollAfterMs: this.progressPollMs };
    const live = await this.readLive(placement);
    if (inTheWay(live, resource.id, placement)) return step; // observe reports it; nothing of someone else's is touched
    const localIp = ingressIp(live.service);
    const privateKey = resource.desired.tunnel_type === 'wireguard' ? (keptPrivateKey(live.secret) ?? generateWireguardKey()) : null;
    const wanted = vpnGatewayObjects(resource, placement, this.settings, localIp, privateKey);
    await this.objects.apply(wanted.service);
    if (missingPreSharedKey(resource.desired)) {
      // Applying the Secret without a configuration would take the running one away: the agent keeps its last good key.
      this.o.logger.warn({ id: resource.id, ...placement }, "VPN gateway's pre-shared key is missing from the store: its configuration is left as it was");
      return { ...step, pollAfterMs: this.tunnelPollMs };
    }
    await this.objects.apply(wanted.secret);
    if (!wanted.deployment || !wanted.config) {
      this.o.logger.info({ id: resource.id, ...placement }, 'VPN gateway waits for its Service address before its configuration');
      return step;
    }
    await this.objects.apply(wanted.deployment);
    this.o.logger.info({ id: resource.id, ...placement, configVersion: wanted.config.version }, 'VPN gateway applied');
    return { ...step, external: { ...placement, config_version: wanted.config.version } };
  }

  private async readLive(placement: Placement): Promise<Live> {
    const header = (apiVersion: string, kind: string, name: string): ObjectHeader => ({ apiVersion, kind, metadata: { name, namespace: placement.namespace } });
    const names = { service: placement.name, deployment: placement.name, secret: agentSecretName(placement) };
    // Settled, not raced: each read's outcome counts into the health before the caller goes on.
    const reads = await Promise.allSettled(KINDS.map(({ key, apiVersion, kind }) => this.objects.read(header(apiVersion, kind, names[key]))));
    const [service, deployment, secret] = reads.map((read) => {
      if (read.status === 'rejected') throw read.reason;
      return read.value;
    });
    return { service: service, deployment: deployment, secret: secret };
  }

  /** The agent's /status from the gateway's serving Pod, or null when no Pod answers. */
  private async agentStatus(resource: Managed<VpnGatewayDesired>, namespace: string): Promise<AgentStatus | null> {
    const pods = (await this.objects.list<V1Pod>('v1', 'Pod', namespace, selectorOf(podSelector(resource.id)))).filter(isServing);
    for (const pod of pods) {
      const status = await this.readAgent(resource, pod);
      if (status) return status;
    }
    return null;
  }

  private async readAgent(resource: Managed<VpnGatewayDesired>, pod: V1Pod): Promise<AgentStatus | null> {
    const url = `${podBaseUrl(pod, AGENT_STATUS_PORT)}/status`;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(this.o.statusTimeoutMs ?? DEFAULT_STATUS_TIMEOUT_MS) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const status = agentStatusOf(await response.json());
      if (!status) throw new Error("an answer that is not the agent's status");
      return status;
    } catch (err) {
      this.o.logger.debug({ id: resource.id, pod: pod.metadata?.name, err: messageOf(err) }, "could not read a VPN agent's status");
      return null;
    }
  }

  private placementOf(resource: Managed<VpnGatewayDesired>): Placement {
    return placementOf(resource, this.o.systemNamespace);
  }
}

/** The agent's answer, checked against its schema (it comes over the network); the handshake time normalised. */
function agentStatusOf(body: unknown): AgentStatus | null {
  if (!Value.Check(AgentStatusSchema, body)) return null;
  const handshake = body.last_handshake !== null && !Number.isNaN(Date.parse(body.last_handshake)) ? new Date(body.last_handshake).toISOString() : null;
  return { ...body, last_handshake: handshake };
}

/** What observe says of an IPsec gateway whose pre-shared key the store no longer holds: a new key (PATCH) brings it back. */
export const MISSING_PRE_SHARED_KEY = 'the pre-shared key is missing from the store; set a new one with PATCH pre_shared_key';
/** The failure of an IPsec gateway that never had a configuration and has no key to make one with. */
export const NO_PRE_SHARED_KEY = 'the pre-shared key is missing from the store, so the gateway cannot be configured';

/** The longest part of the agent's error a status reason repeats. */
const AGENT_ERROR_MAX_CHARS = 300;

/**
 * Why the agent did not apply the configuration it was given, from its /status, or null
 * while it reports no error (the new file not yet there: the kubelet syncs Secret volumes
 * lazily). The agent's errors never repeat a key (parseAgentConfig names fields, the tools'
 * errors are redacted), but the text goes into a status reason: the keys the driver knows
 * are blanked out here too, and the text is kept to one bounded line.
 */
export function agentRefusal(agent: Pick<AgentStatus, 'error'>, secrets: ReadonlyArray<string | null>): string | null {
  if (!agent.error) return null;
  // As the agent itself blanks them: as they are and in hex (swanctl may print a key so).
  const forms = secrets.filter((s): s is string => Boolean(s)).flatMap((s) => [s, Buffer.from(s, 'utf8').toString('hex')]);
  const oneLine = redacted(agent.error, forms)
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim();
  const bounded = oneLine.length > AGENT_ERROR_MAX_CHARS ? `${oneLine.slice(0, AGENT_ERROR_MAX_CHARS - 1)}…` : oneLine;
  return `the VPN agent did not apply it: ${bounded.replace(/\.$/, '')}`;
}

const tunnelOf = ({ tunnel_status, bytes_sent, bytes_received, last_handshake }: AgentStatus): TunnelStats => ({
  tunnel_status,
  bytes_sent,
  bytes_received,
  last_handshake,
});

/** The WireGuard key kept in the agent's Secret, or null. */
function keptPrivateKey(secret: V1Secret | null): string | null {
  const kept = secret?.data?.[PRIVATE_KEY_KEY];
  return kept ? Buffer.from(kept, 'base64').toString('utf8') : null;
}

/** The version of the configuration kept in the agent's Secret, or null. */
function keptConfigVersion(secret: V1Secret | null): string | null {
  const kept = secret?.data?.[CONFIG_KEY];
  if (!kept) return null;
  try {
    const applied: unknown = JSON.parse(Buffer.from(kept, 'base64').toString('utf8'));
    const version = fieldOf(applied, 'version');
    return typeof version === 'string' ? version : null;
  } catch {
    return null;
  }
}

function ingressIp(service: V1Service | null): string | null {
  const ingress = service?.status?.loadBalancer?.ingress ?? [];
  return ingress.map((i) => i.ip).find((ip): ip is string => typeof ip === 'string' && isIPv4(ip)) ?? null;
}

/** What stands under the gateway's names without having been made for it, or null. */
function inTheWay(live: Live, id: string, placement: Placement): string | null {
  for (const { key, kind } of KINDS) {
    const object = live[key];
    if (object !== null && !madeFor(object.metadata, id)) {
      return `a ${kind} ${placement.namespace}/${object.metadata?.name} that Cloudplane did not make for this VPN gateway is in the way`;
    }
  }
  return null;
}
