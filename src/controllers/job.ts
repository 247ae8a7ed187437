/**
 * Jobs: submit the run to the executor (simulated in embedded mode, a batch/v1 Job in
 * cluster mode), follow it to its end, and stop it when cancel is asked for. The status
 * only ever moves forward: queued -> running -> completed | failed | cancelled.
 */
import type { Store } from '../store/types';
import type { JobExecutor, JobRun } from '../drivers/job';
import type { ResourceWriter } from '../resources/writer';
import { FINISHED_JOB_STATES, Job, jobFamily } from '../resources/job';
import { nowIso } from '../lib/time';
import type { ReconcileResult, Reconciler } from './controller';

const POLL_MS = 1_000;
const ORDER = ['queued', 'running'];

function statusOfRun(run: JobRun): Partial<Job['status']> {
  switch (run.state) {
    case 'queued':
      return { status: 'queued' };
    case 'running':
      return { status: 'running', started_at: run.started_at };
    case 'succeeded':
      return { status: 'completed', exit_code: run.exit_code, started_at: run.started_at, finished_at: run.finished_at, status_reason: null };
    case 'failed':
      return { status: 'failed', exit_code: run.exit_code, started_at: run.started_at, finished_at: run.finished_at, status_reason: run.reason ?? 'The job failed.' };
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

  async reconcile(team: string, id: string): Promise<ReconcileResult | void> {
    const job = (await this.store.get(this.kind, team, id)) as Job | undefined;
    if (!job) return;
    const submittedAt = job.meta.createdAt;
    if (job.spec.cancel_requested || job.status.status === 'cancelled') {
      await this.executor.cancel(team, id, nowIso());
      // The cancel request was a spec change: observed, so kstatus does not wait on it forever.
      if (!FINISHED_JOB_STATES.includes(job.status.status)) await this.write(job, () => ({ status: 'cancelled', finished_at: nowIso(), status_reason: 'Cancelled on request.', observed_generation: job.meta.generation }));
      return;
    }
    if (FINISHED_JOB_STATES.includes(job.status.status)) return this.cleanupOnce(team, id);
    await this.executor.submit(team, id, job.spec, submittedAt);
    const run = await this.executor.observe(team, id, job.spec, submittedAt);
    const next = statusOfRun(run);
    const forward = FINISHED_JOB_STATES.includes(next.status!) || ORDER.indexOf(next.status!) > ORDER.indexOf(job.status.status);
    if (forward) {
      // A run that started and ended between two looks still ran: record `running` (and
      // emit job.running) before its end, so every job that ran shows the whole lifecycle.
      if (job.status.status === 'queued' && next.status !== 'running' && run.started_at) {
        await this.write(job, () => ({ status: 'running', started_at: run.started_at }));
      }
      await this.write(job, () => next);
      if (FINISHED_JOB_STATES.includes(next.status!)) return this.cleanupOnce(team, id);
    }
    return { requeueAfterMs: POLL_MS };
  }

  /**
   * The record keeps the outcome, so the run (a batch/v1 Job and its Pod) is freed once the
   * outcome is written; after a restart, each finished job is checked once more in case the
   * process died in between.
   */
  private async cleanupOnce(team: string, id: string): Promise<void> {
    const key = `${team}/${id}`;
    if (this.cleaned.has(key)) return;
    await this.executor.cleanup(team, id);
    this.cleaned.add(key);
  }

  /** Writes unless the job finished or was cancelled meanwhile. */
  private write(job: Job, changes: () => Partial<Job['status']>): Promise<Job> {
    return this.writer.mutateStatus<Job>(jobFamily, job.meta.team, job.meta.id, (latest) => (FINISHED_JOB_STATES.includes(latest.status.status) ? null : (changes() as Record<string, unknown>)), 'system');
  }
}
