/**
 * Alert policies (`/api/v1/alert-policies`): a condition over what the service observes of
 * the team's resources. The family is named `alert` so that its events are the spec's
 * `alert.triggered` and `alert.resolved`. The API writes the spec only; the policy's
 * reconciler (controllers/alert-policy.ts) evaluates the condition and writes which
 * targets are pending or firing, and opens and resolves their incidents.
 *
 * The condition is one object told apart by `type`; each type accepts only its own fields
 * (422 validation_failed names any other), so one schema serves the API, the OpenAPI
 * document and the CRD alike.
 */
import { Type } from '@sinclair/typebox';
import { validationFailed, type FieldError } from '../lib/errors';
import type { BaseStatus, CreateBody, FamilyDefinition, Resource } from './family';
import { asStored } from './family';
import { baseRecordProperties, baseStatusProperties, NullableTimestamp, ResourceName, strictObject, Timestamp, recordTimes } from './schema-kit';
import { BASIC_COLUMNS } from './presentation';

const STATES = ['ok', 'triggered', 'deleted', 'failed'] as const;

export const CONDITION_TYPES = ['backend_unhealthy', 'tunnel_down', 'resource_failed', 'job_failed', 'webhook_disabled'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

/** Families whose resources a `resource_failed` condition watches: those a driver provisions and DELETE removes. */
export const WATCHED_FAMILIES = ['load_balancer', 'vpn_gateway', 'server', 'bucket', 'file_share'] as const;

export interface AlertCondition {
  type: ConditionType;
  /** The one resource watched; absent: every resource the type applies to. */
  resource_id?: string;
  /** resource_failed only: the family watched. */
  family?: string;
  /** backend_unhealthy and tunnel_down: how long the state must last before the alert fires. */
  for_minutes?: number;
  for_seconds?: number;
}

export interface AlertPolicySpec {
  name: string;
  condition: AlertCondition;
  enabled: boolean;
}

/** One resource the condition holds for: `pending` until it has held for the policy's duration, then `firing`. */
export interface AlertTarget {
  resource_id: string;
  state: 'pending' | 'firing';
  /** When the condition was first seen to hold for it. */
  since: string;
  triggered_at: string | null;
  /** The incident the alert opened; null while pending. */
  incident_id: string | null;
  /** What holds, in words: `backends svr_… unhealthy`. */
  detail: string;
}

export interface AlertPolicyStatus extends BaseStatus {
  targets: AlertTarget[];
  /**
   * job_failed: per job, the finish time of the latest failure already alerted on and
   * resolved, so the same failure does not fire again.
   */
  handled: Record<string, string>;
  /** The latest target that fired or resolved: what an `alert.triggered` or `alert.resolved` event is about. */
  last_transition: AlertTransition | null;
}

export interface AlertTransition {
  resource_id: string;
  change: 'triggered' | 'resolved';
  incident_id: string | null;
  at: string;
}

export type AlertPolicy = Resource<AlertPolicySpec, AlertPolicyStatus>;

/** Which id prefix a condition's resource_id may have. */
const PREFIXES: Record<ConditionType, readonly string[]> = {
  backend_unhealthy: ['lb'],
  tunnel_down: ['vpn'],
  resource_failed: ['lb', 'vpn', 'svr', 'bkt', 'fs'],
  job_failed: ['job'],
  webhook_disabled: ['wh'],
};
const DURATION_TYPES: readonly ConditionType[] = ['backend_unhealthy', 'tunnel_down'];
export const MAX_FOR_SECONDS = 86_400;

/** How long the condition must hold before the alert fires, in ms. */
export const durationMsOf = (condition: AlertCondition): number => ((condition.for_seconds ?? 0) + (condition.for_minutes ?? 0) * 60) * 1000;

const ConditionSchema = strictObject(
  {
    type: Type.String({
      enum: [...CONDITION_TYPES],
      description:
        "backend_unhealthy: a load balancer has a backend unhealthy; tunnel_down: a VPN gateway's tunnel is down; resource_failed: a resource ended failed; " +
        'job_failed: a job (or a run of a scheduled job) failed; webhook_disabled: the service disabled a webhook subscription.',
    }),
    resource_id: Type.Optional(
      Type.String({
        pattern: '^[a-z]+_[0-9a-z]{16,26}$',
        description:
          'The one resource watched (lb_ for backend_unhealthy, vpn_ for tunnel_down, lb_/vpn_/svr_/bkt_/fs_ for resource_failed, job_ for job_failed, wh_ for webhook_disabled); absent: every one of the team.',
      }),
    ),
    family: Type.Optional(Type.String({ enum: [...WATCHED_FAMILIES], description: 'resource_failed only: watch only this family.' })),
    for_minutes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_FOR_SECONDS / 60,
        description: 'backend_unhealthy and tunnel_down: minutes the state must last before the alert fires; default 0.',
      }),
    ),
    for_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_FOR_SECONDS,
        description: 'The same in seconds, for finer durations; give for_minutes or for_seconds, not both.',
      }),
    ),
  },
  'What the policy watches, told apart by `type`; each type takes only the fields its description names.',
);

