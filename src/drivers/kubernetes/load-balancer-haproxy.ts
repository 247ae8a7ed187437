/**
 * The cluster-mode load balancer driver: each load balancer is HAProxy in its team's
 * namespace, three objects built by haproxy-manifests.ts (a ConfigMap with the rendered
 * configuration, a Deployment, a Service of type LoadBalancer) and written by server-side
 * apply. `ipv4` is the Service's ingress address, which the cluster's LoadBalancer
 * implementation (MetalLB, a cloud's controller) fills in; the load balancer is ready once
 * HAProxy has an available Pod and the Service has that address.
 *
 * Backend health is HAProxy's own: the stats of each ready HAProxy Pod, read over its Pod
 * IP (state.ts). A backend is up when every Pod that answered sees it up (Pods of the
 * current configuration, while a rollout runs). A Pod that cannot be reached (the
 * operator has no route to Pod IPs, or, in a test cluster without kubelets, nothing runs
 * there) makes its backends not up and nothing else: it is not the API server failing,
 * so the driver's health does not count it.
 *
 * https: the certificate is the kubernetes.io/tls Secret that ssl_certificate_id names in
 * the team's namespace, mounted into the Pods. While it is missing or unusable, a running
 * load balancer is left as it is and keeps serving as before, a new one gets no Pods yet,
 * observe says why in `rejected`, and every update tries again.
 *
 * Traffic (GET /load-balancers/{id}/stats) is read live from the same stats: the public
 * frontend's and each backend's counters, summed over every serving Pod (an older
 * configuration's too during a rollout, as they carry traffic until they stop). Unlike
 * health, a Pod that does not answer fails the read: a sum without it would look like the
 * counters falling.
 *
 * An object under the load balancer's name that Cloudplane did not make for it is never
 * touched: the load balancer fails, saying what is in the way.
 */
