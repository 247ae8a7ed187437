/** Schema pieces shared by every family, so that each rule is written once. */
import { Type, TProperties } from '@sinclair/typebox';

/** A string of a fixed set, typed as that set; the schema stays `{ type: string, enum }`, as ajv, OpenAPI and the CRDs read it. */
export const StringEnum = <T extends string>(values: readonly T[], options: { description?: string; default?: T } = {}) =>
  Type.Unsafe<T>(Type.String({ ...options, enum: [...values] }));
export const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
export const NullableTimestamp = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });
export const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()], { description: schema.description });

export const ResourceName = (description = 'Human-readable name, 2-40 characters.') =>
  Type.String({ minLength: 2, maxLength: 40, pattern: '^\\S(.*\\S)?$', description });

export const Region = (description = 'Region id from GET /api/v1/regions, e.g. fra1.') => Type.String({ minLength: 1, maxLength: 32, description });

export const IdOf = (prefix: string, description: string) => Type.String({ pattern: `^${prefix}_[0-9a-z]{16,26}$`, description });

/**
 * The limits of metav1.Condition (k8s.io/apimachinery), which kstatus, Flux and Argo CD
 * read: the API server refuses a status whose conditions break them.
 */
export const CONDITION_REASON_PATTERN = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';
export const CONDITION_TYPE_PATTERN = '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';
export const CONDITION_REASON_MAX = 1024;
export const CONDITION_MESSAGE_MAX = 32768;

export const ConditionSchema = Type.Object(
  {
    type: Type.String({
      maxLength: 316,
      pattern: CONDITION_TYPE_PATTERN,
      description: 'Ready, Synced, Reconciling (True while work is under way) or Stalled (True when failed).',
    }),
    status: Type.String({ enum: ['True', 'False', 'Unknown'], description: 'True, False or Unknown.' }),
    reason: Type.String({
      minLength: 1,
      maxLength: CONDITION_REASON_MAX,
      pattern: CONDITION_REASON_PATTERN,
      description: 'Machine-readable reason in CamelCase.',
    }),
    message: Type.String({ maxLength: CONDITION_MESSAGE_MAX, description: 'Human-readable detail; may be empty.' }),
    lastTransitionTime: Type.String({ format: 'date-time', description: 'When status last changed.' }),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64', description: 'The generation this condition describes.' })),
  },
  { additionalProperties: false },
);

/** Status fields every family has (BaseStatus), as a schema for the CRD. */
export const baseStatusProperties = (states: readonly string[]) => ({
  status: Type.String({ enum: [...states], description: `Lifecycle state: ${states.join(', ')}.` }),
  status_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why the resource is in its state, when it failed or is degraded.' }),
  observed_generation: Type.Integer({ description: 'The spec generation the reconciler last acted on.' }),
  observed_config: Type.String({ description: 'Hash of the configuration last applied.' }),
  deleted_at: NullableTimestamp('When deletion was requested.'),
  // One condition per type, as metav1.Condition lists are (server-side apply merges them by type).
  conditions: Type.Array(ConditionSchema, {
    description: 'Ready and Synced conditions; Reconciling and Stalled while True.',
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  }),
  pending_events: Type.Array(Type.Object({}, { additionalProperties: true }), {
    description: 'Events of committed changes not yet published to the event bus.',
  }),
  updated_at: Type.Optional(NullableTimestamp('When the status last changed; kept here in cluster mode, where status writes cannot touch annotations.')),
  reconcile_error: Type.Optional(
    Type.Union([PassErrorSchema(), Type.Null()], { description: 'Why the reconcile passes fail, while they do; null once one succeeds.' }),
  ),
  last_handled_reconcile_at: Type.Optional(
    Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
      description: 'The last reconcile asked for (annotation cloudplane.dev/reconcile-requested-at) that a pass handled.',
    }),
  ),
});

/** How long a pass's error may be in a status and a record: a provider's error text can be a page. */
export const PASS_ERROR_MAX = 1024;

function PassErrorSchema() {
  return strictObject(
    {
      message: Type.String({ maxLength: PASS_ERROR_MAX, description: 'What the last failed pass said: the driver or provider error.' }),
      since: Timestamp('When passes began to fail with this message.'),
    },
    'The error of the reconcile passes that fail, until one succeeds.',
  );
}