const TransitionSchema = Type.Union(
  [
    strictObject({
      resource_id: Type.String({ description: 'The resource.' }),
      change: Type.String({ enum: ['triggered', 'resolved'], description: 'Whether the alert fired or resolved for it.' }),
      incident_id: Type.Union([Type.String(), Type.Null()], { description: 'Its incident.' }),
      at: Timestamp('When.'),
    }),
    Type.Null(),
  ],
  { description: 'The latest resource the alert fired or resolved for: what an alert.triggered or alert.resolved event is about. Null before the first.' },
);

const TargetSchema = strictObject({
  resource_id: Type.String({ description: 'The resource the condition holds for.' }),
  state: Type.String({
    enum: ['pending', 'firing'],
    description: "pending: the condition holds, not yet for the policy's duration; firing: the alert is triggered.",
  }),
  since: Timestamp('When the condition was first seen to hold.'),
  triggered_at: NullableTimestamp('When the alert fired; null while pending.'),
  incident_id: Type.Union([Type.String(), Type.Null()], { description: 'The incident the alert opened; null while pending.' }),
  detail: Type.String({ description: 'What holds, in words.' }),
});

/** The condition's rules beyond its shape: fields of another type, a resource of another family, a duration given twice. */
export function conditionProblems(condition: AlertCondition): FieldError[] {
  const problems: FieldError[] = [];
  const at = (field: string) => `condition.${field}`;
  const { type } = condition;
  if (condition.family !== undefined && type !== 'resource_failed') problems.push({ field: at('family'), message: 'applies to resource_failed only' });
  for (const field of ['for_minutes', 'for_seconds'] as const) {
    if (condition[field] !== undefined && !DURATION_TYPES.includes(type))
      problems.push({ field: at(field), message: `applies to ${DURATION_TYPES.join(' and ')} only` });
  }
  if (condition.for_minutes !== undefined && condition.for_seconds !== undefined)
    problems.push({ field: at('for_seconds'), message: 'give for_minutes or for_seconds, not both' });
  if (condition.resource_id !== undefined) {
    const prefix = condition.resource_id.slice(0, condition.resource_id.indexOf('_'));
    if (!PREFIXES[type].includes(prefix))
      problems.push({ field: at('resource_id'), message: `must be the id of ${PREFIXES[type].map((p) => `a ${p}_`).join(', ')} resource for ${type}` });
    const { family } = condition;
    if (family && PREFIXES_OF_FAMILY[family] && PREFIXES_OF_FAMILY[family] !== prefix)
      problems.push({ field: at('resource_id'), message: `is not a ${family.replace(/_/g, ' ')}` });
  }
  return problems;
}

const PREFIXES_OF_FAMILY: Record<string, string> = { load_balancer: 'lb', vpn_gateway: 'vpn', server: 'svr', bucket: 'bkt', file_share: 'fs' };

function assertCondition(condition: AlertCondition): AlertCondition {
  const problems = conditionProblems(condition);
  if (problems.length > 0) throw validationFailed(problems);
  return condition;
}

