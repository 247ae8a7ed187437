/**
 * Jobs: a command run once in a container. Queued, then running, then completed or
 * failed; `cancel` ends a queued or running job. Jobs are history: they have no PATCH
 * and no DELETE.
 *
 * A job with a `schedule` (cron, in `timezone`) is `scheduled` instead: it never runs
 * itself; at each time of its schedule the job controller creates a run, an ordinary
 * job that names it in `scheduled_job_id` (as a CronJob makes Jobs). Cancelling a
 * scheduled job ends its schedule.
 */
import { Type } from '@sinclair/typebox';
import { CronSyntaxError, isTimeZone, neverFires, nextFire, parseCron } from '../lib/cron';
import { validationFailed, type FieldError } from '../lib/errors';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, CreateBody, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
import {
  baseRecordProperties,
  baseStatusProperties,
  reconcileRecord,
  reconcileRecordProperties,
  NullableTimestamp,
  Region,
  ResourceName,
  strictObject,
} from './schema-kit';
import { BASIC_COLUMNS } from './presentation';

const STATES = ['queued', 'running', 'completed', 'failed', 'cancelled', 'scheduled', 'paused'] as const;
export const CONCURRENCY_POLICIES = ['allow', 'forbid', 'replace'] as const;
export type ConcurrencyPolicy = (typeof CONCURRENCY_POLICIES)[number];
export const FINISHED_JOB_STATES = ['completed', 'failed', 'cancelled'];
export const JOB_PLANS = ['standard', 'performance', 'gpu'];
const DEFAULT_IMAGE = 'docker.io/library/alpine:3.20';

export interface JobSpec {
  name: string;
  command: string;
  image: string;
  region: string;
  plan: string;
  /** Set by the cancel action (or a kubectl edit); the reconciler stops the run. */
  cancel_requested: boolean;
  /** Cron expression (5 fields, or 6 with seconds first): the job runs on this schedule. */
  schedule?: string;
  /** IANA time zone of the schedule; UTC by default. */
  timezone?: string;
  /** What a time of the schedule does while a run is still going: start another, skip, or cancel it first. */
  concurrency_policy?: ConcurrencyPolicy;
  /** Set by pause, cleared by resume: no runs are made meanwhile. */
  paused?: boolean;
  /** A run: the scheduled job that made it, and the time of its schedule it is for. */
  scheduled_job_id?: string;
  scheduled_at?: string;
  /** A run its executor made (a Job a CronJob made, in cluster mode): the executor's name of it. */
  executor_run?: string;
}

export interface JobStatus extends BaseStatus {
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
  /** Scheduled jobs: the schedule's last time a run was made for, the anchor of the catch-up after a restart. */
  last_scheduled_at?: string | null;
  next_run_at?: string | null;
  /** When the schedule was last resumed: times before it are not caught up. */
  resumed_at?: string | null;
  /** What the run printed (its first 64 KiB), kept once it ended: the executor frees the run then. */
  output?: string | null;
}

/** How much of a run's output is kept. */
export const OUTPUT_LIMIT = 65_536;

export type Job = Resource<JobSpec, JobStatus>;

const Command = Type.String({ minLength: 1, maxLength: 10_000, description: 'Shell command to execute (run with /bin/sh -c).' });
const Image = Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s]+$', description: `Container image, default ${DEFAULT_IMAGE}.` });
const Plan = Type.String({ enum: JOB_PLANS, description: `Execution plan: ${JOB_PLANS.join(', ')}; default standard.` });
const Schedule = Type.String({
  minLength: 1,
  maxLength: 200,
  description:
    'Cron expression: 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; @hourly, @daily and the like. The job then runs on this schedule.',
});
const TimeZone = Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone the schedule is read in, e.g. Europe/Berlin; default UTC.' });
const Concurrency = Type.String({
  enum: [...CONCURRENCY_POLICIES],
  description:
    'Scheduled jobs: when a time comes while a run is still going, allow (default) starts another, forbid skips this time, replace cancels the running one and starts anew.',
});
const ScheduledJobId = Type.String({ maxLength: 64, description: 'A run: the id of the scheduled job that made it.' });

