/**
 * Jobs: submit the run to the executor (simulated in embedded mode, a batch/v1 Job in
 * cluster mode), follow it to its end, and stop it when cancel is asked for. The status
 * only ever moves forward: queued -> running -> completed | failed | cancelled.
 *
 * A scheduled job is not run itself: at each time of its schedule this makes a run, an
 * ordinary job (see runId). Only the leader reconciles, so only one replica schedules.
 */
import { createHash } from 'node:crypto';
import { AlreadyExistsError, Store } from '../store/types';
import type { JobExecutor, JobRun, ScheduledRun, ScheduleExecutor } from '../drivers/job';
import type { ResourceWriter } from '../resources/writer';
import { FINISHED_JOB_STATES, isScheduled, Job, JobSpec, jobFamily, OUTPUT_LIMIT } from '../resources/job';
import { lastFire, nextFire, parseCron } from '../lib/cron';
import { nowIso } from '../lib/time';
import { listedObjects } from '../store/listed';
import type { ReconcileResult, Reconciler } from './controller';

const POLL_MS = 1_000;
/** A scheduled job is looked at again at least this often, so a clock that jumps is noticed. */
const MAX_SCHEDULE_SLEEP_MS = 60_000;
/**
 * How long after a time of its schedule a CronJob's run is looked for each second: its
 * controller makes the Job a little after the time (a skipped time, forbid, makes none).
 */
const CRONJOB_RUN_WINDOW_MS = 20_000;

/**
 * The id of the run of `jobId` for the time `scheduledAt` (or, for a run the executor made,
 * for its name there): the same for every replica and after every restart, so a run is
 * made once however often its time is looked at (the second create is refused as already
 * there).
 */
export function runId(jobId: string, scheduledAt: string): string {
  const digest = createHash('sha256').update(`${jobId}@${scheduledAt}`).digest();
  let opaque = '';
  for (const byte of digest.subarray(0, 20)) opaque += '0123456789abcdefghijklmnopqrstuvwxyz'[byte % 36];
  return `${jobFamily.idPrefix}_${opaque}`;
}
const ORDER = ['queued', 'running'];

/** The status a run shows: always with its state. */
function statusOfRun(run: JobRun): Partial<Job['status']> & Pick<Job['status'], 'status'> {
  switch (run.state) {
    case 'queued':
      return { status: 'queued' };
    case 'running':
      return { status: 'running', started_at: run.started_at };
    case 'succeeded':
      return { status: 'completed', exit_code: run.exit_code, started_at: run.started_at, finished_at: run.finished_at, status_reason: null };
    case 'failed':
      return {
        status: 'failed',
        exit_code: run.exit_code,
        started_at: run.started_at,
        finished_at: run.finished_at,
        status_reason: run.reason ?? 'The job failed.',
      };
    case 'cancelled':
      return { status: 'cancelled', started_at: run.started_at, finished_at: run.finished_at ?? nowIso(), status_reason: run.reason };
  }
}

