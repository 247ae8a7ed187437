/**
 * Scheduled jobs as batch/v1 CronJobs: the cluster's CronJob controller keeps the schedule
 * and makes a Job at each of its times; the job controller mirrors each Job as a run (see
 * ScheduleExecutor). The CronJob is in the team's namespace, named after the scheduled
 * job's id; its Job template is a one-off job's (jobManifest), labelled with the
 * scheduled job's id so that the Jobs it makes can be listed.
 *
 * Kubernetes' own defaults are kept where they match the embedded schedule: no
 * startingDeadlineSeconds, so after the controller was down the latest missed time gets
 * one run. Unlike the embedded timer, a resumed CronJob also runs the latest time missed
 * while it was suspended (Kubernetes counts those as missed).
 */
import type { BatchV1Api, V1CronJob, V1Job } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { JobSpecForRun, ScheduledRun, ScheduleExecutor, ScheduleSpec } from '../job';
import { ID_LABEL, objectName } from '../../store/kubernetes/names';
import { httpCode } from '../../store/kubernetes/http-code';
import { known } from '../../lib/known';

/** On the Jobs a CronJob makes (from its template) and their Pods: the scheduled job. */
export const SCHEDULED_JOB_LABEL = 'cloudplane.dev/scheduled-job-id';
/** Set by the CronJob controller on each Job it makes (Kubernetes 1.28+): the time of the schedule, RFC 3339. */
const SCHEDULED_TIMESTAMP_ANNOTATION = 'batch.kubernetes.io/cronjob-scheduled-timestamp';
const CONCURRENCY: Record<ScheduleSpec['concurrency_policy'], string> = { allow: 'Allow', forbid: 'Forbid', replace: 'Replace' };
/** Finished Jobs the CronJob controller keeps: the operator deletes each once its run is recorded, this is only slack for when it is away. */
const HISTORY_LIMIT = 10;

export interface CronJobScheduleOptions {
  batch: BatchV1Api;
  logger: Logger;
  namespaceOf(team: string): string;
  /** The Job a one-off run of this spec would be (its template becomes the CronJob's). */
  jobManifest(namespace: string, id: string, spec: JobSpecForRun): V1Job;
  /** Runs a request, telling the driver's health whether the API server answered. */
  call<T>(request: () => Promise<T>): Promise<T>;
}

/**
 * A 5-field expression or a macro, without weekday 7: what a CronJob's schedule (Go's
 * robfig/cron) reads as the embedded cron does. Anything else stays on the controller's timer.
 */
export function cronJobCarries(schedule: string): boolean {
  const expression = schedule.trim();
  if (expression.startsWith('@')) return true;
  const fields = expression.split(/\s+/);
  return fields.length === 5 && !/(^|[^0-9])7([^0-9]|$)/.test(fields[4]);
}

/** The CronJob of a scheduled job. */
export function cronJobManifest(namespace: string, id: string, spec: ScheduleSpec, job: V1Job): V1CronJob {
  const labels = { ...job.metadata?.labels, [SCHEDULED_JOB_LABEL]: id };
  const jobSpec = known(job.spec, "the spec of a run's Job manifest");
  // A run's id is its own: the template names the scheduled job only.
  const runLabels = Object.fromEntries(Object.entries(labels).filter(([label]) => label !== ID_LABEL));
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: objectName(id), namespace, labels, annotations: job.metadata?.annotations },
    spec: {
      schedule: spec.schedule,
      timeZone: spec.timezone,
      concurrencyPolicy: CONCURRENCY[spec.concurrency_policy],
      suspend: spec.paused,
      successfulJobsHistoryLimit: HISTORY_LIMIT,
      failedJobsHistoryLimit: HISTORY_LIMIT,
      jobTemplate: {
        metadata: { labels: runLabels, annotations: job.metadata?.annotations },
        spec: { ...jobSpec, template: { ...jobSpec.template, metadata: { labels: runLabels } } },
      },
    },
  };
}

/** What apply keeps in line with the spec (a job has no PATCH: the template never changes). */
const settingsOf = (cronJob: V1CronJob) =>
  JSON.stringify([cronJob.spec?.schedule, cronJob.spec?.timeZone ?? null, cronJob.spec?.concurrencyPolicy, Boolean(cronJob.spec?.suspend)]);