import { isIPv4 } from 'node:net';
import type { KubeConfig, V1ConfigMap, V1Deployment, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { backendHealth, httpStatsSource, readServerStats, readStats, ServerStat, summedTraffic } from '../haproxy/state';
import { DataPlaneUnavailable } from '../load-balancer';
import type { BackendHealth, LoadBalancerDesired, LoadBalancerDriver, LoadBalancerOutputs, LoadBalancerTraffic } from '../load-balancer';
import type { DriverHealth, Managed, Observation, Step } from '../types';
import { AppliedObjects, holdsDesired, ObjectHeader } from './applied';
import {
  CONFIG_HASH_ANNOTATION,
  DEFAULT_HAPROXY_SETTINGS,
  HaproxyDeploymentSettings,
  haproxyObjects,
  MountedCertificate,
  podSelector,
} from './haproxy-manifests';
import { madeFor, Placement, placementOf } from './objects';
import { Changed, MadeWatchOptions, watchMade } from './made-watch';
import { isAvailable, isServing, podBaseUrl, selectorOf, stalledRollout } from './deployed-pods';
import { messageOf } from '../../lib/unknown-values';
import { nowIso } from '../../lib/time';

export interface HaproxyLoadBalancerDriverOptions extends MadeWatchOptions {
  kubeConfig: KubeConfig;
  /** The operator's own namespace: the system team's (see namespaceOfTeam). */
  systemNamespace: string;
  logger: Logger;
  /** The HAProxy image, replicas, ports, drain and check timings, resources (defaults: DEFAULT_HAPROXY_SETTINGS). */
  haproxy?: Partial<HaproxyDeploymentSettings>;
  /** Each call to the API server (default 10 s). */
  requestTimeoutMs?: number;
  /** Each read of an HAProxy Pod's stats (default 2 s). */
  statsTimeoutMs?: number;
  /** How soon to look again while something is under way (default 2 s). */
  progressPollMs?: number;
  /** How soon to look again at a ready load balancer, for its backends' health (default 10 s). */
  healthPollMs?: number;
}

const DEFAULT_STATS_TIMEOUT_MS = 2_000;
const DEFAULT_PROGRESS_POLL_MS = 2_000;
const DEFAULT_HEALTH_POLL_MS = 10_000;
/** A Secret name: a DNS subdomain. */
const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The three kinds, in the order they are deleted: the Service first, so traffic stops arriving before HAProxy goes. */
const KINDS = [
  { key: 'service', apiVersion: 'v1', kind: 'Service' },
  { key: 'deployment', apiVersion: 'apps/v1', kind: 'Deployment' },
  { key: 'configMap', apiVersion: 'v1', kind: 'ConfigMap' },
] as const;

type Certificate = { ok: true; mounted: MountedCertificate | null } | { ok: false; problem: string };

interface Live {
  configMap: V1ConfigMap | null;
  deployment: V1Deployment | null;
  service: V1Service | null;
}

export class HaproxyLoadBalancerDriver implements LoadBalancerDriver {
  private readonly objects: AppliedObjects;
  private readonly settings: HaproxyDeploymentSettings;
  private readonly progressPollMs: number;

  constructor(private readonly o: HaproxyLoadBalancerDriverOptions) {
    this.objects = new AppliedObjects(o.kubeConfig, o.requestTimeoutMs);
    this.settings = { ...DEFAULT_HAPROXY_SETTINGS, ...o.haproxy };
    this.progressPollMs = o.progressPollMs ?? DEFAULT_PROGRESS_POLL_MS;
  }

  /**
   * The Deployment and Service changed by others (deleted or edited by hand, the Service
   * given its address) are looked at at once. The ConfigMap is not watched: a hand edit of
   * the generated configuration changes no status and the resync puts it back, and a watch
   * less per team namespace is worth more than that promptness.
   */
  watchMade(changed: Changed): () => void {
    return watchMade(this.o, ['deployments', 'services'], changed);
  }

  async observe(resource: Managed<LoadBalancerDesired>): Promise<Observation<LoadBalancerOutputs, BackendHealth[]>> {
    const placement = this.placementOf(resource);
    const live = await this.readLive(placement);
    if (!live.configMap && !live.deployment && !live.service) return { exists: false };
    const foreign = inTheWay(live, resource.id, placement);
    if (foreign) {
      return { exists: true, upToDate: true, ready: false, outputs: { ipv4: null }, observed: notUp(resource.desired), failure: foreign };
    }

    const certificate = await this.certificate(resource, placement.namespace);
    const wanted = haproxyObjects(resource, placement, this.settings, certificate.ok ? certificate.mounted : null);
    const upToDate =
      wanted.deployment !== null &&
      holdsDesired(live.configMap, wanted.configMap) &&
      holdsDesired(live.deployment, wanted.deployment) &&
      holdsDesired(live.service, wanted.service);

    const deployment = live.deployment;
    const available = isAvailable(deployment);
    const ingress = live.service?.status?.loadBalancer?.ingress ?? [];
    const ipv4 = ingress.map((i) => i.ip).find((ip): ip is string => typeof ip === 'string' && isIPv4(ip)) ?? null;
    const ready = available && ingress.length > 0 && live.service !== null;
    const stalled = stalledRollout(deployment, 'the HAProxy Deployment');

    const rejected = !certificate.ok ? certificate.problem : stalled && available ? stalled : null;
    const failure = stalled && !available ? stalled : null;
    const backends = available ? await this.backendHealth(resource, placement.namespace, wanted.configHash) : notUp(resource.desired);
    return {
      exists: true,
      upToDate,
      ready,
      outputs: { ipv4 },
      observed: backends,
      failure,
      rejected,
      pollAfterMs: ready && upToDate ? (this.o.healthPollMs ?? DEFAULT_HEALTH_POLL_MS) : this.progressPollMs,
    };
  }

  async create(resource: Managed<LoadBalancerDesired>): Promise<Step> {
    return this.apply(resource);
  }

  async update(resource: Managed<LoadBalancerDesired>): Promise<Step> {
    return this.apply(resource);
  }

  async delete(resource: Managed<LoadBalancerDesired>): Promise<Step> {
    const placement = this.placementOf(resource);
    const live = await this.readLive(placement);
    for (const { key, apiVersion, kind } of KINDS) {
      // Only what was made for this load balancer: someone else's object of the same name stays.
      if (!madeFor(live[key]?.metadata, resource.id)) continue;
      if (await this.objects.delete({ apiVersion, kind, metadata: placement })) {
        this.o.logger.info({ id: resource.id, ...placement, kind }, 'load balancer object deleted');
      }
    }
    return { external: { ...placement }, pollAfterMs: this.progressPollMs };
  }

  health(): DriverHealth {
    return this.objects.outcomes.health();
  }

  /**
   * The counters of every serving HAProxy Pod, summed: each Pod's are cumulative since it
   * started, so a Pod replaced (a rollout, a restart) takes its share with it. No serving
   * Pod is no traffic; one that does not answer in time, or an API server that does not,
   * is DataPlaneUnavailable. The reasons given are for the API's answer: the Pods'
   * addresses and the API server's words go to the log only.
   */
  async traffic(resource: Managed<LoadBalancerDesired>): Promise<LoadBalancerTraffic> {
    const { namespace } = this.placementOf(resource);
    let pods: V1Pod[];
    try {
      pods = (await this.objects.list<V1Pod>('v1', 'Pod', namespace, selectorOf(podSelector(resource.id)))).filter(isServing);
    } catch (err) {
      this.o.logger.warn({ id: resource.id, err: messageOf(err) }, "could not list a load balancer's HAProxy Pods for its traffic");
      throw new DataPlaneUnavailable("the cluster's API server did not answer for its HAProxy Pods");
    }
    const timeoutMs = this.o.statsTimeoutMs ?? DEFAULT_STATS_TIMEOUT_MS;
    const answers = await Promise.allSettled(pods.map((pod) => readStats(httpStatsSource(podBaseUrl(pod, this.settings.statsPort)), timeoutMs)));
    const silent = answers.flatMap((answer, i) => (answer.status === 'rejected' ? [{ pod: pods[i].metadata?.name, err: messageOf(answer.reason) }] : []));
    if (silent.length > 0) {
      this.o.logger.warn({ id: resource.id, silent }, "could not read an HAProxy Pod's stats for the traffic");
      throw new DataPlaneUnavailable(`${silent.length} of its ${pods.length} serving HAProxy Pods did not give their stats within ${timeoutMs} ms`);
    }
    const stats = answers.flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []));
    return { ...summedTraffic(resource.desired, stats), observed_at: nowIso() };
  }

  /**
   * Applies the three objects. Without a usable certificate for https, a running load
   * balancer is left as it is, serving as before; a new one gets its ConfigMap and Service
   * (an address can be assigned meanwhile) and its Deployment once the certificate is there.
   */
  private async apply(resource: Managed<LoadBalancerDesired>): Promise<Step> {
    const placement = this.placementOf(resource);
    // Its objects are named from the load balancer's id and applied server-side: an apply repeated is the same apply.
    const step: Step = { external: { ...placement }, pollAfterMs: this.progressPollMs, replayable: true };
    const live = await this.readLive(placement);
    if (inTheWay(live, resource.id, placement)) return step; // observe reports it; nothing of someone else's is touched
    const certificate = await this.certificate(resource, placement.namespace);
    const wanted = haproxyObjects(resource, placement, this.settings, certificate.ok ? certificate.mounted : null);
    if (!wanted.deployment) {
      this.o.logger.warn(
        { id: resource.id, ...placement, problem: certificate.ok ? null : certificate.problem },
        'load balancer not rolled out: its certificate is unusable',
      );
      if (!live.deployment) {
        await this.objects.apply(wanted.configMap);
        await this.objects.apply(wanted.service);
      }
      return step;
    }
    // The configuration before the Pods that read it; the Service last, when there is something to send to.
    await this.objects.apply(wanted.configMap);
    await this.objects.apply(wanted.deployment);
    await this.objects.apply(wanted.service);
    this.o.logger.info({ id: resource.id, ...placement, configHash: wanted.configHash, backends: resource.desired.backends.length }, 'load balancer applied');
    return { ...step, external: { ...placement, config_hash: wanted.configHash } };
  }

  private async readLive(placement: Placement): Promise<Live> {
    const header = ({ apiVersion, kind }: (typeof KINDS)[number]): ObjectHeader => ({ apiVersion, kind, metadata: placement });
    // Settled, not raced: each read's outcome counts into the health before the caller goes on.
    const [service, deployment, configMap] = await Promise.allSettled([
      this.objects.read<V1Service>(header(KINDS[0])),
      this.objects.read<V1Deployment>(header(KINDS[1])),
      this.objects.read<V1ConfigMap>(header(KINDS[2])),
    ]);
    const value = <T>(read: PromiseSettledResult<T | null>): T | null => {
      if (read.status === 'rejected') throw read.reason;
      return read.value;
    };
    return { service: value(service), deployment: value(deployment), configMap: value(configMap) };
  }

  /** The certificate to mount (null for http and tcp), or why there is none to mount. */
  private async certificate(resource: Managed<LoadBalancerDesired>, namespace: string): Promise<Certificate> {
    const { protocol, ssl_certificate_id: secretName } = resource.desired;
    if (protocol !== 'https') return { ok: true, mounted: null };
    if (!secretName || secretName.length > 253 || !SECRET_NAME.test(secretName)) {
      return { ok: false, problem: `ssl_certificate_id '${secretName ?? ''}' cannot name a Secret (it must be a DNS subdomain name)` };
    }
    const secret = await this.objects.read<V1Secret>({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName, namespace } });
    if (!secret) return { ok: false, problem: `the certificate Secret '${secretName}' does not exist in namespace ${namespace}` };
    if (!secret.data?.['tls.crt'] || !secret.data['tls.key']) {
      return { ok: false, problem: `the certificate Secret '${secretName}' has no tls.crt and tls.key (it must be of type kubernetes.io/tls)` };
    }
    return { ok: true, mounted: { secretName, version: secret.metadata?.resourceVersion ?? '' } };
  }

  /**
   * Each desired backend's health from the stats of the ready HAProxy Pods (those of the
   * current configuration if any is ready). Up where every Pod that answered sees it up.
   */
  private async backendHealth(resource: Managed<LoadBalancerDesired>, namespace: string, configHash: string): Promise<BackendHealth[]> {
    const pods = (await this.objects.list<V1Pod>('v1', 'Pod', namespace, selectorOf(podSelector(resource.id)))).filter(isServing);
    const current = pods.filter((p) => p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] === configHash);
    const asked = current.length > 0 ? current : pods;
    const answers = await Promise.all(asked.map((pod) => this.podStats(resource, pod)));
    const seen = answers.filter((a): a is ServerStat[] => a !== null);
    if (seen.length === 0) return notUp(resource.desired);
    const views = seen.map((stats) => backendHealth(resource.desired, stats));
    return views[0].map((b, i) => ({ ...b, up: views.every((v) => v[i].up) }));
  }

  private async podStats(resource: Managed<LoadBalancerDesired>, pod: V1Pod): Promise<ServerStat[] | null> {
    const source = httpStatsSource(podBaseUrl(pod, this.settings.statsPort));
    try {
      return await readServerStats(source, this.o.statsTimeoutMs ?? DEFAULT_STATS_TIMEOUT_MS);
    } catch (err) {
      this.o.logger.debug({ id: resource.id, pod: pod.metadata?.name, err: messageOf(err) }, "could not read an HAProxy Pod's stats");
      return null;
    }
  }

  private placementOf(resource: Managed<LoadBalancerDesired>): Placement {
    return placementOf(resource, this.o.systemNamespace);
  }
}

/** What stands under the load balancer's name without having been made for it, or null. */
function inTheWay(live: Live, id: string, { namespace, name }: Placement): string | null {
  const foreign = KINDS.find(({ key }) => live[key] !== null && !madeFor(live[key].metadata, id));
  return foreign ? `a ${foreign.kind} ${namespace}/${name} that Cloudplane did not make for this load balancer is in the way` : null;
}

function notUp(desired: LoadBalancerDesired): BackendHealth[] {
  return backendHealth(desired, []);
}
