/** Job actions: cancel a queued or running job. */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope, findResource, principalOf } from './families';
import { FINISHED_JOB_STATES, Job, jobFamily as family } from '../../resources/job';
import { invalidState } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { writeAndAwait } from '../awaiting';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

function assertCancellable(job: Job): void {
  if (FINISHED_JOB_STATES.includes(job.status.status)) throw invalidState(`The job is already ${job.status.status}; only a queued or running job can be cancelled.`);
}

export function registerJobRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post(`/api/v1/${family.path}/:id/cancel`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: 'cancelJob',
      summary: 'Cancel a queued or running job',
      description: 'The job is `cancelled` at once and its run is stopped. A finished job answers 409 invalid_state.',
      params: IdParams,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const { team } = principalOf(request);
      const found = await findResource<Job>(ctx, family, team, id);
      assertCancellable(found);
      // The reconciler stops the run and writes `cancelled`, unless the job finished first.
      const ask = () => ctx.writer.mutateSpec<Job>(family, team, id, (job) => (job.spec.cancel_requested ? null : { ...job.spec, cancel_requested: true }));
      const ended = await writeAndAwait<Job>(ctx.store, family.kind, team, id, ask, (job) => FINISHED_JOB_STATES.includes(job.status.status));
      // It ended otherwise before the cancel reached it: 409, as a cancel of a finished job.
      if (ended && ended.status.status !== 'cancelled') assertCancellable(ended);
      const cancelled = ended ?? { ...found, status: { ...found.status, status: 'cancelled', finished_at: nowIso(), status_reason: 'Cancelled on request.' } };
      return send(ctx, request, reply, 200, family.toRecord(cancelled));
    },
  });
}