export const alertPolicyFamily: FamilyDefinition<AlertPolicySpec, AlertPolicyStatus> = {
  name: 'alert',
  quota: { default: 100 },
  title: 'alert policy',
  kind: 'AlertPolicy',
  plural: 'alertpolicies',
  shortNames: ['cpalert'],
  path: 'alert-policies',
  idPrefix: 'alp',
  states: STATES,
  readyStates: ['ok', 'triggered'],
  providerBacked: false,
  deletion: 'immediate',
  creationEvent: 'created',
  eventStates: ['deleted'],
  eventVerbs: {
    updated: 'had its name, condition or `enabled` changed.',
    triggered: 'fired: its condition has held for its duration for a resource (listed in `targets` as firing); an incident is opened for it.',
    resolved: 'resolved: its condition no longer holds for a resource that was firing (or the policy was disabled); its incident is resolved with it.',
  },
  uniqueNames: false,
  description: "An alert policy: a condition over the team's resources that, once it holds, triggers an alert and opens an incident.",
  schemas: {
    create: strictObject({
      name: ResourceName('Policy name, 2-40 characters.'),
      condition: ConditionSchema,
      enabled: Type.Optional(Type.Boolean({ description: 'Whether the policy is evaluated; default true.' })),
    }),
    update: strictObject({
      name: Type.Optional(ResourceName()),
      condition: Type.Optional(ConditionSchema),
      enabled: Type.Optional(Type.Boolean({ description: 'false resolves what fires and evaluates nothing until true again.' })),
    }),
    spec: strictObject({ name: ResourceName(), condition: ConditionSchema, enabled: Type.Boolean({ description: 'Whether the policy is evaluated.' }) }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      // One target per resource (the controller adds a resource only when it has none).
      targets: Type.Array(TargetSchema, {
        description: 'Resources the condition holds for.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['resource_id'],
      }),
      handled: Type.Record(Type.String(), Type.String(), {
        description: 'job_failed: per job, the finish time of the latest failure already alerted on and resolved.',
      }),
      last_transition: TransitionSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('alp', STATES),
      name: ResourceName(),
      condition: ConditionSchema,
      enabled: Type.Boolean({ description: 'Whether the policy is evaluated.' }),
      targets: Type.Array(TargetSchema, { description: 'Resources the condition holds for now: pending (not yet for the duration) or firing.' }),
      last_transition: TransitionSchema,
    }),
  },
  specFromCreate: (body: CreateBody<AlertPolicySpec, 'enabled'>) => ({
    name: body.name,
    condition: assertCondition(body.condition),
    enabled: body.enabled ?? true,
  }),
  applyUpdate: (spec, patch: Partial<AlertPolicySpec>) => ({
    ...spec,
    ...patch,
    condition: patch.condition ? assertCondition(patch.condition) : spec.condition,
  }),
  initialStatus: () => ({ targets: [], handled: {}, last_transition: null }),
  /** `triggered` for each write that makes a target fire, `resolved` for each that ends one. */
  extraEvents(previous, next) {
    const firing = (policy: AlertPolicy | undefined) => new Set((policy?.status.targets ?? []).filter((t) => t.state === 'firing').map((t) => t.resource_id));
    const before = firing(previous);
    const after = firing(next);
    return [...([...after].some((id) => !before.has(id)) ? ['triggered'] : []), ...([...before].some((id) => !after.has(id)) ? ['resolved'] : [])];
  },
  nameOf: (spec) => spec.name,
  toRecord: ({ meta, spec, status }) => {
    const [given, written] = [asStored(spec), asStored(status)];
    return {
      id: meta.id,
      name: spec.name,
      status: status.status,
      status_reason: status.status_reason ?? null,
      condition: spec.condition,
      enabled: given.enabled ?? true,
      targets: written.targets ?? [],
      last_transition: written.last_transition ?? null,
      ...recordTimes(meta, status),
    };
  },
  presentation: {
    columns: [
      ...BASIC_COLUMNS,
      { key: 'condition', label: 'Condition' },
      { key: 'enabled', label: 'Enabled' },
      { key: 'targets', label: 'Targets', secondary: true },
    ],
  },
};