/** A schedule that parses, in a zone that exists, and that fires at all; 422 naming the field otherwise. */
/** A scheduled job's next time as it is made, so that the create's answer shows it; the reconciler keeps it after. */
function firstRunAt({ schedule, timezone = 'UTC', paused }: JobSpec): string | null {
  if (!schedule || paused || !isTimeZone(timezone)) return null;
  try {
    return nextFire(parseCron(schedule), timezone, new Date())?.toISOString() ?? null;
  } catch (err) {
    // A kubectl-made job's schedule is judged by the reconciler, which says what is wrong with it.
    if (err instanceof CronSyntaxError) return null;
    throw err;
  }
}

function assertSchedule(schedule: string, timezone: string): void {
  const broken: FieldError[] = [];
  if (!isTimeZone(timezone)) broken.push({ field: 'timezone', message: `"${timezone}" is not an IANA time zone` });
  try {
    const parsed = parseCron(schedule);
    // The fields rule out most such schedules at once; the zone's clock the rest (times all in its daylight-saving gaps).
    if (neverFires(parsed)) broken.push({ field: 'schedule', message: 'never fires (none of its months has one of its days of the month)' });
    else if (broken.length === 0 && !nextFire(parsed, timezone, new Date()))
      broken.push({ field: 'schedule', message: "never fires (none of its times comes on the zone's clock in the next eight years)" });
  } catch (err) {
    if (!(err instanceof CronSyntaxError)) throw err;
    broken.push({ field: 'schedule', message: `is not a cron expression: ${err.message}` });
  }
  if (broken.length > 0) throw validationFailed(broken);
}

export const isScheduled = (job: Job): boolean => Boolean(job.spec.schedule);

const RUN_COLUMNS = ['id', 'status', 'scheduled_at', 'exit_code', 'finished_at'];

/** Cancel, the schedule's pause and resume, a run's output and a scheduled job's runs (api/routes/jobs.ts). */
const JOB_COMMANDS: readonly FamilyCommand[] = [
  { words: ['cancel'], summary: 'Cancel a queued or running job', method: 'POST', path: '/{id}/cancel', versioned: true, dryRun: true },
  { words: ['pause'], summary: 'Pause the schedule of a scheduled job', method: 'POST', path: '/{id}/pause', versioned: true, dryRun: true },
  { words: ['resume'], summary: 'Resume the schedule of a paused job', method: 'POST', path: '/{id}/resume', versioned: true, dryRun: true },
  {
    words: ['logs'],
    summary: "A run's output (the latest run unless --run-id)",
    method: 'GET',
    path: '/{id}/logs',
    query: Type.Object({ run_id: Type.Optional(Type.String({ description: 'The run whose output to show; default the latest run.' })) }),
    columns: ['run_id', 'status', 'output'],
  },
  { words: ['runs', 'list'], summary: 'List the runs of a job', method: 'GET', path: '/{id}/runs', query: { list: true }, paged: true, columns: RUN_COLUMNS },
  { words: ['runs', 'get'], summary: 'Get one run of a job', method: 'GET', path: '/{id}/runs/{run_id}', columns: RUN_COLUMNS },
];

