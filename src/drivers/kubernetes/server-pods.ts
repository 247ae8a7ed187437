/**
 * The `kubernetes` server driver: a server is one Pod in its team's namespace, named after
 * the server's id (objects.ts gives every object's namespace, name, labels and owner),
 * running the container image its `image` maps to in the catalog with its plan's resources
 * (server-catalog.ts). It is running when the Pod is Ready, and its address is the Pod's.
 *
 * Power is the Pod's existence: stop deletes the Pod and keeps the record (the server is
 * `off` once the Pod is gone), start creates it again, and a reboot replaces it: the Pod
 * is deleted, created again once gone, and the reboot is done when the new Pod (a new
 * uid) is Ready. A finished stop, start or reboot settles every reboot asked for before it,
 * as on the simulated driver. A Pod that vanishes while the server should run is drift:
 * observe says the server is not up to date, and update creates it again.
 *
 * Attached file shares are mounted into the server's container: each share's claim
 * (its mount_target, `<namespace>/<claim>`, in the server's own namespace) is a volume,
 * mounted at the share's mount path. A Pod's volumes cannot change, so when the mounts
 * asked for differ from the Pod's, the Pod is replaced as for a reboot (the server is
 * `rebooting` until the new Pod is Ready). A mount target that is not a claim in the
 * server's namespace (a share of another driver) cannot be mounted here and is left out.
 *
 * The driver keeps nothing in memory: what it needs across calls is in the record it
 * returns (PodServerRecord, stored by the reconciler in status.external), and the rest is
 * read from the Pod on every call. Each call makes at most a read and one write and
 * returns; observe says how far things are and when to look again.
 *
 * A KubeVirt driver would be a second implementation of ServerDriver beside this one, not
 * a change to it: it would run the same catalog names (a disk image per entry) and plan
 * resources (server-catalog.ts), put its VirtualMachine where objects.ts says with the
 * same labels and owner, and keep a record of the same kind; what differs is the object
 * and how power is expressed: a VirtualMachine that stays while stopped, its
 * spec.runStrategy Always or Halted for start and stop, its `restart` subresource for a
 * reboot, its VirtualMachineInstance's Ready condition and interface address for
 * `running` and `ipv4`. The reconciler, which only sees ServerDriver, stays as it is.
 */
