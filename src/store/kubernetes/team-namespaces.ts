/**
 * The namespaces the operator made for teams, and its rights in them. Its rights on what a
 * team's resources are made of (Secrets, Pods, Jobs, Deployments...) are a ClusterRole the
 * chart ships without binding it cluster-wide: the operator binds it to its own
 * ServiceAccount, by a RoleBinding, in each namespace it makes, and so holds them there and
 * nowhere else (docs/architecture/cluster-mode.md, "RBAC").
 *
 * It knows its namespaces by the label it puts on them, watched: one made by another
 * replica, or before the operator bound itself (an upgrade), gets its RoleBinding when
 * seen; the per-namespace watches (namespaced-watches.ts) start when a namespace is known
 * and its rights are in effect, and stop when it goes. The system namespace is always
 * known: the chart binds the operator there itself.
 */
import { AuthorizationV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { backoffMs } from '../../lib/backoff';
import { CollectionWatcher, KubeObject } from './watcher';
import { httpCode } from './http-code';
import { MANAGED_BY } from './names';
import { messageOf } from '../../lib/unknown-values';

/** Whom the operator binds the team-namespace ClusterRole to in each namespace it makes. */
export interface TeamNamespaceBinding {
  /** The ClusterRole holding the rights in a team's namespace (the chart's `<release>-team-namespace`). */
  clusterRole: string;
  /** The operator's ServiceAccount, in the system namespace. */
  serviceAccount: string;
}

export interface TeamNamespacesOptions {
  kubeConfig: KubeConfig;
  systemNamespace: string;
  logger: Logger;
  /** Without it nothing is bound: the operator's rights are taken as given (an admin's kubeconfig). */
  binding?: TeamNamespaceBinding;
  watchSilenceLimitMs?: number;
}

export interface NamespaceListener {
  /** A namespace is known and the operator's rights there are in effect; the promise is waited for. */
  added(namespace: string): Promise<void>;
  /** A namespace is gone (or going). */
  removed(namespace: string): void;
}

const LABELS = { 'app.kubernetes.io/managed-by': 'cloudplane' };
/** How long a new RoleBinding may take to be in effect before binding is tried again. */
const IN_EFFECT_TIMEOUT_MS = 30_000;

const terminating = (o: KubeObject) => Boolean(o.metadata.deletionTimestamp);

export class TeamNamespaces {
  private readonly core: CoreV1Api;
  private readonly known = new Set<string>();
  /** Namespaces being bound and announced, each once however often it is asked for. */
  private readonly adding = new Map<string, Promise<void>>();
  /** Namespaces that went while being added: their binding is given up. */
  private readonly dropped = new Set<string>();
  private readonly listeners = new Set<NamespaceListener>();
  private watcher: CollectionWatcher | null = null;
  private stopped = false;
  private systemNamespaceMade = false;

  constructor(private readonly o: TeamNamespacesOptions) {
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
  }

  get systemNamespace(): string {
    return this.o.systemNamespace;
  }

  /** Resolves once every namespace the operator made is bound and announced. */
  // API call: team namespaces: the operator's, watched
  async start(): Promise<void> {
    if (this.watcher) return;
    const added = this.add(this.o.systemNamespace);
    this.watcher = new CollectionWatcher(
      new Watch(this.o.kubeConfig),
      {
        path: '/api/v1/namespaces',
        labelSelector: MANAGED_BY,
        list: async () => {
          const answer = await this.core.listNamespace({ labelSelector: MANAGED_BY });
          // The client's types leave metadata and its name optional; the API server always sends both.
          return { items: answer.items as KubeObject[], resourceVersion: answer.metadata?.resourceVersion ?? '' };
        },
      },
      {
        replace: (items) => {
          const live = new Set(items.filter((o) => !terminating(o)).map((o) => o.metadata.name));
          for (const namespace of [...this.known]) if (!live.has(namespace)) this.remove(namespace);
          for (const namespace of live) void this.add(namespace);
        },
        upsert: (o) => {
          if (terminating(o)) this.remove(o.metadata.name);
          else void this.add(o.metadata.name);
        },
        remove: (o) => {
          this.remove(o.metadata.name);
        },
      },
      this.o.logger,
      { silenceLimitMs: this.o.watchSilenceLimitMs },
    );
    await this.watcher.start();
    await Promise.all([added, ...this.adding.values()]);
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.stop();
    this.listeners.clear();
  }

  /** Whether the namespace is known, its rights in effect. */
  has(namespace: string): boolean {
    return this.known.has(namespace);
  }

  /** The namespaces known now. */
  all(): string[] {
    return [...this.known];
  }

  /** Tells `listener` of every namespace known now and of each that comes or goes; returns a stop. */
  listen(listener: NamespaceListener): { ready: Promise<void>; stop: () => void } {
    this.listeners.add(listener);
    const ready = Promise.all([...this.known].map((namespace) => listener.added(namespace))).then(() => undefined);
    return { ready, stop: () => this.listeners.delete(listener) };
  }

  /** Whether a write into the namespace needs make() first. */
  needsMaking(namespace: string): boolean {
    return namespace === this.o.systemNamespace ? !this.systemNamespaceMade : !this.known.has(namespace);
  }

  /**
   * Makes a team's namespace, labelled as the operator's, binds the operator there and
   * resolves once its rights are in effect and the namespace's watches listed: a write
   * into it may follow at once. Made already (409), it is bound all the same. The system
   * namespace is made if missing (the chart's release namespace is there already) and
   * never bound: the chart binds the operator there.
   */
  // API call: store: team namespaces, created (never changed or deleted: see api-calls.ts)
  async make(namespace: string): Promise<void> {
    if (!this.needsMaking(namespace)) return;
    try {
      await this.core.createNamespace({ body: { metadata: { name: namespace, labels: LABELS } } });
    } catch (err) {
      if (httpCode(err) !== 409) throw err;
    }
    if (namespace === this.o.systemNamespace) this.systemNamespaceMade = true;
    else await this.add(namespace);
  }

  private add(namespace: string): Promise<void> {
    if (this.known.has(namespace)) return Promise.resolve();
    let adding = this.adding.get(namespace);
    if (!adding) {
      this.dropped.delete(namespace);
      adding = this.bindAndAnnounce(namespace).finally(() => this.adding.delete(namespace));
      this.adding.set(namespace, adding);
    }
    return adding;
  }

  private async bindAndAnnounce(namespace: string): Promise<void> {
    if (namespace !== this.o.systemNamespace) await this.bindRetrying(namespace);
    if (this.stopped || this.known.has(namespace) || this.dropped.delete(namespace)) return;
    this.known.add(namespace);
    await Promise.all([...this.listeners].map((listener) => listener.added(namespace)));
  }

  private remove(namespace: string): void {
    // The system namespace is the chart's, not a team's: it stays.
    if (namespace === this.o.systemNamespace) return;
    if (this.adding.has(namespace)) this.dropped.add(namespace);
    if (!this.known.delete(namespace)) return;
    for (const listener of this.listeners) listener.removed(namespace);
  }

  /** Binds, retrying with backoff: the API server may be away, a new binding slow to take effect. */
  private async bindRetrying(namespace: string): Promise<void> {
    for (let failures = 0; !this.stopped && !this.dropped.has(namespace); failures++) {
      try {
        await this.bind(namespace);
        return;
      } catch (err) {
        this.o.logger.warn({ namespace, err: messageOf(err) }, "could not bind the operator's rights in a team namespace; retrying");
        await new Promise((resolve) => setTimeout(resolve, backoffMs(failures, 200, 10_000)).unref());
      }
    }
  }

  // API call: team namespaces: the operator's RoleBinding, created
  // API call: team namespaces: binding the team-namespace ClusterRole
  private async bind(namespace: string): Promise<void> {
    const binding = this.o.binding;
    if (!binding) return;
    const rbac = this.o.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    try {
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: binding.clusterRole, labels: LABELS },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: binding.clusterRole },
          subjects: [{ kind: 'ServiceAccount', name: binding.serviceAccount, namespace: this.o.systemNamespace }],
        },
      });
    } catch (err) {
      // Made already: by another replica, or before a restart. Never replaced: it is the operator's own.
      if (httpCode(err) !== 409) throw err;
    }
    await this.inEffect(namespace);
  }

  /**
   * Waits until the API server's authorizer knows the new binding (its informer lags the
   * write a little): a request made before would be refused.
   */
  // API call: team namespaces: the operator's rights, checked in effect
  private async inEffect(namespace: string): Promise<void> {
    const authorization = this.o.kubeConfig.makeApiClient(AuthorizationV1Api);
    const deadline = Date.now() + IN_EFFECT_TIMEOUT_MS;
    for (let step = 0; ; step++) {
      const review = await authorization.createSelfSubjectAccessReview({
        body: { spec: { resourceAttributes: { namespace, verb: 'watch', resource: 'secrets' } } },
      });
      if (review.status?.allowed || this.stopped) return;
      if (Date.now() > deadline) throw new Error(`the RoleBinding in ${namespace} is not in effect after ${IN_EFFECT_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, backoffMs(step, 20, 500)));
    }
  }
}