export const jobFamily: FamilyDefinition<JobSpec, JobStatus> = {
  name: 'job',
  quota: { default: 1000, releasedIn: FINISHED_JOB_STATES },
  title: 'job',
  kind: 'CloudJob',
  plural: 'cloudjobs',
  shortNames: ['cpjob'],
  path: 'jobs',
  idPrefix: 'job',
  states: STATES,
  reconcilingStates: ['running'],
  // `scheduled` is a scheduled job's steady state (it never completes itself): what --wait
  // waits for, Ready in kstatus, and what the agent calls ready.
  readyStates: ['completed', 'scheduled'],
  providerBacked: true,
  deletion: 'immediate',
  deletable: false,
  creationEvent: null,
  actionFields: ['cancel_requested', 'paused'],
  description: 'A one-off job: a command run in a container image. Cancel ends it; finished jobs are kept as history.',
  schemas: {
    create: strictObject({
      name: ResourceName('Job name, 2-40 characters.'),
      command: Command,
      image: Type.Optional(Image),
      region: Type.Optional(Region('Execution region from GET /api/v1/regions; default the first region of the catalog.')),
      plan: Type.Optional(Plan),
      schedule: Type.Optional(Schedule),
      timezone: Type.Optional(TimeZone),
      concurrency_policy: Type.Optional(Concurrency),
    }),
    spec: strictObject({
      name: ResourceName(),
      command: Command,
      image: Image,
      region: Region(),
      plan: Plan,
      cancel_requested: Type.Boolean({ description: 'Set to true to cancel the job (a scheduled job: end its schedule).' }),
      schedule: Type.Optional(Schedule),
      timezone: Type.Optional(TimeZone),
      concurrency_policy: Type.Optional(Concurrency),
      paused: Type.Optional(Type.Boolean({ description: 'Scheduled jobs: set to true to pause the schedule (POST /pause), false to resume it.' })),
      scheduled_job_id: Type.Optional(ScheduledJobId),
      scheduled_at: Type.Optional(Type.String({ format: 'date-time', description: 'A run: the time of the schedule it was made for.' })),
      executor_run: Type.Optional(
        Type.String({ maxLength: 253, description: 'A run its executor made itself: its name there (the batch/v1 Job a CronJob made).' }),
      ),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      exit_code: Type.Union([Type.Integer(), Type.Null()], { description: 'Exit code of the command once it finished.' }),
      started_at: NullableTimestamp('When the command started.'),
      finished_at: NullableTimestamp('When the job finished, failed or was cancelled.'),
      last_scheduled_at: Type.Optional(NullableTimestamp('Scheduled jobs: the last time of the schedule a run was made for.')),
      next_run_at: Type.Optional(NullableTimestamp('Scheduled jobs: the next time of the schedule.')),
      resumed_at: Type.Optional(NullableTimestamp('Scheduled jobs: when the schedule was last resumed; times before it are not caught up.')),
      output: Type.Optional(
        Type.Union([Type.String({ maxLength: 65_536 }), Type.Null()], {
          description: 'What the run printed (the first 64 KiB), kept once it ended; GET /api/v1/jobs/{id}/logs shows it.',
        }),
      ),
    }),
    record: strictObject({
      ...baseRecordProperties('job', STATES),
      ...reconcileRecordProperties(),
      name: ResourceName(),
      command: Command,
      image: Image,
      region: Region(),
      plan: Plan,
      exit_code: Type.Union([Type.Integer(), Type.Null()], { description: 'Exit code of the command; null until it finished.' }),
      started_at: NullableTimestamp('When the command started; null while queued.'),
      finished_at: NullableTimestamp('When the job ended; null while queued or running.'),
      schedule: Type.Union([Schedule, Type.Null()], { description: 'Cron expression of a scheduled job; null for a job that runs once.' }),
      timezone: Type.Union([TimeZone, Type.Null()], { description: 'Time zone of the schedule; null without one.' }),
      concurrency_policy: Type.Union([Concurrency, Type.Null()], {
        description: 'What a time of the schedule does while a run is still going; null without a schedule.',
      }),
      next_run_at: NullableTimestamp('Scheduled jobs: the next time of the schedule; null otherwise, and once cancelled.'),
      last_run_at: NullableTimestamp('Scheduled jobs: the time of the schedule the last run was made for.'),
      scheduled_job_id: Type.Union([ScheduledJobId, Type.Null()], { description: "A run of a scheduled job: that job's id; null otherwise." }),
      scheduled_at: NullableTimestamp('A run of a scheduled job: the time of the schedule it was made for.'),
    }),
  },
  specFromCreate(body: CreateBody<JobSpec, 'image' | 'region' | 'plan' | 'cancel_requested'>, { config }) {
    const region = body.region ?? config.regions.find((r) => !config.unavailableRegions.includes(r)) ?? config.regions[0];
    assertRegionAvailable(config, region);
    const spec: JobSpec = {
      name: body.name,
      command: body.command,
      image: body.image ?? DEFAULT_IMAGE,
      region,
      plan: body.plan ?? 'standard',
      cancel_requested: false,
    };
    const scheduleOnly: ('timezone' | 'concurrency_policy')[] = ['timezone', 'concurrency_policy'];
    const unscheduled = scheduleOnly.filter((field) => body[field] !== undefined && body.schedule === undefined);
    if (unscheduled.length > 0) throw validationFailed(unscheduled.map((field) => ({ field, message: 'needs a schedule' })));
    if (body.schedule !== undefined) {
      const timezone = body.timezone ?? 'UTC';
      assertSchedule(body.schedule, timezone);
      Object.assign(spec, { schedule: body.schedule, timezone, concurrency_policy: body.concurrency_policy ?? 'allow', paused: Boolean(body.paused) });
    }
    // A run made by the job controller, adopted from a custom resource.
    if (body.scheduled_job_id !== undefined) Object.assign(spec, { scheduled_job_id: body.scheduled_job_id, scheduled_at: body.scheduled_at });
    if (body.executor_run !== undefined) spec.executor_run = body.executor_run;
    return spec;
  },
  firstState: (spec) => (spec.schedule ? 'scheduled' : 'queued'),
  initialStatus: (spec) => ({
    exit_code: null,
    started_at: null,
    finished_at: null,
    ...(spec.schedule ? { last_scheduled_at: null, next_run_at: firstRunAt(spec) } : {}),
  }),
  nameOf: (spec) => spec.name,
  commands: JOB_COMMANDS,
  listing: { filterFields: ['scheduled_job_id'] },
  toRecord: ({ meta, spec, status }) => ({
    id: meta.id,
    name: spec.name,
    status: status.status,
    status_reason: status.status_reason ?? null,
    ...reconcileRecord(status),
    command: spec.command,
    image: spec.image,
    region: spec.region,
    plan: spec.plan,
    exit_code: status.exit_code ?? null,
    started_at: status.started_at ?? null,
    finished_at: status.finished_at ?? null,
    schedule: spec.schedule ?? null,
    timezone: spec.timezone ?? null,
    concurrency_policy: spec.schedule ? (spec.concurrency_policy ?? 'allow') : null,
    next_run_at: status.next_run_at ?? null,
    last_run_at: status.last_scheduled_at ?? null,
    scheduled_job_id: spec.scheduled_job_id ?? null,
    scheduled_at: spec.scheduled_at ?? null,
    created_at: meta.createdAt,
    updated_at: meta.updatedAt,
    deleted_at: null,
  }),
  presentation: {
    columns: [
      ...BASIC_COLUMNS,
      { key: 'region', label: 'Region', secondary: true },
      { key: 'plan', label: 'Plan', secondary: true, shownIn: 'console' },
      { key: 'schedule', label: 'Schedule', shownIn: 'cli' },
      { key: 'exit_code', label: 'Exit code' },
      { key: 'finished_at', label: 'Finished at', shownIn: 'cli' },
    ],
    // Cancel also ends a schedule (paused or not); pause and resume are for scheduled jobs only.
    actions: [
      { name: 'pause', label: 'Pause schedule', allowedIn: ['scheduled'] },
      { name: 'resume', label: 'Resume schedule', allowedIn: ['paused'] },
      { name: 'cancel', label: 'Cancel job', allowedIn: ['queued', 'running', 'scheduled', 'paused'] },
    ],
  },
};
