/**
 * Incidents' two actions, acknowledge and resolve; their list (with `status`) and get, with
 * watches, are the generic ones (routes/families.ts registerFamilyReads). An
 * incident is opened by an alert policy, never by POST, and is kept as history (no DELETE).
 * An action writes the intent and who asked; the incident's reconciler moves the status.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope, findForChange, principalOf, VERSIONED_CHANGE } from './families';
import { tagAnswer } from '../entity-tags';
import { Incident, incidentFamily as family } from '../../resources/incident';
import { invalidState } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { writeAndAwait } from '../awaiting';
import type { ApiApp } from '../api-app';
import { recordOf } from '../../resources/record-of';
import { DryRunQuery, previewSpecChange, sendDryRun } from '../dry-run';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Incident id.' }) });
const tags = [family.title];

interface Action {
  name: 'acknowledge' | 'resolve';
  summary: string;
  description: string;
  /** The state the action leads to, and the states it leaves alone (200, nothing changes). */
  target: string;
  already: string[];
  ask: (incident: Incident, actor: string) => Incident['spec'] | null;
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
      querystring: DryRunQuery,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, ...VERSIONED_CHANGE.preconditionFailed },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const { found, ifMatch } = await findForChange<Incident>(ctx, family, request, id);
      assertActionable(found, action);
      if (action.already.includes(found.status.status)) {
        if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, family, found);
        tagAnswer(reply, found);
        return send(ctx, request, reply, 200, recordOf(family, found));
      }
      // The state the request leads to, shown should the controller not have written it yet.
      const ledTo = (incident: Incident): Incident => ({
        ...incident,
        status: { ...incident.status, status: action.target, [`${action.target}_at`]: nowIso(), [`${action.target}_by`]: key },
      });
      const change = (incident: Incident) => action.ask(incident, key);
      if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, family, ledTo(previewSpecChange(found, change)));
      let asked = found;
      const ask = async () => {
        asked = await ctx.writer.mutateSpec<Incident>(family, team, id, change, key, ifMatch);
      };
      const moved = await writeAndAwait<Incident>(ctx.store, family.kind, team, id, ask, (incident) =>
        [action.target, 'resolved'].includes(incident.status.status),
      );
      // Resolved otherwise before the acknowledgement reached it: 409, as acknowledging a resolved incident.
      if (moved && moved.status.status !== action.target) assertActionable(moved, action);
      tagAnswer(reply, moved ?? asked);
      return send(ctx, request, reply, 200, recordOf(family, moved ?? ledTo(found)));
    },
  });
}

export function registerIncidentRoutes(app: ApiApp, ctx: ApiContext): void {
  // Its list and get are the generic ones (FamilyDefinition.standardRoutes 'reads'), with their watches.
  for (const action of ACTIONS) registerAction(app, ctx, action);
}
