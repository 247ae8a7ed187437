/** Job actions: cancel a queued or running job; pause and resume a scheduled one; the runs of a scheduled job. */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope, findForChange, findResource, principalOf, VERSIONED_CHANGE } from './families';
import { tagAnswer } from '../entity-tags';
import { listPage, listQueryOf, listQuerySchema, paginate } from '../list';
import { FINISHED_JOB_STATES, Job, jobFamily as family } from '../../resources/job';
import { invalidState, notFound } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { writeAndAwait } from '../awaiting';
import { listedArray } from '../../store/listed';
import type { ApiApp } from '../api-app';
import type { JobExecutor } from '../../drivers/job';
import { recordOf } from '../../resources/record-of';
import { DryRunQuery, previewSpecChange, sendDryRun } from '../dry-run';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const LogsQuery = Type.Object(
  { run_id: Type.Optional(Type.String({ maxLength: 64, description: 'The run whose output to show; default the latest run.' })) },
  { additionalProperties: false },
);
const JobLogs = Type.Object({
  job_id: Type.String({ description: 'The job asked about.' }),
  run_id: Type.String({ description: 'The run whose output this is (the job itself for a job without a schedule).' }),
  status: Type.String({ description: "The run's status." }),
  output: Type.String({ description: 'What the run printed so far, stdout and stderr (the first 64 KiB); empty before it starts.' }),
});
const RunParams = Type.Object({ id: Type.String({ maxLength: 64 }), run_id: Type.String({ maxLength: 64 }) });

/** The runs of a job: those a scheduled job made; a job that runs once is its own one run. */
async function runsOf(ctx: ApiContext, team: string, job: Job): Promise<Job[]> {
  if (!job.spec.schedule) return [job];
  // From the scheduled_job_id index; no state of a job is one a list hides.
  return listedArray<Job['spec'], Job['status']>(ctx.store, family.kind, team, { where: { scheduled_job_id: job.meta.id } });
}

function assertCancellable(job: Job): void {
  if (FINISHED_JOB_STATES.includes(job.status.status))
    throw invalidState(`The job is already ${job.status.status}; only a queued or running job can be cancelled.`);
}

/** A scheduled job that is not cancelled; 409 invalid_state otherwise. */
function assertSchedulable(job: Job, action: string): void {
  if (!job.spec.schedule) throw invalidState(`Only a scheduled job can be ${action}; this job runs once.`);
  if (FINISHED_JOB_STATES.includes(job.status.status)) throw invalidState(`The job is ${job.status.status}; its schedule cannot be ${action}.`);
}

/** POST /jobs/{id}/pause and /resume: write `paused` and answer once the controller has moved the state. */
function registerScheduleAction(app: ApiApp, ctx: ApiContext, action: 'pause' | 'resume'): void {
  const paused = action === 'pause';
  const past = paused ? 'paused' : 'resumed';
  const target = paused ? 'paused' : 'scheduled';
  app.post(`/api/v1/${family.path}/:id/${action}`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: `${action}Job`,
      summary: paused ? 'Pause the schedule of a scheduled job' : 'Resume the schedule of a paused job',
      description: paused
        ? 'No runs are made while paused; runs already made go on. Pausing a paused job changes nothing. A job without a schedule, or cancelled, answers 409 invalid_state.'
        : 'The schedule goes on from now: times that passed while paused get no run. Resuming a scheduled job changes nothing. A job without a schedule, or cancelled, answers 409 invalid_state.',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, ...VERSIONED_CHANGE.preconditionFailed },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const { found, ifMatch } = await findForChange<Job>(ctx, family, request, id);
      assertSchedulable(found, past);
      const change = (job: Job) => (Boolean(job.spec.paused) === paused ? null : { ...job.spec, paused });
      // The state the request leads to, shown should the controller not have written it yet.
      const ledTo = (job: Job): Job => ({ ...job, status: { ...job.status, status: target, ...(paused ? { next_run_at: null } : {}) } });
      if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, family, ledTo(previewSpecChange(found, change)));
      const ask = () => ctx.writer.mutateSpec<Job>(family, team, id, change, key, ifMatch);
      const moved = await writeAndAwait<Job>(
        ctx.store,
        family.kind,
        team,
        id,
        ask,
        (job) => job.status.status === target || FINISHED_JOB_STATES.includes(job.status.status),
      );
      // The controller did not answer in time (another replica leads): the state the request leads to.
      const current = moved ?? (await findResource<Job>(ctx, family, team, id));
      tagAnswer(reply, current);
      const latest = moved ?? ledTo(current);
      assertSchedulable(latest, past);
      return send(ctx, request, reply, 200, recordOf(family, latest));
    },
  });
}

