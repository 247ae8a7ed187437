/**
 * The job driver's contract. A job is a run rather than a thing that stays, so its driver
 * is an executor: submit starts the run, observe follows it to its end, cancel stops it,
 * and cleanup frees what the run holds once its outcome is on the record. Each call is
 * idempotent and keyed by the job's identity and submission time, so an executor
 * remembers nothing across restarts of the operator.
 */
import type { DriverHealth } from './types';

export interface JobRun {
  state: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
  reason: string | null;
}

export interface JobSpecForRun {
  name: string;
  command: string;
  image: string;
  region: string;
  plan: string;
  /**
   * A run its executor made itself (a Job a CronJob made): the executor's name of it. The
   * executor follows that run rather than starting one of its own.
   */
  executor_run?: string;
  /** A run of a schedule: the scheduled job and the time it is for. */
  scheduled_job_id?: string;
  scheduled_at?: string;
}

/** What a schedule is, as an executor that runs schedules needs it. */
export interface ScheduleSpec extends JobSpecForRun {
  schedule: string;
  timezone: string;
  concurrency_policy: 'allow' | 'forbid' | 'replace';
  paused: boolean;
}

/** A run a schedule made: the executor's name of it and the time of the schedule it is for. */
export interface ScheduledRun {
  name: string;
  scheduledAt: string;
}

/**
 * An executor that keeps schedules itself (a batch/v1 CronJob) instead of the job
 * controller's timer. The controller then mirrors each run the schedule makes as a job
 * record of its own, followed like any job.
 */
export interface ScheduleExecutor {
  /** Whether the executor can keep this schedule (a CronJob has no seconds field). */
  carries(schedule: string): boolean;
  /** Makes the schedule, or changes it to match `spec` (paused: suspended); idempotent. */
  apply(team: string, id: string, spec: ScheduleSpec): Promise<void>;
  /** The runs the schedule made that still exist, oldest first. */
  runs(team: string, id: string): Promise<ScheduledRun[]>;
  /** Ends the schedule; the runs it made go on. Idempotent. */
  remove(team: string, id: string): Promise<void>;
}

export interface JobExecutor {
  /** Starts the job if it is not started yet; idempotent. */
  submit(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<void>;
  /** The job's run as the executor sees it now. */
  observe(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<JobRun>;
  /** What the run printed so far (stdout and stderr), or null when nothing can be read (not started, or freed). */
  logs(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<string | null>;
  /** Stops the job; idempotent. */
  cancel(team: string, id: string, cancelledAt: string, spec?: JobSpecForRun): Promise<void>;
  /** Frees what the run holds once its record is destroyed. */
  cleanup(team: string, id: string, spec?: JobSpecForRun): Promise<void>;
  /** Present when the executor keeps schedules itself (see ScheduleExecutor). */
  readonly schedules?: ScheduleExecutor;
  /** The health of what the executor talks to, as last seen. */
  health(): DriverHealth;
}
