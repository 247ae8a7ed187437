/**
 * What every object a Kubernetes driver creates has in common (issue 11's conventions):
 * it lives in its team's namespace and nowhere else, it is named after the resource's id,
 * it carries the labels `app.kubernetes.io/managed-by=cloudplane` and `cloudplane.dev/id`,
 * and the custom resource owns it (controller, blocking its owner's deletion), so that
 * deleting the custom resource cascades to it.
 */
import type { V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';
import { ID_LABEL, namespaceOfTeam, objectName } from '../../store/kubernetes/names';
import { Managed, Owner, OwnerRefusal } from '../types';
import type { OutcomeWindow } from '../health';
import { httpCode } from '../../store/kubernetes/http-code';
import { fieldOf, messageOf } from '../../lib/unknown-values';

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'cloudplane';

export function managedLabels(id: string): Record<string, string> {
  return { [MANAGED_BY_LABEL]: MANAGED_BY, [ID_LABEL]: id };
}

// API call: drivers: owner references that block their owner's deletion
export function ownerReferencesOf(owner: Owner | null): V1OwnerReference[] | undefined {
  if (!owner) return undefined;
  return [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true }];
}

/** Where a resource's objects live and what they are called. */
export interface Placement {
  namespace: string;
  name: string;
}

export function placementOf(resource: Pick<Managed<unknown>, 'id' | 'team'>, systemNamespace: string): Placement {
  return { namespace: namespaceOfTeam(resource.team, systemNamespace), name: objectName(resource.id) };
}

/** The metadata of an object made for `resource`, with extra annotations. */
export function managedMetadata(resource: Managed<unknown>, placement: Placement, annotations: Record<string, string> = {}): V1ObjectMeta {
  return {
    name: placement.name,
    namespace: placement.namespace,
    labels: managedLabels(resource.id),
    annotations,
    ownerReferences: ownerReferencesOf(resource.owner),
  };
}

/** Whether an object found under a resource's name is the one made for it (not someone else's of the same name). */
export function madeFor(metadata: V1ObjectMeta | undefined, id: string): boolean {
  return metadata?.labels?.[ID_LABEL] === id && metadata.labels[MANAGED_BY_LABEL] === MANAGED_BY;
}

/** What the API server said in its Status, or the error's own message when it said nothing. */
function refusalMessage(err: unknown, code: number | undefined): string {
  let body = fieldOf(err, 'body');
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      // Not a Status: the text itself.
    }
  }
  const said = typeof body === 'object' && body !== null ? fieldOf(body, 'message') : body;
  const message = typeof said === 'string' && said ? said : (messageOf(err) ?? String(err));
  return code === undefined ? message : `HTTP ${code}: ${message}`;
}

/**
 * How the API server words a 403 of the namespace's ResourceQuota ("exceeded quota: ...")
 * or LimitRange ("maximum cpu usage per Container is ..."), as opposed to one of RBAC.
 */
const NAMESPACE_POLICY = /is forbidden: (exceeded quota|\[?(maximum|minimum) [a-z-]+ usage per |\[?(maximum|minimum) [a-z-]+ limit to request ratio)/;

/** The outcome of a call whose expected refusals (404 for a read, 409 for a create) are answers, not failures. */
export type Answer<T> = { ok: true; value: T } | { ok: false; code: number; message: string };

/**
 * Runs one API call and feeds the driver's health: an answer, including an expected
 * refusal, counts as a success; anything else as a failure, unreached when the API server
 * did not answer at all. Unexpected failures are thrown to the caller (the reconciler
 * retries them).
 */
export async function callApi<T>(health: OutcomeWindow, what: string, call: () => Promise<T>, ...expected: number[]): Promise<Answer<T>> {
  try {
    const value = await call();
    health.succeeded();
    return { ok: true, value };
  } catch (err) {
    const code = httpCode(err);
    if (code !== undefined && expected.includes(code)) {
      health.succeeded();
      return { ok: false, code, message: refusalMessage(err, code) };
    }
    const message = `${what}: ${refusalMessage(err, code)}`;
    if (code === 403 && NAMESPACE_POLICY.test(message)) {
      // The API server answered as it should: the team's namespace has no room.
      health.succeeded();
      throw new OwnerRefusal(message, { cause: err });
    }
    health.failed(message, code !== undefined);
    throw new Error(message, { cause: err });
  }
}
