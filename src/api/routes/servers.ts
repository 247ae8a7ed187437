/**
 * Server actions: stop, start and reboot. Each records the wish in the spec; the
 * reconciler carries it out and writes the move begun (stopping, starting, rebooting),
 * which the answer shows (awaiting.ts).
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { assertChangeable, envelopeOf, ErrorEnvelope, findForChange, principalOf, VERSIONED_CHANGE } from './families';
import { tagAnswer } from '../entity-tags';
import { serverFamily as family, Server, ServerSpec } from '../../resources/server';
import { invalidState, resourceBusy } from '../../lib/errors';
import { writeAndAwait } from '../awaiting';
import type { ApiApp } from '../api-app';
import { asStored } from '../../resources/family';
import { recordOf } from '../../resources/record-of';
import { DryRunQuery, previewSpecChange, sendDryRun } from '../dry-run';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const responses = { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, ...VERSIONED_CHANGE.preconditionFailed };

interface PowerAction {
  name: 'stop' | 'start' | 'reboot';
  summary: string;
  from: string;
  via: string;
  wish(spec: ServerSpec): Partial<ServerSpec>;
}

const ACTIONS: PowerAction[] = [
  { name: 'stop', summary: 'Stop a running server', from: 'running', via: 'stopping', wish: () => ({ power_state: 'off' }) },
  { name: 'start', summary: 'Start a stopped server', from: 'stopped', via: 'starting', wish: () => ({ power_state: 'on' }) },
  {
    name: 'reboot',
    summary: 'Reboot a running server',
    from: 'running',
    via: 'rebooting',
    wish: (spec) => ({ reboot_requests: (asStored(spec).reboot_requests ?? 0) + 1 }),
  },
];

/** A stop, start or reboot asked for that the reconciler has not begun yet. */
function moveAskedFor(server: Server): boolean {
  const { spec, status } = server;
  if (status.status === 'running') return spec.power_state === 'off' || (asStored(spec).reboot_requests ?? 0) > (asStored(status).reboots_done ?? 0);
  return status.status === 'stopped' && spec.power_state === 'on';
}

function assertActionAllowed(server: Server, action: PowerAction): void {
  assertChangeable(family, server);
  const state = server.status.status;
  if (state === 'creating') throw resourceBusy('The server is still being created; try again when it is running.');
  if (state !== action.from) throw invalidState(`Cannot ${action.name} a server that is ${state}; it must be ${action.from}.`);
  if (moveAskedFor(server)) throw resourceBusy(`The server has a power action under way; try again when it is done.`);
}

export function registerServerRoutes(app: ApiApp, ctx: ApiContext): void {
  for (const action of ACTIONS) {
    app.post(`/api/v1/${family.path}/:id/${action.name}`, {
      config: { family: family.name },
      schema: {
        tags: [family.title],
        operationId: `${action.name}Server`,
        summary: action.summary,
        params: IdParams,
        headers: VERSIONED_CHANGE.headers,
        querystring: DryRunQuery,
        response: responses,
      },
      handler: async (request, reply) => {
        const { id } = request.params;
        const { team, key } = principalOf(request);
        const { found, ifMatch } = await findForChange<Server>(ctx, family, request, id);
        assertActionAllowed(found, action);
        const change = (server: Server) => {
          assertActionAllowed(server, action);
          return { ...server.spec, ...action.wish(server.spec) };
        };
        // The move the reconciler begins at once, shown should it not have written it yet.
        const moveOf = (server: Server): Server => ({ ...server, status: { ...server.status, status: action.via, status_reason: null } });
        if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, family, moveOf(previewSpecChange(found, change)));
        let asked = found;
        const wish = async () => {
          asked = await ctx.writer.mutateSpec<Server>(family, team, id, change, key, ifMatch);
        };
        // Begun (the state left `from`), or already done (the reconciler observed this generation).
        const begun = (server: Server) => server.status.status !== action.from || server.status.observed_generation >= asked.meta.generation;
        const moving = await writeAndAwait<Server>(ctx.store, family.kind, team, id, wish, (server) => asked !== found && begun(server));
        const shown = moving ?? moveOf(asked);
        tagAnswer(reply, moving ?? asked);
        return send(ctx, request, reply, 200, recordOf(family, shown));
      },
    });
  }
}