export class JobReconciler implements Reconciler {
  readonly kind = jobFamily.kind;
  private readonly cleaned = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
    private readonly executor: JobExecutor,
  ) {}

  async reconcile(team: string, id: string): Promise<ReconcileResult | undefined> {
    const job = await this.store.get<Job['spec'], Job['status']>(this.kind, team, id);
    if (!job) return;
    const submittedAt = job.meta.createdAt;
    const carrier = this.carrierOf(job);
    if (job.spec.cancel_requested || job.status.status === 'cancelled') {
      // Read before the run is stopped and freed.
      const output = FINISHED_JOB_STATES.includes(job.status.status) || isScheduled(job) ? undefined : await this.outputOf(job);
      if (carrier) await carrier.remove(team, id);
      else await this.executor.cancel(team, id, nowIso(), job.spec);
      // The cancel request was a spec change: observed, so kstatus does not wait on it forever.
      if (!FINISHED_JOB_STATES.includes(job.status.status))
        await this.write(job, () => ({
          status: 'cancelled',
          finished_at: nowIso(),
          status_reason: 'Cancelled on request.',
          observed_generation: job.meta.generation,
          ...(isScheduled(job) ? { next_run_at: null } : { output }),
        }));
      return;
    }
    if (FINISHED_JOB_STATES.includes(job.status.status)) {
      await this.cleanupOnce(job);
      return;
    }
    const { schedule } = job.spec;
    if (schedule) return carrier ? this.mirror(job, carrier, schedule) : this.schedule(job, schedule);
    await this.executor.submit(team, id, job.spec, submittedAt);
    const run = await this.executor.observe(team, id, job.spec, submittedAt);
    const next = statusOfRun(run);
    // The output is kept with the outcome: cleanup frees the run (and its Pod's log) next.
    if (FINISHED_JOB_STATES.includes(next.status)) next.output = await this.outputOf(job);
    const forward = FINISHED_JOB_STATES.includes(next.status) || ORDER.indexOf(next.status) > ORDER.indexOf(job.status.status);
    if (forward) {
      // A run that started and ended between two looks still ran: record `running` (and
      // emit job.running) before its end, so every job that ran shows the whole lifecycle.
      if (job.status.status === 'queued' && next.status !== 'running' && run.started_at) {
        await this.write(job, () => ({ status: 'running', started_at: run.started_at }));
      }
      await this.write(job, () => next);
      if (FINISHED_JOB_STATES.includes(next.status)) {
        await this.cleanupOnce(job);
        return;
      }
    }
    return { requeueAfterMs: POLL_MS };
  }

  /**
   * Makes the run that is due, if one is, and sleeps until the next. The anchor is the last
   * time a run was made for (the creation at first), kept in the status: after a restart
   * (or a leader change) the times missed meanwhile are found from it, and only the latest
   * of them gets a run, as a CronJob with startingDeadlineSeconds catches up at most once.
   */
  private async schedule(job: Job, schedule: string): Promise<ReconcileResult | undefined> {
    const { timezone = 'UTC' } = job.spec;
    if (job.spec.paused) {
      if (job.status.status !== 'paused') await this.write(job, () => ({ status: 'paused', next_run_at: null, observed_generation: job.meta.generation }));
      return;
    }
    if (job.status.status === 'paused') {
      // Times that passed while paused are not caught up: the anchor moves to now.
      job = await this.write(job, () => ({ status: 'scheduled', resumed_at: nowIso(), observed_generation: job.meta.generation }));
      if (job.status.status !== 'scheduled') return;
    }
    const parsed = parseCron(schedule);
    const now = new Date();
    const anchor = new Date(
      Math.max(...[job.status.last_scheduled_at, job.status.resumed_at, job.meta.createdAt].filter((t): t is string => Boolean(t)).map(Date.parse)),
    );
    const due = lastFire(parsed, timezone, anchor, now);
    if (due) await this.runAt(job, due.toISOString());
    const next = nextFire(parsed, timezone, due ?? now)?.toISOString() ?? null;
    const scheduledAt = due?.toISOString() ?? job.status.last_scheduled_at ?? null;
    if (next !== (job.status.next_run_at ?? null) || scheduledAt !== (job.status.last_scheduled_at ?? null)) {
      await this.write(job, () => ({ next_run_at: next, last_scheduled_at: scheduledAt }));
    }
    const untilNext = next ? Date.parse(next) - Date.now() : MAX_SCHEDULE_SLEEP_MS;
    return { requeueAfterMs: Math.max(1, Math.min(untilNext, MAX_SCHEDULE_SLEEP_MS)) };
  }

  /** The executor's own schedule keeper, when it keeps this scheduled job's schedule (a CronJob); else the timer above does. */
  private carrierOf(job: Job): ScheduleExecutor | undefined {
    const carrier = this.executor.schedules;
    const { schedule } = job.spec;
    return schedule && carrier?.carries(schedule) ? carrier : undefined;
  }

  /**
   * A schedule the executor keeps (a CronJob): makes it match the spec (paused is
   * suspended), and records each run it made as a job of its own, which the reconciler then
   * follows like any job. The runs are made by the executor, so the concurrency policy and
   * the catch-up are its own; next_run_at and last_run_at are computed here all the same.
   */
  private async mirror(job: Job, carrier: ScheduleExecutor, schedule: string): Promise<ReconcileResult | undefined> {
    const { team, id } = job.meta;
    const { timezone = 'UTC', concurrency_policy = 'allow' } = job.spec;
    const paused = Boolean(job.spec.paused);
    await carrier.apply(team, id, { ...job.spec, schedule, timezone, concurrency_policy, paused });
    const runs = await carrier.runs(team, id);
    // Runs made before a pause are recorded all the same.
    for (const run of runs) await this.mirrorRun(job, run);
    if (paused) {
      if (job.status.status !== 'paused') await this.write(job, () => ({ status: 'paused', next_run_at: null, observed_generation: job.meta.generation }));
      return { requeueAfterMs: MAX_SCHEDULE_SLEEP_MS };
    }
    if (job.status.status === 'paused') {
      job = await this.write(job, () => ({ status: 'scheduled', resumed_at: nowIso(), observed_generation: job.meta.generation }));
      if (job.status.status !== 'scheduled') return;
    }
    const parsed = parseCron(schedule);
    const now = new Date();
    const lastRun =
      [job.status.last_scheduled_at, runs[runs.length - 1]?.scheduledAt]
        .filter((t): t is string => Boolean(t))
        .sort()
        .pop() ?? null;
    const next = nextFire(parsed, timezone, now)?.toISOString() ?? null;
    if (next !== (job.status.next_run_at ?? null) || lastRun !== (job.status.last_scheduled_at ?? null)) {
      await this.write(job, () => ({ next_run_at: next, last_scheduled_at: lastRun }));
    }
    // A time just passed whose run is not seen yet: look again each second for a while.
    const due = lastFire(parsed, timezone, new Date(now.getTime() - CRONJOB_RUN_WINDOW_MS), now);
    if (due && (!lastRun || lastRun < due.toISOString())) return { requeueAfterMs: POLL_MS };
    const untilNext = next ? Date.parse(next) - Date.now() + POLL_MS : MAX_SCHEDULE_SLEEP_MS;
    return { requeueAfterMs: Math.max(1, Math.min(untilNext, MAX_SCHEDULE_SLEEP_MS)) };
  }

  /** Records a run the executor made, once: its id derives from the scheduled job and the run's name there. */
  private async mirrorRun(job: Job, run: ScheduledRun): Promise<void> {
    const id = runId(job.meta.id, run.name);
    if (await this.store.get(this.kind, job.meta.team, id)) return;
    await this.startRun(job, run.scheduledAt, { id, executorRun: run.name });
  }

  /** Applies the concurrency policy to the runs still going, then starts the run of `scheduledAt`, unless forbidden. */
  private async runAt(job: Job, scheduledAt: string): Promise<void> {
    const policy = job.spec.concurrency_policy ?? 'allow';
    if (policy !== 'allow') {
      // The scheduled job's runs alone, from the indexes.
      const going: Job[] = [];
      for await (const run of listedObjects<Job['spec'], Job['status']>(this.store, this.kind, job.meta.team, { where: { scheduled_job_id: job.meta.id } })) {
        // The run of this very time may exist already (made before a restart): it is no other run.
        if (run.spec.scheduled_at !== scheduledAt && !FINISHED_JOB_STATES.includes(run.status.status)) going.push(run);
      }
      if (going.length > 0 && policy === 'forbid') return;
      for (const run of going) {
        await this.writer.mutateSpec<Job>(
          jobFamily,
          run.meta.team,
          run.meta.id,
          (latest) => (latest.spec.cancel_requested ? null : { ...latest.spec, cancel_requested: true }),
          'system',
        );
      }
    }
    await this.startRun(job, scheduledAt);
  }

  /**
   * Creates the run of `scheduledAt` unless it exists: made before a restart, or by the
   * previous leader. `made`: a run the executor made itself (its id, and its name there).
   */
  private async startRun(job: Job, scheduledAt: string, made?: { id: string; executorRun: string }): Promise<void> {
    const { schedule: _schedule, timezone: _timezone, concurrency_policy: _policy, paused: _paused, ...rest } = job.spec;
    const spec: JobSpec = {
      ...rest,
      cancel_requested: false,
      scheduled_job_id: job.meta.id,
      scheduled_at: scheduledAt,
      ...(made ? { executor_run: made.executorRun } : {}),
    };
    try {
      await this.writer.create(jobFamily, job.meta.team, spec, 'system', made?.id ?? runId(job.meta.id, scheduledAt));
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  }

  /** What the run printed, cut at OUTPUT_LIMIT bytes; null when the executor has none. */
  private async outputOf(job: Job): Promise<string | null> {
    const output = await this.executor.logs(job.meta.team, job.meta.id, job.spec, job.meta.createdAt);
    if (output === null) return null;
    const bytes = Buffer.from(output, 'utf8');
    return bytes.length <= OUTPUT_LIMIT ? output : bytes.subarray(0, OUTPUT_LIMIT).toString('utf8');
  }

  /**
   * The record keeps the outcome, so the run (a batch/v1 Job and its Pod) is freed once the
   * outcome is written; after a restart, each finished job is checked once more in case the
   * process died in between.
   */
  private async cleanupOnce(job: Job): Promise<void> {
    const key = `${job.meta.team}/${job.meta.id}`;
    if (this.cleaned.has(key)) return;
    // A scheduled job holds no run of its own (a CronJob's is removed by cancel).
    if (!isScheduled(job)) await this.executor.cleanup(job.meta.team, job.meta.id, job.spec);
    this.cleaned.add(key);
  }

  /** Writes unless the job finished or was cancelled meanwhile. */
  private write(job: Job, changes: () => Partial<Job['status']>): Promise<Job> {
    return this.writer.mutateStatus<Job>(
      jobFamily,
      job.meta.team,
      job.meta.id,
      (latest) => (FINISHED_JOB_STATES.includes(latest.status.status) ? null : changes()),
      'system',
    );
  }
}