export class CronJobSchedules implements ScheduleExecutor {
  constructor(private readonly o: CronJobScheduleOptions) {}

  carries(schedule: string): boolean {
    return cronJobCarries(schedule);
  }

  /** Read at every look (at most a minute apart), so a CronJob deleted or edited by hand is put back. */
  // API call: job driver: CronJobs
  async apply(team: string, id: string, spec: ScheduleSpec): Promise<void> {
    const namespace = this.o.namespaceOf(team);
    const name = objectName(id);
    const desired = cronJobManifest(namespace, id, spec, this.o.jobManifest(namespace, id, spec));
    let current: V1CronJob | undefined;
    try {
      current = await this.o.call(() => this.o.batch.readNamespacedCronJob({ name, namespace }));
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
    }
    if (!current) {
      try {
        await this.o.call(() => this.o.batch.createNamespacedCronJob({ namespace, body: desired }));
        this.o.logger.info({ team, id, namespace, cronJob: name, schedule: spec.schedule }, 'batch/v1 CronJob created');
      } catch (err) {
        // Made meanwhile by another replica: the next look compares it.
        if (httpCode(err) !== 409) throw err;
      }
    } else if (settingsOf(current) !== settingsOf(desired)) {
      // A replace with the read's resourceVersion: a conflict (409) is retried by the reconciler.
      const currentSpec = known(current.spec, `the spec of CronJob ${name}`);
      const body: V1CronJob = {
        ...current,
        spec: { ...currentSpec, ...known(desired.spec, 'the spec of a CronJob manifest'), jobTemplate: currentSpec.jobTemplate },
      };
      await this.o.call(() => this.o.batch.replaceNamespacedCronJob({ name, namespace, body }));
      this.o.logger.info({ team, id, cronJob: name, suspend: spec.paused }, 'batch/v1 CronJob updated');
    }
  }

  /** The Jobs the CronJob made (or that were made from it by hand, timed at their creation), oldest first. */
  // API call: job driver: Jobs
  async runs(team: string, id: string): Promise<ScheduledRun[]> {
    const namespace = this.o.namespaceOf(team);
    const jobs = await this.o.call(() => this.o.batch.listNamespacedJob({ namespace, labelSelector: `${SCHEDULED_JOB_LABEL}=${id}` }));
    const runs = jobs.items.flatMap((job) => {
      const metadata = job.metadata;
      if (!metadata?.name || metadata.deletionTimestamp) return [];
      const stamp = metadata.annotations?.[SCHEDULED_TIMESTAMP_ANNOTATION] ?? metadata.creationTimestamp;
      return [{ name: metadata.name, scheduledAt: new Date(stamp ?? Date.now()).toISOString() }];
    });
    return runs.sort((a, b) => a.scheduledAt.localeCompare(b.scheduledAt) || a.name.localeCompare(b.name));
  }

  /** Orphans the Jobs it made: runs already made go on, as on the embedded schedule. */
  // API call: job driver: CronJobs
  async remove(team: string, id: string): Promise<void> {
    const namespace = this.o.namespaceOf(team);
    const name = objectName(id);
    try {
      await this.o.call(() => this.o.batch.deleteNamespacedCronJob({ name, namespace, propagationPolicy: 'Orphan' }));
      this.o.logger.info({ team, id, cronJob: name }, 'batch/v1 CronJob deleted');
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
    }
  }

  /**
   * Whether the run `spec` (a Job this CronJob made, now gone) was replaced by a later run
   * under concurrency policy replace: the CronJob controller deletes the Job then.
   */
  // API call: job driver: CronJobs
  async replaced(team: string, scheduledJobId: string, scheduledAt: string): Promise<boolean> {
    try {
      const cronJob = await this.o.call(() => this.o.batch.readNamespacedCronJob({ name: objectName(scheduledJobId), namespace: this.o.namespaceOf(team) }));
      const last = cronJob.status?.lastScheduleTime;
      return cronJob.spec?.concurrencyPolicy === CONCURRENCY.replace && last !== undefined && new Date(last).toISOString() > scheduledAt;
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
      return false;
    }
  }
}