/** `executor`: the jobs' driver in use, asked for a running job's logs. */
export function registerJobRoutes(app: ApiApp, ctx: ApiContext, executor: JobExecutor): void {
  registerScheduleAction(app, ctx, 'pause');
  registerScheduleAction(app, ctx, 'resume');
  app.post(`/api/v1/${family.path}/:id/cancel`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: 'cancelJob',
      summary: 'Cancel a queued or running job',
      description: 'The job is `cancelled` at once and its run is stopped. A finished job answers 409 invalid_state.',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, ...VERSIONED_CHANGE.preconditionFailed },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const { found, ifMatch } = await findForChange<Job>(ctx, family, request, id);
      assertCancellable(found);
      const change = (job: Job) => (job.spec.cancel_requested ? null : { ...job.spec, cancel_requested: true });
      const cancelledOf = (job: Job): Job => ({
        ...job,
        status: { ...job.status, status: 'cancelled', finished_at: nowIso(), status_reason: 'Cancelled on request.' },
      });
      if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, family, cancelledOf(previewSpecChange(found, change)));
      // The reconciler stops the run and writes `cancelled`, unless the job finished first.
      let asked = found;
      const ask = async () => {
        asked = await ctx.writer.mutateSpec<Job>(family, team, id, change, key, ifMatch);
      };
      const ended = await writeAndAwait<Job>(ctx.store, family.kind, team, id, ask, (job) => FINISHED_JOB_STATES.includes(job.status.status));
      // It ended otherwise before the cancel reached it: 409, as a cancel of a finished job.
      if (ended && ended.status.status !== 'cancelled') assertCancellable(ended);
      tagAnswer(reply, ended ?? asked);
      const cancelled = ended ?? cancelledOf(found);
      return send(ctx, request, reply, 200, recordOf(family, cancelled));
    },
  });

  app.get(`/api/v1/${family.path}/:id/runs`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: 'listJobRuns',
      summary: 'List the runs of a job',
      description:
        'Each run of a scheduled job is a job of its own, with `scheduled_job_id` and `scheduled_at` set; newest first by default. A job without a schedule is its own single run.',
      params: IdParams,
      querystring: listQuerySchema(family.states),
      response: { 200: envelopeOf(Type.Array(family.schemas.record)), 404: ErrorEnvelope, 422: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      const job = await findResource<Job>(ctx, family, team, id);
      const query = listQueryOf(request);
      // A scheduled job's runs are store objects, paged from its index; a job that runs once is one row.
      if (job.spec.schedule) {
        const { page, nextCursor } = await listPage(ctx.store, family, team, query, ctx.cursorKey, { where: { scheduled_job_id: job.meta.id } });
        return send(
          ctx,
          request,
          reply,
          200,
          page.map((r) => recordOf(family, r)),
          { next_cursor: nextCursor },
        );
      }
      const { page, nextCursor } = paginate(
        [{ id: job.meta.id, name: job.spec.name, created_at: job.meta.createdAt, status: job.status.status, job }],
        query,
        ctx.cursorKey,
      );
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((row) => recordOf(family, row.job)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`/api/v1/${family.path}/:id/logs`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: 'getJobLogs',
      summary: "A run's output",
      description:
        "The output of a run (`run_id`, default the latest run by `scheduled_at`): read from the executor while the run goes, kept with the run once it ended. 404 run_not_found for a run that is not one of the job's, or a scheduled job without runs yet.",
      params: IdParams,
      querystring: LogsQuery,
      response: { 200: envelopeOf(JobLogs), 404: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { run_id: runId } = request.query;
      const { team } = principalOf(request);
      const runs = await runsOf(ctx, team, await findResource<Job>(ctx, family, team, id));
      const latest = [...runs].sort((a, b) => (b.spec.scheduled_at ?? b.meta.createdAt).localeCompare(a.spec.scheduled_at ?? a.meta.createdAt))[0];
      const run = runId === undefined ? latest : runs.find((r) => r.meta.id === runId);
      if (!run) throw notFound('run', runId);
      const ended = FINISHED_JOB_STATES.includes(run.status.status);
      const output = ended ? run.status.output : await executor.logs(team, run.meta.id, run.spec, run.meta.createdAt);
      return send(ctx, request, reply, 200, { job_id: id, run_id: run.meta.id, status: run.status.status, output: output ?? '' });
    },
  });

  app.get(`/api/v1/${family.path}/:id/runs/:run_id`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: 'getJobRun',
      summary: 'Get one run of a job',
      description: 'A run is a job record: the same as GET /api/v1/jobs/{run_id}, found only among the runs of this job (404 run_not_found otherwise).',
      params: RunParams,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id, run_id: runId } = request.params;
      const { team } = principalOf(request);
      const job = await findResource<Job>(ctx, family, team, id);
      const run = (await runsOf(ctx, team, job)).find((r) => r.meta.id === runId);
      if (!run) throw notFound('run', runId);
      return send(ctx, request, reply, 200, recordOf(family, run));
    },
  });
}
