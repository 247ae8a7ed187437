/**
 * What a resource family is, declared once: its schemas, rules, lifecycle and names.
 * From a FamilyDefinition come request validation, the OpenAPI document, the CRD, the
 * generic REST routes, the events of its state changes, its list behaviour and how the CLI
 * and the web console show it.
 */
import { TObject } from '@sinclair/typebox';
import type { CloudEvent } from './cloud-event';
import type { Store, StoredObject } from '../store/types';
import type { Config } from '../config';
import type { FieldError } from '../lib/errors';
import { fieldOf } from '../lib/unknown-values';
import type { ExternalRecord } from './external-record';
import type { PresentationDeclaration } from './presentation';
import type { FamilyCommand } from './commands';

/**
 * A Kubernetes-style condition (metav1.Condition): Ready and Synced after Crossplane,
 * Reconciling and Stalled after kstatus (transitions.ts conditionsFor).
 */
export interface Condition {
  type: 'Ready' | 'Synced' | 'Reconciling' | 'Stalled';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

/**
 * A stored resource's status or spec with no field promised, for the reads that check: one
 * made with kubectl has no status until its controller first writes it (nor the defaults of
 * a spec that was refused), and one written before a field existed lacks that field.
 */
export const asStored = <T extends object>(fields: T): Partial<T> => fields;

/** Status fields every family shares. */
export interface BaseStatus {
  status: string;
  status_reason: string | null;
  observed_generation: number;
  /** Hash of the spec fields whose change is reported as `<family>.updated`. */
  observed_config: string;
  deleted_at: string | null;
  conditions: Condition[];
  /** Events of committed changes that are not yet on the bus (a transactional outbox). */
  pending_events: CloudEvent[];
  /** Why the last reconcile passes failed, while they fail (controllers/reporting.ts); null or absent once one succeeds. */
  reconcile_error?: PassError | null;
  /** The last ask for a pass now (ObjectMeta.reconcileRequestedAt) that a pass has handled. */
  last_handled_reconcile_at?: string | null;
}

/** A reconcile pass's failure as the status keeps it: what was thrown, and since when it has been. */
export interface PassError {
  message: string;
  /** When a pass first failed with this message, in the run of failures it ends. */
  since: string;
}

/** Status of a family whose driver does the real work (src/drivers): what the driver recorded. */
export interface DrivenStatus extends BaseStatus {
  /** Absent (undefined) before the driver's first step and once released. */
  external?: ExternalRecord;
}

export type Resource<Spec = object, Status extends BaseStatus = BaseStatus> = StoredObject<Spec, Status>;

/**
 * Whether a stored object is of the family's kind, and so of its spec and status types:
 * the store keeps every object of a kind to that family's schemas.
 */
export function isOfFamily<Spec, Status extends BaseStatus>(
  family: FamilyDefinition<Spec, Status>,
  object: StoredObject<unknown, unknown>,
): object is Resource<Spec, Status> {
  return object.meta.kind === family.kind;
}

/** The lifecycle state of a stored object of any kind; undefined before its first status. */
export function lifecycleState(object: StoredObject<unknown, unknown>): string | undefined {
  const state = fieldOf(object.status, 'status');
  return typeof state === 'string' ? state : undefined;
}

/**
 * Why a webhook subscription's `events` and `filter` cannot be served: what they name that
 * no event the service emits has (events/catalog.ts subscriptionProblems). The catalog is
 * read from every family, the webhook family included, so the rules are handed it rather
 * than import it.
 */
/** An event of another category than the family's own, as dataEvents gives it. */
export interface ForeignEvent {
  type: string;
  data: Record<string, unknown>;
}

export type SubscriptionProblems = (events: readonly string[] | undefined, filter: Readonly<Record<string, unknown>> | null | undefined) => FieldError[];

/** What a family's rules may consult (events/catalog.ts ruleContextOf makes it). */
export interface RuleContext {
  config: Config;
  subscriptionProblems: SubscriptionProblems;
}

export interface FamilyDefinition<Spec = object, Status extends BaseStatus = BaseStatus> {
  /** Event category and error-code prefix: `load_balancer`. */
  name: string;
  /** Human name for messages: `load balancer`. */
  title: string;
  /** Custom resource kind and plural: `LoadBalancer`, `loadbalancers`. */
  kind: string;
  plural: string;
  shortNames: string[];
  /** Path segment under /api/v1: `load-balancers`. */
  path: string;
  idPrefix: string;
  /** Every lifecycle state; the first is the state a new resource starts in. */
  states: readonly string[];
  /** States in which PATCH and DELETE answer 409 resource_busy. */
  busyStates?: readonly string[];
  /**
   * States of work under way besides the first, the busy ones and `deleting` (a job's
   * `running`): the Reconciling condition is True in them (kstatus InProgress).
   */
  reconcilingStates?: readonly string[];
  /** States that are Ready=True. */
  readyStates: readonly string[];
  /** Whether responses carry meta.provider. */
  providerBacked: boolean;
  /** `immediate`: DELETE answers 200 with the resource `deleted`; `background`: 202 and `deleting`. */
  deletion: 'immediate' | 'background';
  /**
   * Which of the generic routes (api/routes/families.ts) serve it: all of them by default;
   * `reads`, the list and get with their watches, its changes having routes of their own
   * (webhooks, incidents); false, none, for families served by routes of their own
   * (settings, agent).
   */
  standardRoutes?: false | 'reads';
  /** False for families without DELETE (jobs end by `cancel` and are kept as history). */
  deletable?: boolean;
  /**
   * DELETE is refused with this 409 while the family's driver says the resource holds its
   * users' data (Driver.holdsData: a bucket's objects), unless the caller adds `?force=true`.
   */
  deletionGuard?: { code: string; message: string };
  /** States whose change is reported as `<family>.<state>`; by default every state but the first. */
  eventStates?: readonly string[];
  /** Names unique per team (409 name_taken). */
  uniqueNames?: boolean;
  /** The event of creation; null when the first state's event stands for it (jobs: `job.queued`). */
  creationEvent: string | null;
  /** Spec fields changed by actions that report their own events, not `<family>.updated`. */
  actionFields?: string[];
  schemas: {
    create: TObject;
    update?: TObject;
    spec: TObject;
    status: TObject;
    record: TObject;
  };
  /**
   * Resources of another family that list this one's id in a spec field (a server lists
   * its file shares): while one that is not deleted does, DELETE answers 409 resource_busy.
   */
  referencedBy?: { kind: string; title: string; field: string };
  /** A write-only secret of the family's request bodies. */
  secret?: SecretField<Spec>;
  /**
   * The family's per-team quota (docs/api.md, Quotas): how many a team may hold unless
   * CLOUDPLANE_QUOTAS says otherwise, and the states in which a resource no longer counts
   * besides `deleted` and `destroyed` (a finished job, a revoked key). None: no quota.
   */
  quota?: { default: number; releasedIn?: readonly string[] };
  /** Field descriptions and examples for docs, OpenAPI and kubectl explain. */
  description: string;
  /** The spec of a new resource from a validated create body; throws ApiError on a broken rule. */
  specFromCreate(body: object, ctx: RuleContext): Spec;
  /**
   * A new spec checked against the other resources it names and completed from them (a
   * database restored from a backup takes the backup's major): the API's create calls it
   * after specFromCreate. Throws ApiError on a broken rule.
   */
  resolveCreate?(spec: Spec, team: string, store: Store): Promise<Spec>;
  /** The spec after a validated PATCH body; throws ApiError on a broken rule. */
  applyUpdate?(spec: Spec, patch: object, ctx: RuleContext): Spec;
  /** Family-specific fields of a new status. */
  initialStatus(spec: Spec): Omit<Status, keyof BaseStatus>;
  /** The state a new resource starts in when not the family's first (a scheduled job starts `scheduled`, not `queued`). */
  firstState?(spec: Spec): string;
  /** The resource as the API shows it. Never includes secrets. */
  toRecord(resource: Resource<Spec, Status>): Record<string, unknown>;
  /**
   * Event verbs besides the creation and the states, each with what the event says for the
   * event catalog (src/events/catalog.ts), after "A <title> ": `updated` where a change of
   * the spec is settled into observed_config, and every verb extraEvents can return.
   */
  eventVerbs?: Readonly<Record<string, string>>;
  /** Extra event verbs for a status change, e.g. `backend_attached`; each one is in eventVerbs. */
  extraEvents?(previous: Resource<Spec, Status> | undefined, next: Resource<Spec, Status>): string[];
  /**
   * Events of another category that a status change tells, each with its own data: a
   * database's logical databases made or dropped are `data.*` events (events/catalog.ts
   * declares them). Only for a change of an existing status, in the same write as the rest.
   */
  dataEvents?(previous: Resource<Spec, Status>, next: Resource<Spec, Status>): ForeignEvent[];
  /** The name used for sorting and uniqueness. */
  nameOf(spec: Spec): string;
  /** How the family's lists read; the stores index it so (src/store/list-index.ts). */
  listing?: ListingRules;
  /**
   * How the CLI and the web console show the family: headings, list columns, actions,
   * delete options. Each part left out has a default (resources/presentation-of.ts).
   */
  presentation?: PresentationDeclaration;
  /** Its API calls beyond the generic ones, as the CLI offers them (resources/commands.ts). */
  commands?: readonly FamilyCommand[];
  /**
   * Cluster mode: what the Secret named by a resource's `writeConnectionSecretToRef` holds
   * (controllers/connection-details.ts), from its status once known; null while there is
   * nothing to publish yet. Only what the record already shows, never a credential of the
   * operator's own. `namespace` is the resource's, for details relative to it (a claim's
   * name). A family whose spec offers the reference must declare it (checked at start-up).
   */
  connectionDetails?(resource: Resource<Spec, Status>, namespace: string): ConnectionDetails | null;
}

/**
 * A create body as a family's rules read it: the spec's fields, those in `Defaulted` optional
 * (the rules fill them in). A POST body holds some of them; the spec of a custom resource,
 * judged as its create body on adoption, may hold every one.
 */
export type CreateBody<Spec, Defaulted extends keyof Spec> = Omit<Spec, Defaulted> & Partial<Pick<Spec, Defaulted>>;

export interface ListingRules {
  /** States a list leaves out unless asked for by `status`; by default `deleted` and `destroyed`. */
  hiddenStates?: readonly string[];
  /** Spec fields a list filters on by equality (a delivery's `webhook_id`). */
  filterFields?: readonly string[];
  /** One list of every team's objects (teams themselves), not one per team. */
  acrossTeams?: boolean;
  /** The state of an object whose status has none yet; without it, such an object is not listed. */
  defaultState?: string;
}

/**
 * A write-only secret a family accepts in its request bodies (a VPN pre-shared key). It is
 * kept in a store secret, never in the resource: the spec holds only a version number that
 * a rotation bumps, so the reconciler re-applies the key and `<family>.updated` is emitted.
 */
export interface SecretField<Spec = object> {
  /** Body field of create and PATCH, e.g. `pre_shared_key`. */
  field: string;
  /** Name of the store secret of a resource. */
  secretName(id: string): string;
  /** The value to keep when the create body has none; null for none. */
  generate?(spec: Spec): string | null;
  /** Spec field counting rotations; a family checks it names one (`satisfies keyof Spec`). */
  versionField: string;
  /**
   * The create's answer shows the value once, under `field`, described so (a database's
   * generated password); without it, no answer ever holds the value.
   */
  shownOnCreate?: string;
}

/** A connection Secret's entries: names a consumer reads (`address`, `endpoint`, ...) and their text. */
export type ConnectionDetails = Record<string, string>;

/** The entries of `fields` that hold text, the others left out (a detail not known yet). */
export const presentDetails = (fields: Readonly<Record<string, string | null | undefined>>): ConnectionDetails =>
  Object.fromEntries(Object.entries(fields).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''));

export type AnyFamily = FamilyDefinition;
