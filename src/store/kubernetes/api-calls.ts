/**
 * Every Kubernetes API call the operator makes in cluster mode, by resource, verb and
 * where it goes: the chart's RBAC (charts/cloudplane/templates/rbac.yaml) grants exactly
 * these and nothing else. test/integration/rbac-rules.test.ts compares the rendered chart
 * with this list both ways (an unused grant fails it, and so does a missing one), and the
 * cluster-mode tests that run the operator under the chart's RBAC check the API server's
 * audit log against it (test/helpers/chart.ts, expectOnlyListedCalls): a call made and not
 * listed here, or refused with a 403, fails them. Each call site names its entry in a
 * comment (`API call: <entry>`); a new call needs its entry here and its rule in the chart.
 *
 * Where a call goes decides which grant holds it (docs/architecture/cluster-mode.md, "RBAC"):
 * - `cluster`: the operator's ClusterRole, bound cluster-wide: cluster-scoped resources (the
 *   namespaces it makes, the RoleBinding that gives it its rights in each), and the list and
 *   watch of its own custom resources across namespaces. Nothing of anyone else's: no
 *   Secret, Pod or Deployment of any namespace;
 * - `team-namespaces`: the team-namespace ClusterRole, which the chart ships without
 *   binding it cluster-wide: the operator binds it to itself by a RoleBinding in each team
 *   namespace it makes (store/kubernetes/team-namespaces.ts), and the chart binds it in the
 *   system namespace, where the store keeps its own records and secrets. Lists and watches
 *   here are per namespace (store/kubernetes/namespaced-watches.ts);
 * - `system-namespace`: only ever in the operator's own namespace (a Role there).
 */
import { GROUP } from './names';

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'bind';
export type Scope = 'cluster' | 'team-namespaces' | 'system-namespace';

export interface ApiCall {
  /** What the call is for; call sites name it. */
  entry: string;
  /** The API group ('' for the core group). */
  group: string;
  /** Resources, with `/subresource` where one is called. */
  resources: string[];
  verbs: Verb[];
  scope: Scope;
  /**
   * Set where no request of this kind is made and the API server checks the right while
   * admitting another (so no audit line shows it): why it is needed.
   */
  checkedBy?: string;
  /** Granted for the team-namespace ClusterRole alone (`resourceNames`), not for every object of the resource. */
  teamNamespaceRoleOnly?: boolean;
}

/** What the drivers keep by server-side apply: read back, applied (a PATCH), deleted. */
const APPLIED: Verb[] = ['get', 'patch', 'delete'];
/** A server-side apply of an object not there yet creates it: the API server checks `create` on that PATCH. */
const CREATED_BY_APPLY = 'server-side apply of an object that is not there yet: the API server checks create on the PATCH that makes it';

