/**
 * The simulation API (docs/api.md, "The simulation API"), served only with CLOUDPLANE_SIMULATION_API=true:
 * a team asks the simulated drivers to fail or slow its next operations, so that its tests
 * see what a real provider's failures and delays do to its resources. Faults reach the
 * caller's team only; reading them is a read, asking and removing them writes.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import type { ApiApp } from '../api-app';
import { send } from '../envelope';
import { ApiError, validationFailed } from '../../lib/errors';
import { Fault, FaultCreate, FAULT_OPERATIONS, MAX_FAULTS_PER_TEAM, NEVER_FAILS, SimulationFaults } from '../../drivers/simulated/faults';
import { envelopeOf, ErrorEnvelope, principalOf } from './families';

/** Whose drivers a family's operations run on: a backup's are its source's (a server's, a database's). */
const DRIVER_FAMILIES: Readonly<Record<string, readonly string[]>> = { backup: ['server', 'database'] };

const FaultParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Fault id.' }) });
const errors = { 401: ErrorEnvelope, 403: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope };
const tags = ['simulation'];
const base = '/api/v1/simulation/faults';

/** Refuses what the drivers in use could never do: an operation the family lacks, a failing release, a family not simulated here. */
function assertPossible(ctx: ApiContext, body: { family: string; operation?: string; error?: string; delay_ms?: number }): void {
  const operations = FAULT_OPERATIONS[body.family] ?? [];
  if (body.operation !== undefined && !operations.includes(body.operation))
    throw validationFailed([{ field: 'operation', message: `the ${body.family} family's operations are ${operations.join(', ')}` }]);
  if (body.error === undefined && body.delay_ms === undefined)
    throw validationFailed([{ field: 'error', message: 'a fault needs an error, a delay_ms or both' }]);
  if (body.operation === NEVER_FAILS && body.error !== undefined)
    throw validationFailed([{ field: 'error', message: 'releasing never fails in the simulation; it can only be slowed (delay_ms)' }]);
  const chosen = ctx.drivers.chosen;
  const runs = (DRIVER_FAMILIES[body.family] ?? [body.family]).map((f) => chosen[f]);
  if (!runs.includes('simulated'))
    throw validationFailed([
      { field: 'family', message: `the ${body.family} family runs the ${runs.join(', ')} driver here; faults reach simulated drivers only` },
    ]);
}

export function registerSimulationRoutes(app: ApiApp, ctx: ApiContext, faults: SimulationFaults): void {
  app.get(base, {
    schema: {
      tags,
      operationId: 'listSimulationFaults',
      summary: 'List the faults waiting',
      description: "The faults the caller's team asked for that have operations left to reach, oldest first.",
      response: { 200: envelopeOf(Type.Array(Fault)), ...errors },
    },
    handler: async (request, reply) => send(ctx, request, reply, 200, await faults.list(principalOf(request).team)),
  });

  app.post(base, {
    schema: {
      tags,
      operationId: 'createSimulationFault',
      summary: 'Ask for a fault',
      description:
        "The next `count` operations of the family in the caller's team (of `operation`, or any but release) take the fault: they fail with `error` (the resource goes `failed`, or the change is refused, with it as the reason) and/or take `delay_ms` exactly. " +
        `Faults are taken in the order asked; at most ${MAX_FAULTS_PER_TEAM} wait per team (422 quota_exceeded). 201 with the fault.`,
      body: FaultCreate,
      response: { 201: envelopeOf(Fault), ...errors },
    },
    handler: async (request, reply) => {
      const body = request.body;
      assertPossible(ctx, body);
      const { team } = principalOf(request);
      const asked = {
        family: body.family,
        operation: body.operation ?? null,
        remaining: body.count ?? 1,
        error: body.error ?? null,
        delay_ms: body.delay_ms ?? null,
      };
      const fault = await faults.add(team, asked);
      if (!fault) throw new ApiError(422, 'quota_exceeded', `At most ${MAX_FAULTS_PER_TEAM} faults may wait per team; remove some first.`);
      reply.header('Location', `${base}/${fault.id}`);
      return send(ctx, request, reply, 201, fault);
    },
  });

  app.delete(`${base}/:id`, {
    schema: {
      tags,
      operationId: 'deleteSimulationFault',
      summary: 'Remove a fault',
      description: 'The fault reaches no further operation. 204; 404 fault_not_found when it is not waiting (used up, or never asked).',
      params: FaultParams,
      response: { 204: Type.Null(), 404: ErrorEnvelope, ...errors },
    },
    handler: async (request, reply) => {
      if (!(await faults.remove(principalOf(request).team, request.params.id)))
        throw new ApiError(404, 'fault_not_found', `No fault ${request.params.id} is waiting.`);
      return reply.code(204).send(null);
    },
  });

  app.delete(base, {
    schema: {
      tags,
      operationId: 'clearSimulationFaults',
      summary: 'Remove every fault',
      description: "Every fault of the caller's team reaches no further operation. 204, whether or not any was waiting.",
      response: { 204: Type.Null(), ...errors },
    },
    handler: async (request, reply) => {
      await faults.remove(principalOf(request).team);
      return reply.code(204).send(null);
    },
  });
}