import { CoreV1Api, KubeConfig, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { OutcomeWindow } from '../health';
import type { DesiredMount, ServerDesired, ServerDriver, ServerObserved, ServerOutputs, PowerState } from '../server';
import type { DriverHealth, ExternalRecord, Managed, Observation, Step } from '../types';
import { callApi, madeFor, managedMetadata, Placement, placementOf } from './objects';
import { objectName } from '../../store/kubernetes/names';
import { podProgress } from './pod-status';
import { Changed, MadeWatchOptions, watchMade } from './made-watch';
import { Resolved, resolveServer } from './server-catalog';
import { DEFAULT_PLAN_RESOURCES, DEFAULT_SERVER_IMAGES, ServerImageCatalog, ServerPlanResources } from '../../lib/server-catalog';

export const SERVER_CONTAINER = 'server';
export const IMAGE_ANNOTATION = 'cloudplane.dev/image';
export const PLAN_ANNOTATION = 'cloudplane.dev/plan';
export const DEFAULT_START_TIMEOUT_MS = 300_000;
const DEFAULT_POLL_MS = 2_000;

export interface PodServerDriverOptions extends MadeWatchOptions {
  kubeConfig: KubeConfig;
  /** The namespace of service-wide data; teams map to namespaces as the store maps them. */
  systemNamespace: string;
  logger: Logger;
  /** Image name → container image (default DEFAULT_SERVER_IMAGES). */
  catalog?: ServerImageCatalog;
  /** Plan → requests and limits (default DEFAULT_PLAN_RESOURCES). */
  plans?: ServerPlanResources;
  /** How long a Pod may stay unschedulable or fail to pull its image before the server fails (default 300 s). */
  startTimeoutMs?: number;
  /** How soon to look again while something is under way (default 2 s). */
  pollMs?: number;
}

/** What the driver remembers of its own calls, in status.external. */
export interface PodServerRecord {
  /** Reboots carried out, as last settled by a call of this driver. */
  reboots_done: number;
  /** A reboot under way: the uid of the Pod it replaces. */
  replacing: string | null;
  /** The server is being deleted: once its Pod is gone, nothing exists. */
  deleting: boolean;
  /** Why this server cannot run at all (an image the catalog lacks), found on create. */
  failure: string | null;
}

/** The record as stored, read leniently: it is JSON that anyone with kubectl could have edited. */
export function recordOf(external: ExternalRecord | null): PodServerRecord | null {
  if (!external) return null;
  const count = external.reboots_done;
  return {
    reboots_done: typeof count === 'number' && Number.isInteger(count) && count >= 0 ? count : 0,
    replacing: typeof external.replacing === 'string' ? external.replacing : null,
    deleting: external.deleting === true,
    failure: typeof external.failure === 'string' ? external.failure : null,
  };
}

const EMPTY_RECORD: PodServerRecord = { reboots_done: 0, replacing: null, deleting: false, failure: null };

const toExternal = (record: PodServerRecord): ExternalRecord => ({ ...record });

type Server = Managed<ServerDesired>;

/** A claim mounted into the server's container. */
interface ClaimMount {
  claim: string;
  mount_path: string;
}

const CLAIM_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The claims of the mounts asked for that live in the server's namespace (mount_target `<namespace>/<claim>`). */
function claimMountsOf(mounts: DesiredMount[], namespace: string): Array<ClaimMount & { volume: string }> {
  return mounts.flatMap((m) => {
    const [ns, claim, ...rest] = m.mount_target.split('/');
    if (ns !== namespace || rest.length > 0 || !claim || !CLAIM_NAME.test(claim)) return [];
    return [{ volume: objectName(m.file_share_id), claim, mount_path: m.mount_path }];
  });
}

/** The same list as a comparable key, order aside. */
const mountsKey = (mounts: ClaimMount[]) => JSON.stringify(mounts.map((m) => `${m.claim} ${m.mount_path}`).sort());

/** The claims a Pod's server container mounts, where. */
function podClaimMounts(pod: V1Pod): ClaimMount[] {
  const claims = new Map(
    (pod.spec?.volumes ?? []).flatMap((v): [string, string][] => (v.persistentVolumeClaim ? [[v.name, v.persistentVolumeClaim.claimName]] : [])),
  );
  const container = pod.spec?.containers.find((c) => c.name === SERVER_CONTAINER);
  return (container?.volumeMounts ?? []).flatMap((vm) => {
    const claim = claims.get(vm.name);
    return claim === undefined ? [] : [{ claim, mount_path: vm.mountPath }];
  });
}

type ServerObservation = Observation<ServerOutputs, ServerObserved>;

export class PodServerDriver implements ServerDriver {
  private readonly core: CoreV1Api;
  private readonly outcomes = new OutcomeWindow();
  private readonly catalog: ServerImageCatalog;
  private readonly plans: ServerPlanResources;
  private readonly startTimeoutMs: number;
  private readonly pollMs: number;

  /** Servers' Pods changed by others (deleted by hand, evicted) are looked at at once. */
  watchMade(changed: Changed): () => void {
    return watchMade(this.o, ['pods'], changed);
  }

  constructor(private readonly o: PodServerDriverOptions) {
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    this.catalog = o.catalog ?? DEFAULT_SERVER_IMAGES;
    this.plans = o.plans ?? DEFAULT_PLAN_RESOURCES;
    this.startTimeoutMs = o.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    this.pollMs = o.pollMs ?? DEFAULT_POLL_MS;
  }

  health(): DriverHealth {
    return this.outcomes.health();
  }

  async observe(server: Server): Promise<ServerObservation> {
    const stored = recordOf(server.external);
    const pod = await this.readPod(server);
    if (!pod && (!stored || stored.deleting)) return { exists: false };
    const record = this.settle(server, stored ?? EMPTY_RECORD, pod);
    // A finished reboot not yet in the record: update writes it down (and touches nothing else).
    const recordBehind = stored !== null && record.replacing !== stored.replacing;

    const present = (power: PowerState, rest: Partial<Extract<ServerObservation, { exists: true }>> = {}): ServerObservation => ({
      exists: true,
      upToDate: true,
      ready: false,
      outputs: { ipv4: pod?.status?.podIP ?? null },
      observed: { power, reboots_done: record.reboots_done },
      failure: null,
      ...rest,
    });
    const moving = { upToDate: false, pollAfterMs: this.pollMs };

    if (pod && !madeFor(pod.metadata, server.id)) {
      const { namespace, name } = this.placement(server);
      return present('off', { outputs: { ipv4: null }, failure: `a Pod ${namespace}/${name} that Cloudplane did not make for this server is in the way` });
    }
    if (record.deleting) return present('stopping', { pollAfterMs: this.pollMs });
    if (record.failure && !pod) return present('off', { failure: record.failure });

    if (server.desired.power_state === 'off') {
      if (!pod) return present('off', { upToDate: record.reboots_done >= server.desired.reboot_requests });
      // Deleting already: nothing more to ask, only to wait.
      return present('stopping', pod.metadata?.deletionTimestamp ? { pollAfterMs: this.pollMs } : moving);
    }

    const comingBack: PowerState = record.replacing ? 'rebooting' : 'starting';
    if (!pod) return present(comingBack, moving);
    const progress = podProgress(pod, this.startTimeoutMs);
    if (progress.state === 'terminating' || progress.state === 'ended') return present(comingBack, moving);
    if (pod.metadata?.uid === record.replacing || this.rebootDue(server, record) || this.remountDue(server, pod)) return present('rebooting', moving);
    if (progress.state === 'ready') return present('on', { ready: true, upToDate: !recordBehind });
    const pollAfterMs = progress.failsInMs === null ? this.pollMs : Math.max(1, Math.min(this.pollMs, progress.failsInMs));
    return present(comingBack, { failure: progress.failure, pollAfterMs });
  }

  async create(server: Server): Promise<Step> {
    const resolved = resolveServer(server.desired, this.catalog, this.plans);
    // A server starts with every reboot asked for settled.
    const record: PodServerRecord = { ...EMPTY_RECORD, reboots_done: server.desired.reboot_requests };
    if (!resolved.ok) return { external: toExternal({ ...record, failure: resolved.reason }) };
    if (server.desired.power_state === 'on') await this.createPod(server, resolved);
    return { external: toExternal(record), pollAfterMs: this.pollMs };
  }

  async update(server: Server): Promise<Step> {
    const pod = await this.readPod(server);
    const record = this.settle(server, recordOf(server.external) ?? EMPTY_RECORD, pod);
    const step = (next: PodServerRecord): Step => ({ external: toExternal(next), pollAfterMs: this.pollMs });

    if (pod && !madeFor(pod.metadata, server.id)) return step(record); // someone else's: never touched
    if (server.desired.power_state === 'off') {
      if (pod && !pod.metadata?.deletionTimestamp) await this.deletePod(server, pod, 'stop');
      // A stop settles the reboots asked for before it.
      return step({ ...record, reboots_done: server.desired.reboot_requests, replacing: null });
    }
    if (!pod) {
      const resolved = resolveServer(server.desired, this.catalog, this.plans);
      if (!resolved.ok) return step({ ...record, failure: resolved.reason });
      await this.createPod(server, resolved);
      // A start (or a Pod brought back) settles earlier reboots; a reboot settles once its new Pod is Ready.
      return step(record.replacing ? record : { ...record, reboots_done: server.desired.reboot_requests });
    }
    const progress = podProgress(pod, this.startTimeoutMs);
    if (progress.state === 'terminating') return step(record); // its name is free once it is gone
    if (progress.state === 'ended') {
      await this.deletePod(server, pod, 'replace its ended Pod');
      return step(record);
    }
    const uid = pod.metadata?.uid ?? null;
    if (uid !== null && (uid === record.replacing || this.rebootDue(server, record) || this.remountDue(server, pod))) {
      await this.deletePod(server, pod, this.remountDue(server, pod) ? 'change its mounts' : 'reboot');
      return step({ ...record, replacing: uid });
    }
    return step(record);
  }

  async delete(server: Server): Promise<Step> {
    const record = recordOf(server.external) ?? EMPTY_RECORD;
    const pod = await this.readPod(server);
    if (pod && madeFor(pod.metadata, server.id) && !pod.metadata?.deletionTimestamp) await this.deletePod(server, pod, 'delete');
    return { external: toExternal({ ...record, deleting: true }), pollAfterMs: this.pollMs };
  }

  /**
   * The record with a finished reboot written down: once the Pod that replaced the
   * rebooted one is Ready, every reboot asked for so far is done.
   */
  private settle(server: Server, record: PodServerRecord, pod: V1Pod | null): PodServerRecord {
    const replaced = record.replacing !== null && pod !== null && pod.metadata?.uid !== record.replacing;
    if (!replaced || podProgress(pod, this.startTimeoutMs).state !== 'ready') return record;
    return { ...record, replacing: null, reboots_done: Math.max(record.reboots_done, server.desired.reboot_requests) };
  }

  private rebootDue(server: Server, record: PodServerRecord): boolean {
    return record.replacing === null && server.desired.reboot_requests > record.reboots_done;
  }

  /** The Pod mounts other shares than those asked for: its volumes cannot change, so it is replaced. */
  private remountDue(server: Server, pod: V1Pod): boolean {
    return mountsKey(podClaimMounts(pod)) !== mountsKey(claimMountsOf(server.desired.mounts, this.placement(server).namespace));
  }

  private placement(server: Server): Placement {
    return placementOf(server, this.o.systemNamespace);
  }

  // API call: drivers: Pods (read, and below made and deleted)
  private async readPod(server: Server): Promise<V1Pod | null> {
    const { namespace, name } = this.placement(server);
    const answer = await callApi(this.outcomes, `reading Pod ${namespace}/${name}`, () => this.core.readNamespacedPod({ name, namespace }), 404);
    return answer.ok ? answer.value : null;
  }

  /** Creates the server's Pod; one already there (made by an earlier call) is fine. */
  private async createPod(server: Server, resolved: Extract<Resolved, { ok: true }>): Promise<void> {
    const placement = this.placement(server);
    const mounts = claimMountsOf(server.desired.mounts, placement.namespace);
    const volumes: V1Volume[] = mounts.map((m) => ({ name: m.volume, persistentVolumeClaim: { claimName: m.claim } }));
    const volumeMounts: V1VolumeMount[] = mounts.map((m) => ({ name: m.volume, mountPath: m.mount_path }));
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: managedMetadata(server, placement, { [IMAGE_ANNOTATION]: server.desired.image, [PLAN_ANNOTATION]: server.desired.plan }),
      spec: {
        restartPolicy: 'Always',
        // The server's software has no business with the cluster's API.
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        ...(volumes.length > 0 ? { volumes } : {}),
        containers: [
          {
            name: SERVER_CONTAINER,
            image: resolved.image.image,
            command: resolved.image.command,
            resources: resolved.resources,
            securityContext: { allowPrivilegeEscalation: false },
            ...(volumeMounts.length > 0 ? { volumeMounts } : {}),
          },
        ],
      },
    };
    const what = `creating Pod ${placement.namespace}/${placement.name}`;
    const answer = await callApi(this.outcomes, what, () => this.core.createNamespacedPod({ namespace: placement.namespace, body: pod }), 409);
    if (answer.ok)
      this.o.logger.info(
        { server: server.id, namespace: placement.namespace, pod: placement.name, image: resolved.image.image, claims: mounts.map((m) => m.claim) },
        'server Pod created',
      );
  }

  /** Deletes this very Pod (by uid: never a newer one of the same name); gone already is fine. */
  private async deletePod(server: Server, pod: V1Pod, why: string): Promise<void> {
    const { namespace, name } = this.placement(server);
    const uid = pod.metadata?.uid;
    const what = `deleting Pod ${namespace}/${name} (${why})`;
    const answer = await callApi(this.outcomes, what, () => this.core.deleteNamespacedPod({ name, namespace, body: { preconditions: { uid } } }), 404, 409);
    if (answer.ok) this.o.logger.info({ server: server.id, namespace, pod: name, uid, why }, 'server Pod deleted');
  }
}