/**
 * Why a driver-backed resource is or is not ready, as its record shows it (docs/api.md,
 * "Why a resource is not ready"): its conditions, and the error its passes fail with.
 */
export const reconcileRecordProperties = () => ({
  conditions: Type.Array(
    strictObject({
      type: Type.String({ description: 'Ready, Synced, Reconciling (present while work is under way) or Stalled (present when failed).' }),
      status: Type.String({ enum: ['True', 'False', 'Unknown'] }),
      reason: Type.String({ description: 'Machine-readable reason in CamelCase: ReconcileError while passes fail.' }),
      message: Type.String({ description: 'Human-readable detail; may be empty.' }),
      last_transition_time: Timestamp('When the status of the condition last changed.'),
    }),
    { description: "Kubernetes-style conditions, as kubectl sees them in the custom resource's status." },
  ),
  reconcile_error: Type.Union([PassErrorSchema(), Type.Null()], {
    description: 'Why the reconcile passes of this resource fail (a provider unreachable, an error of the driver), while they do; null once one succeeds.',
  }),
  last_handled_reconcile_at: Type.Union([Type.String(), Type.Null()], {
    description:
      'The last reconcile asked for (POST .../reconcile, or the annotation cloudplane.dev/reconcile-requested-at) that a pass has handled; null before any.',
  }),
});

/** The values of reconcileRecordProperties, from a stored status. */
export function reconcileRecord(status: {
  conditions?: ReadonlyArray<{ type: string; status: string; reason: string; message: string; lastTransitionTime: string }>;
  reconcile_error?: { message: string; since: string } | null;
  last_handled_reconcile_at?: string | null;
}) {
  return {
    conditions: (status.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      last_transition_time: c.lastTransitionTime,
    })),
    reconcile_error: status.reconcile_error ?? null,
    last_handled_reconcile_at: status.last_handled_reconcile_at ?? null,
  };
}

/** Record fields every family shows in API responses. */
export const baseRecordProperties = (prefix: string, states: readonly string[]) => ({
  id: IdOf(prefix, `Unique id, prefix ${prefix}.`),
  status: Type.String({ enum: [...states], description: `Lifecycle state: ${states.join(', ')}.` }),
  status_reason: Type.Union([Type.String(), Type.Null()], { description: 'Human-readable reason for a failed or degraded state; null otherwise.' }),
  created_at: Timestamp('Creation time, ISO 8601 UTC.'),
  updated_at: Timestamp('Time of the last change, ISO 8601 UTC.'),
  deleted_at: NullableTimestamp('Time of deletion, ISO 8601 UTC; null unless deleted.'),
});

/** The values of the record's timestamps (baseRecordProperties), from the stored object. */
export interface RecordTimes {
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export const recordTimes = (meta: { createdAt: string; updatedAt: string }, status: { deleted_at?: string | null }): RecordTimes => ({
  created_at: meta.createdAt,
  updated_at: meta.updatedAt,
  deleted_at: status.deleted_at ?? null,
});

export const strictObject = <T extends TProperties>(properties: T, description?: string) =>
  Type.Object(properties, { additionalProperties: false, description });

/**
 * What a family's driver recorded of its own work on a resource (status.external): free
 * form, since each driver records its own; absent before its first step and once released.
 */
export const ExternalRecordSchema = Type.Optional(
  Type.Object(
    {},
    {
      additionalProperties: true,
      description: "The driver's record of what it made for this resource; absent before it made anything and once it was released.",
    },
  ),
);

/** The spec field naming the Secret a managed resource's connection details are written to (controllers/connection-details.ts). */
export const CONNECTION_SECRET_FIELD = 'writeConnectionSecretToRef';
export const connectionSecretProperty = () => ({
  [CONNECTION_SECRET_FIELD]: Type.Optional(
    strictObject(
      {
        name: Type.String({
          minLength: 1,
          maxLength: 253,
          pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
          description: 'Name of the Secret, in the same namespace.',
        }),
      },
      'Cluster mode, manifests only: the Secret in this namespace that the operator writes the connection details (address, endpoint, mount target) to once they are known, owned by this resource.',
    ),
  ),
});

/** The spec side of connectionSecretProperty. */
export interface ConnectionSecretSpec {
  writeConnectionSecretToRef?: { name: string };
}
