/**
 * Incidents: list (with `status`), get, and the two actions, acknowledge and resolve. An
 * incident is opened by an alert policy, never by POST, and is kept as history (no DELETE).
 * An action writes the intent and who asked; the incident's reconciler moves the status.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope, findForChange, findResource, principalOf, VERSIONED_CHANGE } from './families';
import { tagAnswer } from '../entity-tags';
import { listPage, listQueryOf, listQuerySchema } from '../list';
import { Incident, incidentFamily as family } from '../../resources/incident';
import { invalidState } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { writeAndAwait } from '../awaiting';
import type { ApiApp } from '../api-app';
import { recordOf } from '../../resources/record-of';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Incident id.' }) });
const tags = [family.title];

interface Action {
  name: 'acknowledge' | 'resolve';
  summary: string;
  description: string;
  /** The state the action leads to, and the states it leaves alone (200, nothing changes). */
  target: string;
  already: string[];
  ask: (incident: Incident, actor: string) => Record<string, unknown> | null;
}

const ACTIONS: Action[] = [
  {
    name: 'acknowledge',
    summary: 'Acknowledge an open incident',
    description:
      'Says someone is on it: the incident is `acknowledged` (incident.acknowledged). Acknowledging an acknowledged incident changes nothing; a resolved one answers 409 invalid_state.',
    target: 'acknowledged',
    already: ['acknowledged'],
    ask: (incident, actor) => (incident.spec.acknowledge_requested ? null : { ...incident.spec, acknowledge_requested: true, acknowledged_by: actor }),
  },
  {
    name: 'resolve',
    summary: 'Resolve an incident',
    description:
      'Closes the incident: it is `resolved` (incident.resolved). Its alert goes on firing while the condition holds, and opens no new incident until it has resolved (a job_failed alert resolves with its incident). A resolved incident answers 409 invalid_state.',
    target: 'resolved',
    already: [],
    ask: (incident, actor) => (incident.spec.resolve_requested ? null : { ...incident.spec, resolve_requested: true, resolved_by: actor }),
  },
];

function assertActionable(incident: Incident, action: Action): void {
  const state = incident.status.status;
  if (state === 'resolved' || state === 'failed') throw invalidState(`The incident is already ${state}; it cannot be ${action.target}.`);
}

function registerAction(app: ApiApp, ctx: ApiContext, action: Action): void {
  app.post(`/api/v1/${family.path}/:id/${action.name}`, {
    schema: {
      tags,
      operationId: `${action.name}Incident`,
      summary: action.summary,
      description: action.description,
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, ...VERSIONED_CHANGE.preconditionFailed },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const { found, ifMatch } = await findForChange<Incident>(ctx, family, request, id);
      assertActionable(found, action);
      if (action.already.includes(found.status.status)) {
        tagAnswer(reply, found);
        return send(ctx, request, reply, 200, recordOf(family, found));
      }
      let asked = found;
      const ask = async () => {
        asked = await ctx.writer.mutateSpec<Incident>(family, team, id, (incident) => action.ask(incident, key), key, ifMatch);
      };
      const moved = await writeAndAwait<Incident>(ctx.store, family.kind, team, id, ask, (incident) =>
        [action.target, 'resolved'].includes(incident.status.status),
      );
      // Resolved otherwise before the acknowledgement reached it: 409, as acknowledging a resolved incident.
      if (moved && moved.status.status !== action.target) assertActionable(moved, action);
      tagAnswer(reply, moved ?? asked);
      const at = nowIso();
      const projected = { ...found, status: { ...found.status, status: action.target, [`${action.target}_at`]: at, [`${action.target}_by`]: key } };
      return send(ctx, request, reply, 200, recordOf(family, moved ?? projected));
    },
  });
}

export function registerIncidentRoutes(app: ApiApp, ctx: ApiContext): void {
  app.get(`/api/v1/${family.path}`, {
    schema: {
      tags,
      operationId: 'listIncidents',
      summary: 'List incidents',
      description: 'Newest first by default; `status=open` (or acknowledged, resolved) lists those only.',
      querystring: listQuerySchema(family.states),
      response: { 200: envelopeOf(Type.Array(family.schemas.record)), 422: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { page, nextCursor } = await listPage(ctx.store, family, principalOf(request).team, listQueryOf(request), ctx.cursorKey);
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((r) => recordOf(family, r)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`/api/v1/${family.path}/:id`, {
    schema: {
      tags,
      operationId: 'getIncident',
      summary: 'Get an incident',
      params: IdParams,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const incident = await findResource<Incident>(ctx, family, principalOf(request).team, request.params.id);
      tagAnswer(reply, incident);
      return send(ctx, request, reply, 200, recordOf(family, incident));
    },
  });

  for (const action of ACTIONS) registerAction(app, ctx, action);
}
