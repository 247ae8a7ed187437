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
}

export interface JobExecutor {
  /** Starts the job if it is not started yet; idempotent. */
  submit(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<void>;
  /** The job's run as the executor sees it now. */
  observe(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<JobRun>;
  /** What the run printed so far (stdout and stderr), or null when nothing can be read (not started, or freed). */
  logs(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<string | null>;
  /** Stops the job; idempotent. */
  cancel(team: string, id: string, cancelledAt: string): Promise<void>;
  /** Frees what the run holds once its record is destroyed. */
  cleanup(team: string, id: string): Promise<void>;
  /** The health of what the executor talks to, as last seen. */
  health(): DriverHealth;
}
