/**
 * Connection details for other workloads (cluster mode): a managed resource whose spec has
 * `writeConnectionSecretToRef: {name}` gets a Secret of that name in its namespace holding
 * what a consumer needs to reach it (an address, an endpoint, a mount target), written by
 * its reconciler once the details are known and rewritten when they change. The name and
 * shape follow Crossplane's connection secrets, so `envFrom.secretRef` and tools that know
 * Crossplane read it as they would a provider's. The Secret is owned by the custom
 * resource (ownerReference), so the garbage collector removes it with the resource; one
 * left behind by a renamed reference is removed here.
 *
 * Only what the API's record already shows is published. A bucket's endpoint, bucket name
 * and region go out, never the S3 driver's access keys: those are the operator's own
 * account on the endpoint, good for every team's buckets, and a Secret in one team's
 * namespace would hand them to that team. A Secret of the name that this resource did not
 * make (a store secret, another application's) is never written over: the resource says
 * so in its status_reason instead.
 *
 * A Secret, not a ConfigMap: consumers mount both alike, and one kind keeps RBAC and
 * GitOps health checks simple; a future detail (a per-bucket credential) needs a Secret.
 */
import { CoreV1Api, type KubeConfig, type V1OwnerReference, type V1Secret } from '@kubernetes/client-node';
import type { ResourceWriter } from '../resources/writer';
import type { AnyFamily, ConnectionDetails as Details } from '../resources/family';
import { CONNECTION_SECRET_FIELD } from '../resources/schema-kit';
import { GROUP, ID_LABEL, namespaceOfTeam } from '../store/kubernetes/names';
import { httpCode } from '../store/kubernetes/http-code';
import { ownerReferencesOf } from '../drivers/kubernetes/objects';
import { sameJson } from '../lib/canonical-json';
import { Driven, managedOf } from './driven';

/** Marks the Secret as this resource's connection secret; it is written over only while it carries the mark. */
export const CONNECTION_OF_LABEL = `${GROUP}/connection-of`;
/** Marks the status_reason written here, so that it clears its own and no one else's. */
const REASON_PREFIX = 'Connection secret';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';

export class ConnectionDetails {
  private readonly core: CoreV1Api;

  constructor(
    kubeConfig: KubeConfig,
    private readonly systemNamespace: string,
    private readonly writer: ResourceWriter,
  ) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  /** Brings the resource's connection Secret in line with its status (the one just written). */
  async publish(family: AnyFamily, resource: Driven): Promise<void> {
    const ref = resource.spec[CONNECTION_SECRET_FIELD];
    if (!family.connectionDetails || !ref || !resource.meta.object) return;
    const namespace = namespaceOfTeam(resource.meta.team, this.systemNamespace);
    const details = family.connectionDetails(resource, namespace);
    if (!details) return;
    const problem = await this.write(family, resource, namespace, ref.name, details);
    await this.sayProblem(family, resource, problem);
  }

  /**
   * A resource being deleted publishes nothing: its Secrets go now rather than with the
   * custom resource after the retention period, so no consumer connects to a released address.
   */
  async withdraw(resource: Driven): Promise<void> {
    if (!resource.spec[CONNECTION_SECRET_FIELD] || !resource.meta.object) return;
    await this.removeOthers(namespaceOfTeam(resource.meta.team, this.systemNamespace), resource.meta.id, null);
  }

  /** Writes the Secret unless it holds these details already; answers what stopped it, or null. */
  private async write(family: AnyFamily, resource: Driven, namespace: string, name: string, details: Details): Promise<string | null> {
    const { id } = resource.meta;
    const existing = await this.read(namespace, name);
    if (existing && existing.metadata?.labels?.[CONNECTION_OF_LABEL] !== id) {
      return `${REASON_PREFIX} "${name}" was not written: a Secret of that name that is not this ${family.title}'s exists in the namespace.`;
    }
    if (existing && sameJson(decoded(existing), details)) return null;
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name,
        namespace,
        labels: { [MANAGED_BY_LABEL]: 'cloudplane', [ID_LABEL]: id, [CONNECTION_OF_LABEL]: id },
        ownerReferences: ownerOf(family, resource),
        ...(existing ? { resourceVersion: existing.metadata?.resourceVersion } : {}),
      },
      stringData: details,
    };
    // API call: connection details: Secrets
    // A conflict (someone wrote meanwhile) fails the pass; the retry reads again.
    if (existing) await this.core.replaceNamespacedSecret({ name, namespace, body });
    else await this.core.createNamespacedSecret({ namespace, body });
    await this.removeOthers(namespace, id, name);
    return null;
  }

  /** Connection secrets of the resource under another name than `keep` (its reference was renamed), or all of them. */
  private async removeOthers(namespace: string, id: string, keep: string | null): Promise<void> {
    const list = await this.core.listNamespacedSecret({ namespace, labelSelector: `${CONNECTION_OF_LABEL}=${id}` });
    for (const secret of list.items) {
      const name = secret.metadata?.name;
      // A listed Secret has a name: none is only the type's.
      if (name === undefined || name === keep) continue;
      await this.core.deleteNamespacedSecret({ name, namespace }).catch((err: unknown) => {
        if (httpCode(err) !== 404) throw err;
      });
    }
  }

  private async read(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ name, namespace });
    } catch (err) {
      if (httpCode(err) === 404) return undefined;
      throw err;
    }
  }

  /** Records what stopped the write in status_reason, or clears what an earlier pass recorded. */
  private async sayProblem(family: AnyFamily, resource: Driven, problem: string | null): Promise<void> {
    const { team, id } = resource.meta;
    await this.writer.mutateStatus<Driven>(
      family,
      team,
      id,
      (latest) => {
        const current: string | null = latest.status.status_reason ?? null;
        if (problem) return current === problem ? null : { status_reason: problem };
        return current?.startsWith(REASON_PREFIX) ? { status_reason: null } : null;
      },
      'system',
    );
  }
}

/**
 * The custom resource, as controller, not blocking its deletion: nothing waits for the
 * Secret to go, and blocking would need update on the kind's finalizers (RBAC) for kinds
 * whose driver makes no Kubernetes object at all (a bucket on S3).
 */
function ownerOf(family: AnyFamily, resource: Driven): V1OwnerReference[] | undefined {
  return ownerReferencesOf(managedOf(family, resource, null).owner)?.map((owner) => ({ ...owner, blockOwnerDeletion: false }));
}

function decoded(secret: V1Secret): Details {
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}
