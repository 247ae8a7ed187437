/**
 * Simulated job execution: a job waits in a queue for a moment, then "runs" for as long
 * as its command's `sleep N` steps add up to (or the simulated default), and ends with
 * the code of a trailing `exit N` (0 otherwise). Nothing of the command is executed; its
 * output is what its `echo` steps would print, from the moment it starts.
 */
import type { JobExecutor, JobRun, JobSpecForRun } from '../job';
import type { DriverHealth } from '../types';
import { draw, Simulation } from './simulation';
import { promised } from '../../lib/promised';

/** The lines the `echo` steps of a shell command print (steps split on ;, &&, || and newlines; quotes removed). */
export function echoedLines(command: string): string[] {
  return command
    .split(/;|&&|\|\||\n/)
    .map((step) => /^\s*echo(?:\s+(.*))?$/.exec(step))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => (m.at(1) ?? '').trim().replace(/^(['"])(.*)\1$/, '$2'));
}

export class SimulatedJobExecutor implements JobExecutor {
  constructor(private readonly sim: Simulation) {}

  async submit(): Promise<void> {}

  observe(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<JobRun> {
    return promised(() => {
      const base = this.sim.baseDelayMs('job');
      const queuedMs = Math.round(base * 0.25);
      const sleeps = [...spec.command.matchAll(/\bsleep\s+(\d+(?:\.\d+)?)/g)].reduce((sum, m) => sum + Number(m[1]) * 1000, 0);
      const runMs = Math.min(sleeps > 0 ? sleeps : base, 3_600_000);
      const start = Date.parse(submittedAt) + queuedMs;
      const end = start + runMs;
      const now = Date.now();
      if (now < start) return { state: 'queued', exit_code: null, started_at: null, finished_at: null, reason: null };
      const startedAt = new Date(start).toISOString();
      if (now < end) return { state: 'running', exit_code: null, started_at: startedAt, finished_at: null, reason: null };
      const exit = /\bexit\s+(\d{1,3})\s*;?\s*$/.exec(spec.command);
      const injected = draw('job', team, id, submittedAt) < this.sim.failureRate('job');
      const code = injected ? 1 : exit ? Number(exit[1]) % 256 : 0;
      const reason =
        code === 0 ? null : injected ? 'the job failed (simulated failure injected by CLOUDPLANE_SIM_FAILURES)' : `the command exited with code ${code}`;
      // Only an injected failure is the runner's; a command that exits non-zero ran as asked,
      // so it is the job's own failure (its status), not one of the provider's (meta.provider).
      this.sim.recordOnce('job', `${team}/${id}/${submittedAt}`, injected ? reason : null, end);
      return { state: code === 0 ? 'succeeded' : 'failed', exit_code: code, started_at: startedAt, finished_at: new Date(end).toISOString(), reason };
    });
  }

  logs(_team: string, _id: string, spec: JobSpecForRun, submittedAt: string): Promise<string | null> {
    return promised(() => {
      const start = Date.parse(submittedAt) + Math.round(this.sim.baseDelayMs('job') * 0.25);
      if (Date.now() < start) return null;
      return echoedLines(spec.command)
        .map((line) => `${line}\n`)
        .join('');
    });
  }

  async cancel(): Promise<void> {}

  async cleanup(): Promise<void> {}

  health(): DriverHealth {
    return this.sim.outcomesOf('job').health();
  }
}