/** `plurals`: the custom resources the store keeps, one CRD each (resources/crd.ts customResourcePlurals). */
export function kubernetesApiCalls(plurals: string[]): ApiCall[] {
  return [
    // The store (src/store/kubernetes/): a cache of every kind of its own, watched across namespaces (custom-resource-watches.ts).
    { entry: 'store: custom resources, watched', group: GROUP, resources: plurals, verbs: ['list', 'watch'], scope: 'cluster' },
    // get is a fresh read before a delete and after a conflict; update is a replace with a resourceVersion precondition (finalizers, labels, spec).
    { entry: 'store: custom resources, written', group: GROUP, resources: plurals, verbs: ['get', 'create', 'update', 'delete'], scope: 'team-namespaces' },
    { entry: "store: custom resources' status", group: GROUP, resources: plurals.map((p) => `${p}/status`), verbs: ['update'], scope: 'team-namespaces' },
    {
      entry: "drivers: owner references that block their owner's deletion",
      group: GROUP,
      resources: plurals.map((p) => `${p}/finalizers`),
      verbs: ['update'],
      scope: 'team-namespaces',
      checkedBy:
        "the OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift and other hardened clusters): an object whose ownerReference sets blockOwnerDeletion may be written only by who may update its owner's finalizers",
    },
    // A team's namespace is made the first time the store writes into it, labelled as the operator's; never changed or deleted.
    { entry: 'store: team namespaces, created', group: '', resources: ['namespaces'], verbs: ['create'], scope: 'cluster' },
    // The namespaces it made (by their label), watched: each gets its RoleBinding (also those made before an upgrade), and its watches start and stop with it.
    { entry: "team namespaces: the operator's, watched", group: '', resources: ['namespaces'], verbs: ['list', 'watch'], scope: 'cluster' },
    // The operator's rights in a team namespace: a RoleBinding there of its ServiceAccount to the team-namespace ClusterRole (409 when made already).
    {
      entry: "team namespaces: the operator's RoleBinding, created",
      group: 'rbac.authorization.k8s.io',
      resources: ['rolebindings'],
      verbs: ['create'],
      scope: 'cluster',
    },
    {
      entry: 'team namespaces: binding the team-namespace ClusterRole',
      group: 'rbac.authorization.k8s.io',
      resources: ['clusterroles'],
      verbs: ['bind'],
      scope: 'cluster',
      teamNamespaceRoleOnly: true,
      checkedBy:
        "RBAC's escalation check on the RoleBinding's create: binding a role needs bind on it (or holding its rights there already), and the operator may bind this one alone",
    },
    // Whether a new RoleBinding is in effect yet (the authorizer lags its write), before any call into the namespace.
    {
      entry: "team namespaces: the operator's rights, checked in effect",
      group: 'authorization.k8s.io',
      resources: ['selfsubjectaccessreviews'],
      verbs: ['create'],
      scope: 'cluster',
    },
    // The store's secrets (labelled) and what the drivers made (managed-by label), watched in each team namespace.
    { entry: 'store and drivers: secrets, watched', group: '', resources: ['secrets'], verbs: ['list', 'watch'], scope: 'team-namespaces' },
    // The store's secrets (create, replace, delete; get after a conflict); VPN agents' configuration (server-side apply); load balancers' certificates (get).
    {
      entry: 'store and drivers: secrets, written',
      group: '',
      resources: ['secrets'],
      verbs: ['get', 'create', 'update', 'patch', 'delete'],
      scope: 'team-namespaces',
    },
    // The store's records that are not secret (usage counts, leases, sessions): ConfigMaps labelled as the store's, watched in each team namespace.
    { entry: 'store: records, watched', group: '', resources: ['configmaps'], verbs: ['list', 'watch'], scope: 'team-namespaces' },
    // Created, replaced with a precondition, deleted; read after a conflict.
    { entry: 'store: records, written', group: '', resources: ['configmaps'], verbs: ['get', 'create', 'update', 'delete'], scope: 'team-namespaces' },
    // Leader election (src/controllers/leader-election.ts): one Lease, read, created once, renewed and handed over by replace.
    { entry: 'leader election: the Lease', group: 'coordination.k8s.io', resources: ['leases'], verbs: ['get', 'create', 'update'], scope: 'system-namespace' },
    // Servers' Pods (src/drivers/kubernetes/server-pods.ts) and, watched, every Pod the drivers made.
    { entry: 'drivers: Pods, watched', group: '', resources: ['pods'], verbs: ['list', 'watch'], scope: 'team-namespaces' },
    // Servers' Pods made, read and deleted; Jobs', load balancers' and VPN agents' Pods listed (exit codes, stats, agent status).
    { entry: 'drivers: Pods', group: '', resources: ['pods'], verbs: ['get', 'list', 'create', 'delete'], scope: 'team-namespaces' },
    // Cloud jobs (src/drivers/kubernetes/jobs.ts).
    // Jobs made, read and deleted; a CronJob's Jobs listed by their scheduled job's label, to be recorded as runs.
    { entry: 'job driver: Jobs', group: 'batch', resources: ['jobs'], verbs: ['get', 'list', 'create', 'delete'], scope: 'team-namespaces' },
    // Scheduled jobs as CronJobs (src/drivers/kubernetes/cron-jobs.ts): made, read, replaced to pause or resume, deleted on cancel.
    { entry: 'job driver: CronJobs', group: 'batch', resources: ['cronjobs'], verbs: ['get', 'create', 'update', 'delete'], scope: 'team-namespaces' },
    // A job's output: its Pod's log, kept in the job's status once it ended.
    // Backups as VolumeSnapshots (src/drivers/kubernetes/backup-snapshots.ts): which class to use, and the snapshots.
    {
      entry: 'backup driver: VolumeSnapshotClasses',
      group: 'snapshot.storage.k8s.io',
      resources: ['volumesnapshotclasses'],
      verbs: ['list'],
      scope: 'cluster',
    },
    {
      entry: 'backup driver: VolumeSnapshots',
      group: 'snapshot.storage.k8s.io',
      resources: ['volumesnapshots'],
      verbs: ['get', 'create', 'delete'],
      scope: 'team-namespaces',
    },
    { entry: 'job driver: Pod logs', group: '', resources: ['pods/log'], verbs: ['get'], scope: 'team-namespaces' },
    // Load balancers on HAProxy and VPN gateways' agents (src/drivers/kubernetes/applied.ts), file shares' claims.
    // Watched: Services (given an address) and claims (bound); a ConfigMap's hand edit is left to the resync.
    {
      entry: 'drivers: applied objects, watched',
      group: '',
      resources: ['services', 'persistentvolumeclaims'],
      verbs: ['list', 'watch'],
      scope: 'team-namespaces',
    },
    { entry: 'drivers: applied objects', group: '', resources: ['configmaps', 'services', 'persistentvolumeclaims'], verbs: APPLIED, scope: 'team-namespaces' },
    {
      entry: 'drivers: applied objects, created by apply',
      group: '',
      resources: ['configmaps', 'services', 'persistentvolumeclaims'],
      verbs: ['create'],
      scope: 'team-namespaces',
      checkedBy: CREATED_BY_APPLY,
    },
    { entry: 'drivers: Deployments, watched', group: 'apps', resources: ['deployments'], verbs: ['list', 'watch'], scope: 'team-namespaces' },
    { entry: 'drivers: Deployments', group: 'apps', resources: ['deployments'], verbs: APPLIED, scope: 'team-namespaces' },
    {
      entry: 'drivers: Deployments, created by apply',
      group: 'apps',
      resources: ['deployments'],
      verbs: ['create'],
      scope: 'team-namespaces',
      checkedBy: CREATED_BY_APPLY,
    },
    // Databases as StatefulSets (src/drivers/kubernetes/database-statefulset.ts): applied, read back, deleted; their Pods are watched.
    { entry: 'drivers: StatefulSets', group: 'apps', resources: ['statefulsets'], verbs: APPLIED, scope: 'team-namespaces' },
    {
      entry: 'drivers: StatefulSets, created by apply',
      group: 'apps',
      resources: ['statefulsets'],
      verbs: ['create'],
      scope: 'team-namespaces',
      checkedBy: CREATED_BY_APPLY,
    },
    // Databases as CloudNativePG Clusters and Databases (src/drivers/kubernetes/database-cloudnative-pg.ts): applied, read back, deleted; never watched.
    { entry: 'drivers: CloudNativePG Clusters', group: 'postgresql.cnpg.io', resources: ['clusters'], verbs: APPLIED, scope: 'team-namespaces' },
    {
      entry: 'drivers: CloudNativePG Clusters, created by apply',
      group: 'postgresql.cnpg.io',
      resources: ['clusters'],
      verbs: ['create'],
      scope: 'team-namespaces',
      checkedBy: CREATED_BY_APPLY,
    },
    { entry: 'drivers: CloudNativePG Databases', group: 'postgresql.cnpg.io', resources: ['databases'], verbs: APPLIED, scope: 'team-namespaces' },
    {
      entry: 'drivers: CloudNativePG Databases, created by apply',
      group: 'postgresql.cnpg.io',
      resources: ['databases'],
      verbs: ['create'],
      scope: 'team-namespaces',
      checkedBy: CREATED_BY_APPLY,
    },
    // Connection details (src/controllers/connection-details.ts): the Secret a resource's spec names, found by its label, written, withdrawn.
    { entry: 'connection details: Secrets', group: '', resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete'], scope: 'team-namespaces' },
    // Kubernetes Events of each status change and refusal (src/controllers/events-recorder.ts), beside the resource;
    // a repeat or a burst raises one Event's count (a merge patch).
    { entry: 'events recorder: Events', group: '', resources: ['events'], verbs: ['create', 'patch'], scope: 'team-namespaces' },
  ];
}
