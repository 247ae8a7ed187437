/**
 * Objects a driver keeps in a desired shape by server-side apply: written under one field
 * manager, forced, so the driver owns the fields it sets, a hand edit of one of them is
 * put back on the next apply, and fields the cluster fills in (a Service's clusterIP and
 * node ports, defaults) are left alone. Observe compares with `holdsDesired`: every field
 * the driver sets, as it sets it.
 *
 * Every call is bounded by a timeout and counted into the driver's health (objects.ts
 * callApi): a 404 on a read or a delete is an answer, not a failure.
 */
import { KubernetesObject, KubernetesObjectApi, KubeConfig, PatchStrategy } from '@kubernetes/client-node';
import { OutcomeWindow } from '../health';
import { Answer, callApi } from './objects';
import { isRecord } from '../../lib/unknown-values';

export const FIELD_MANAGER = 'cloudplane';
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** An object's kind and where it is. */
export type ObjectHeader = Pick<KubernetesObject, 'apiVersion' | 'kind'> & { metadata: { name: string; namespace: string } };

/**
 * Whether `live` holds every field of `desired` with its value: objects may have more
 * members (defaults the server fills in), lists must have as many elements (a volume or a
 * port the driver no longer sets is a difference), and scalars must be equal.
 */
export function holdsDesired(live: unknown, desired: unknown): boolean {
  if (desired === undefined) return true;
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => holdsDesired(live[i], d));
  }
  if (desired !== null && typeof desired === 'object') {
    if (!isRecord(live)) return false;
    return Object.entries(desired).every(([key, value]) => holdsDesired(live[key], value));
  }
  return live === desired;
}

// API call: drivers: applied objects (ConfigMaps, Services, PersistentVolumeClaims)
// API call: drivers: Deployments
// API call: store and drivers: secrets, written (VPN agents' configuration, load balancers' certificates)
// API call: drivers: Pods (list: the Pods of load balancers and VPN agents)
export class AppliedObjects {
  readonly outcomes = new OutcomeWindow();
  private readonly api: KubernetesObjectApi;

  constructor(
    kubeConfig: KubeConfig,
    private readonly timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
  ) {
    this.api = KubernetesObjectApi.makeApiClient(kubeConfig);
  }

  /** The object, or null when there is none. */
  async read<T extends KubernetesObject>(header: ObjectHeader): Promise<T | null> {
    const answer = await this.call(`read ${describe(header)}`, () => this.api.read<T>(header), 404);
    return answer.ok ? answer.value : null;
  }

  async list<T extends KubernetesObject>(apiVersion: string, kind: string, namespace: string, labelSelector: string): Promise<T[]> {
    const answer = await this.call(`list ${kind} in ${namespace}`, () =>
      this.api.list<T>(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector),
    );
    return answer.ok ? answer.value.items : [];
  }

  /**
   * Creates the object, or brings the fields the driver owns back to `object`. A refusal
   * with one of the `refusals` codes (an admission plugin's 403) is an answer the caller
   * reports, not a failure of the API server.
   */
  // API call: drivers: applied objects, created by apply
  // API call: drivers: Deployments, created by apply
  async apply<T extends KubernetesObject>(object: T & ObjectHeader, ...refusals: number[]): Promise<Answer<T>> {
    return this.call(
      `apply ${describe(object)}`,
      () => this.api.patch<T>(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
      ...refusals,
    );
  }

  /** Starts deleting the object (its dependents in the background); false when there was none. */
  async delete(header: ObjectHeader): Promise<boolean> {
    const answer = await this.call(`delete ${describe(header)}`, () => this.api.delete(header, undefined, undefined, undefined, undefined, 'Background'), 404);
    return answer.ok;
  }

  private call<T>(what: string, request: () => Promise<T>, ...expected: number[]) {
    return callApi(this.outcomes, what, () => bounded(request(), this.timeoutMs), ...expected);
  }
}

/** The request's answer, or a failure without an HTTP code (the API server did not answer) once `ms` pass. */
function bounded<T>(request: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no answer from the API server within ${ms} ms`));
    }, ms);
  });
  return Promise.race([request, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

function describe(header: ObjectHeader): string {
  return `${header.kind} ${header.metadata.namespace}/${header.metadata.name}`;
}
