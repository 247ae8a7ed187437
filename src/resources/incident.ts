/**
 * Incidents (`/api/v1/incidents`): opened by an alert policy when its alert fires for a
 * resource, at most one open at a time per policy and resource. A person acknowledges and
 * resolves one; an alert that resolves by itself resolves its incident. Requests and the
 * policy's reconciler write only the intent (`acknowledge_requested`, `resolve_requested`,
 * with who asked) into the spec; the incident's reconciler (controllers/incident.ts) moves
 * the status, so kubectl and the API go the same way. Incidents are history: no DELETE.
 */
import { Type } from '@sinclair/typebox';
import type { BaseStatus, CreateBody, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
import { baseRecordProperties, baseStatusProperties, IdOf, NullableTimestamp, strictObject } from './schema-kit';
import { CONDITION_TYPES } from './alert';

const STATES = ['open', 'acknowledged', 'resolved', 'failed'] as const;
export const CLOSED_INCIDENT_STATES = ['resolved', 'failed'];

export interface IncidentSpec {
  title: string;
  policy_id: string;
  condition_type: string;
  resource_id: string;
  acknowledge_requested: boolean;
  acknowledged_by: string | null;
  resolve_requested: boolean;
  resolved_by: string | null;
}

export interface IncidentStatus extends BaseStatus {
  opened_at: string | null;
  acknowledged_at: string | null;
  acknowledged_by: string | null;
  resolved_at: string | null;
  resolved_by: string | null;
}

export type Incident = Resource<IncidentSpec, IncidentStatus>;

const Title = Type.String({ minLength: 1, maxLength: 300, description: 'What happened, in words.' });
const Actor = Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
  description: 'Who asked: an API key or user id, or `system` for the alert resolving by itself.',
});

/** Incidents are opened by alert policies: listed, read, acknowledged and resolved (api/routes/incidents.ts). */
const INCIDENT_COMMANDS: readonly FamilyCommand[] = [
  { words: ['list'], summary: 'List incidents', method: 'GET', path: '', query: { list: true }, paged: true },
  { words: ['get'], summary: 'Get an incident', method: 'GET', path: '/{id}', versioned: true },
  { words: ['acknowledge'], summary: 'Acknowledge an open incident', method: 'POST', path: '/{id}/acknowledge', versioned: true, dryRun: true },
  { words: ['resolve'], summary: 'Resolve an incident', method: 'POST', path: '/{id}/resolve', versioned: true, dryRun: true },
];

export const incidentFamily: FamilyDefinition<IncidentSpec, IncidentStatus> = {
  name: 'incident',
  title: 'incident',
  kind: 'Incident',
  plural: 'incidents',
  shortNames: ['cpinc'],
  path: 'incidents',
  idPrefix: 'inc',
  states: STATES,
  readyStates: ['open', 'acknowledged', 'resolved'],
  providerBacked: false,
  deletion: 'immediate',
  standardRoutes: 'reads',
  deletable: false,
  creationEvent: 'opened',
  eventStates: ['acknowledged', 'resolved'],
  actionFields: ['acknowledge_requested', 'acknowledged_by', 'resolve_requested', 'resolved_by'],
  description: 'An incident: opened when an alert policy fires for a resource; acknowledged and resolved by the team, or resolved with its alert.',
  schemas: {
    create: strictObject({
      title: Title,
      policy_id: IdOf('alp', 'The alert policy that opened it.'),
      condition_type: Type.String({ enum: [...CONDITION_TYPES] }),
      resource_id: Type.String({ maxLength: 64 }),
    }),
    spec: strictObject({
      title: Title,
      policy_id: IdOf('alp', 'The alert policy that opened it.'),
      condition_type: Type.String({ enum: [...CONDITION_TYPES], description: "The type of the policy's condition." }),
      resource_id: Type.String({ maxLength: 64, description: 'The resource the alert fired for.' }),
      acknowledge_requested: Type.Boolean({ description: 'Set to true to acknowledge the incident.' }),
      acknowledged_by: Actor,
      resolve_requested: Type.Boolean({ description: 'Set to true to resolve the incident.' }),
      resolved_by: Actor,
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      opened_at: NullableTimestamp('When it was opened.'),
      acknowledged_at: NullableTimestamp('When it was acknowledged.'),
      acknowledged_by: Actor,
      resolved_at: NullableTimestamp('When it was resolved.'),
      resolved_by: Actor,
    }),
    record: strictObject({
      ...baseRecordProperties('inc', STATES),
      title: Title,
      policy_id: IdOf('alp', 'The alert policy that opened it.'),
      condition_type: Type.String({ enum: [...CONDITION_TYPES], description: "The type of the policy's condition." }),
      resource_id: Type.String({ description: 'The resource the alert fired for.' }),
      opened_at: NullableTimestamp('When it was opened.'),
      acknowledged_at: NullableTimestamp('When it was acknowledged; null before.'),
      acknowledged_by: Actor,
      resolved_at: NullableTimestamp('When it was resolved; null while open or acknowledged.'),
      resolved_by: Actor,
    }),
  },
  specFromCreate: (body: CreateBody<IncidentSpec, 'acknowledge_requested' | 'acknowledged_by' | 'resolve_requested' | 'resolved_by'>) => ({
    title: body.title,
    policy_id: body.policy_id,
    condition_type: body.condition_type,
    resource_id: body.resource_id,
    acknowledge_requested: Boolean(body.acknowledge_requested),
    acknowledged_by: body.acknowledged_by ?? null,
    resolve_requested: Boolean(body.resolve_requested),
    resolved_by: body.resolved_by ?? null,
  }),
  initialStatus: () => ({ opened_at: new Date().toISOString(), acknowledged_at: null, acknowledged_by: null, resolved_at: null, resolved_by: null }),
  nameOf: (spec) => spec.title,
  commands: INCIDENT_COMMANDS,
  toRecord: ({ meta, spec, status }) => ({
    id: meta.id,
    title: spec.title,
    status: status.status,
    status_reason: status.status_reason ?? null,
    policy_id: spec.policy_id,
    condition_type: spec.condition_type,
    resource_id: spec.resource_id,
    opened_at: status.opened_at ?? meta.createdAt,
    acknowledged_at: status.acknowledged_at ?? null,
    acknowledged_by: status.acknowledged_by ?? null,
    resolved_at: status.resolved_at ?? null,
    resolved_by: status.resolved_by ?? null,
    created_at: meta.createdAt,
    updated_at: meta.updatedAt,
    deleted_at: null,
  }),
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'status', label: 'Status' },
      { key: 'title', label: 'Title' },
      { key: 'resource_id', label: 'Resource' },
      { key: 'opened_at', label: 'Opened at' },
      { key: 'acknowledged_by', label: 'Acknowledged by' },
      { key: 'resolved_at', label: 'Resolved at', secondary: true },
    ],
    // The generic pages read and list; these two are its only writes (api/routes/incidents.ts).
    actions: [
      { name: 'acknowledge', label: 'Acknowledge', allowedIn: ['open'] },
      { name: 'resolve', label: 'Resolve', allowedIn: ['open', 'acknowledged'] },
    ],
    console: true,
  },
};
