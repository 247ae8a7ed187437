/**
 * The cluster-mode job driver: each Cloudplane job runs as a batch/v1 Job in its team's
 * namespace, named after the job id, one container with the job's image running
 * `/bin/sh -c <command>` once (restartPolicy Never, backoffLimit 0). The Job's status,
 * as the cluster's job controller writes it, is the run's status; the exit code comes
 * from the Pod's terminated container when the Pod can be read.
 *
 * Nothing is kept here that a restart would lose, except two process-local shortcuts:
 * which Jobs this process already created (to skip a create per poll) and which it
 * cancelled (so observe can say `cancelled` rather than "missing"). The reconciler does
 * not observe a cancelled job again, so losing the second one on restart costs nothing.
 * Losing the first means a Job deleted behind our back while the operator was down is
 * created again after the restart, instead of being reported as missing.
 *
 * The job family has no timeout, so the Job has no activeDeadlineSeconds. An image that
 * cannot be pulled never fails a Job by itself (the kubelet retries for ever), so while no
 * Pod runs, the Pods' waiting state is read: a permanent reason (a malformed image name)
 * fails the job at once, a failing pull once it has lasted imagePullTimeoutMs, counted from
 * the Pod's own timestamps so that a restart of the operator does not reset it.
 */
import { BatchV1Api, CoreV1Api, KubeConfig, V1ContainerStateWaiting, V1Job, V1JobCondition, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ID_LABEL, namespaceOfTeam, objectName } from '../../store/kubernetes/names';
import { OutcomeWindow } from '../health';
import type { JobExecutor, JobRun, JobSpecForRun } from '../job';
import type { DriverHealth } from '../types';
import { httpCode } from '../../store/kubernetes/http-code';
import { messageOf } from '../../lib/unknown-values';
import { CronJobSchedules } from './cron-jobs';

export const CONTAINER_NAME = 'job';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** Set by the job controller on its Pods (the unprefixed label exists on every version). */
const POD_JOB_NAME_LABEL = 'job-name';
const JOB_NAME_ANNOTATION = 'cloudplane.dev/job-name';

/** Waiting reasons of the kubelet that no retry can fix: the job fails at once. */
const PERMANENT_IMAGE_REASONS: Record<string, string> = {
  InvalidImageName: 'is not a valid image name',
  ErrImageNeverPull: 'is not on the node and its pull policy forbids pulling it',
};
/** Waiting reasons of a pull that may still succeed (a registry down for a while): the job fails once they last too long. */
const RETRIED_IMAGE_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'RegistryUnavailable', 'SignatureValidationFailed']);
export const DEFAULT_IMAGE_PULL_TIMEOUT_MS = 300_000;
const LOG_LIMIT_BYTES = 65_536;

/** What a plan asks of the node; memory is limited at twice the request so a runaway job cannot starve the node. */
const PLAN_RESOURCES: Record<string, { requests: Record<string, string>; limits: Record<string, string> }> = {
  standard: { requests: { cpu: '500m', memory: '512Mi' }, limits: { memory: '1Gi' } },
  performance: { requests: { cpu: '2', memory: '4Gi' }, limits: { memory: '8Gi' } },
  // Extended resources are requested through limits (the request defaults to it).
  gpu: { requests: { cpu: '4', memory: '16Gi' }, limits: { memory: '32Gi', 'nvidia.com/gpu': '1' } },
};

export interface KubernetesJobExecutorOptions {
  kubeConfig: KubeConfig;
  /** Namespace of the system team (see namespaceOfTeam). */
  systemNamespace: string;
  logger: Logger;
  /** How long a Pod's image may keep failing to pull before the job fails (default 300 s). */
  imagePullTimeoutMs?: number;
}

const iso = (d: Date | string | undefined): string | null => (d ? new Date(d).toISOString() : null);

/** The Job of a run: the one its CronJob made, or the one named after the job. */
const jobNameOf = (id: string, spec?: JobSpecForRun) => spec?.executor_run ?? objectName(id);

const isTrue = (conditions: V1JobCondition[], ...types: string[]) => conditions.find((c) => types.includes(c.type) && c.status === 'True');

/** The batch/v1 Job that runs a Cloudplane job. */
export function jobManifest(namespace: string, id: string, spec: JobSpecForRun): V1Job {
  const labels = { [ID_LABEL]: id, [MANAGED_BY_LABEL]: 'cloudplane' };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: objectName(id), namespace, labels, annotations: { [JOB_NAME_ANNOTATION]: spec.name } },
    spec: {
      // One attempt: a job is a command run once; a retry would run its side effects twice.
      backoffLimit: 0,
      completions: 1,
      parallelism: 1,
      // No ttlSecondsAfterFinished: the Job (and its Pod's exit code) stays until cleanup.
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          // The team's command has no business with the cluster's API.
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          containers: [
            {
              name: CONTAINER_NAME,
              image: spec.image,
              command: ['/bin/sh', '-c'],
              args: [spec.command],
              resources: PLAN_RESOURCES[spec.plan] ?? PLAN_RESOURCES.standard,
              securityContext: { allowPrivilegeEscalation: false },
            },
          ],
        },
      },
    },
  };
}

export class KubernetesJobExecutor implements JobExecutor {
  private readonly batch: BatchV1Api;
  private readonly core: CoreV1Api;
  private readonly submitted = new Set<string>();
  private readonly cancelled = new Map<string, string>();
  private readonly outcomes = new OutcomeWindow();
  /** Scheduled jobs as CronJobs (cron-jobs.ts). */
  readonly schedules: CronJobSchedules;

  constructor(private readonly o: KubernetesJobExecutorOptions) {
    this.batch = o.kubeConfig.makeApiClient(BatchV1Api);
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    this.schedules = new CronJobSchedules({
      batch: this.batch,
      logger: o.logger,
      namespaceOf: (team) => this.namespaceOf(team),
      jobManifest,
      call: (request) => this.call(request),
    });
  }

  // API call: job driver: Jobs (created here, read and deleted below)
  async submit(team: string, id: string, spec: JobSpecForRun): Promise<void> {
    const key = `${team}/${id}`;
    // A CronJob's run: its Job is there already, made by the CronJob controller.
    if (this.submitted.has(key) || this.cancelled.has(key) || spec.executor_run) return;
    const namespace = this.namespaceOf(team);
    try {
      await this.call(() => this.batch.createNamespacedJob({ namespace, body: jobManifest(namespace, id, spec) }));
      this.o.logger.info({ team, id, namespace, job: objectName(id) }, 'batch/v1 Job created');
    } catch (err) {
      // Already there: created by this process before a restart, or by another replica.
      if (httpCode(err) !== 409) throw err;
    }
    this.submitted.add(key);
  }

  async observe(team: string, id: string, spec?: JobSpecForRun): Promise<JobRun> {
    const key = `${team}/${id}`;
    const namespace = this.namespaceOf(team);
    const name = jobNameOf(id, spec);
    let job: V1Job;
    try {
      job = await this.call(() => this.batch.readNamespacedJob({ name, namespace }));
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
      const cancelledAt = this.cancelled.get(key);
      if (cancelledAt) return { state: 'cancelled', exit_code: null, started_at: null, finished_at: cancelledAt, reason: 'Cancelled on request.' };
      if (spec?.executor_run && spec.scheduled_job_id && spec.scheduled_at && (await this.schedules.replaced(team, spec.scheduled_job_id, spec.scheduled_at))) {
        return {
          state: 'cancelled',
          exit_code: null,
          started_at: null,
          finished_at: new Date().toISOString(),
          reason: 'Replaced by a later run of its schedule (concurrency policy replace).',
        };
      }
      return {
        state: 'failed',
        exit_code: null,
        started_at: null,
        finished_at: new Date().toISOString(),
        reason: `the batch/v1 Job ${namespace}/${name} that runs this job no longer exists (deleted outside Cloudplane)`,
      };
    }
    return this.runOf(job, namespace, name);
  }

  /**
   * The job container's log in the Job's newest Pod (its first 64 KiB), or null while no Pod
   * has one, or when it cannot be read: a log comes from the Pod's node through its kubelet,
   * so a node that is gone (or, in the tests, a Pod no kubelet runs) must neither hold back a
   * finished job's outcome nor count against the API server's health.
   */
  // API call: job driver: Pod logs
  async logs(team: string, id: string, spec?: JobSpecForRun): Promise<string | null> {
    const namespace = this.namespaceOf(team);
    const pods = (await this.podsOf(namespace, jobNameOf(id, spec))) ?? [];
    const newest = pods.sort((a, b) => (iso(b.metadata?.creationTimestamp) ?? '').localeCompare(iso(a.metadata?.creationTimestamp) ?? '')).at(0);
    if (!newest?.metadata?.name) return null;
    try {
      return await this.core.readNamespacedPodLog({ name: newest.metadata.name, namespace, container: CONTAINER_NAME, limitBytes: LOG_LIMIT_BYTES });
    } catch (err) {
      // 400: the container has not started yet; 404: the Pod went meanwhile. Both are usual.
      if (httpCode(err) !== 400 && httpCode(err) !== 404)
        this.o.logger.warn({ namespace, pod: newest.metadata.name, err: messageOf(err) }, 'could not read the log of a Pod');
      return null;
    }
  }

  async cancel(team: string, id: string, cancelledAt: string, spec?: JobSpecForRun): Promise<void> {
    const key = `${team}/${id}`;
    if (!this.cancelled.has(key)) this.cancelled.set(key, cancelledAt);
    await this.delete(team, id, spec);
  }

  async cleanup(team: string, id: string, spec?: JobSpecForRun): Promise<void> {
    await this.delete(team, id, spec);
    this.submitted.delete(`${team}/${id}`);
    this.cancelled.delete(`${team}/${id}`);
  }

  private async runOf(job: V1Job, namespace: string, name: string): Promise<JobRun> {
    const status = job.status ?? {};
    const conditions = status.conditions ?? [];
    const startedAt = iso(status.startTime);
    // SuccessCriteriaMet and FailureTarget come first (1.31+); Complete and Failed follow once the Pods are gone.
    const succeeded = isTrue(conditions, 'Complete', 'SuccessCriteriaMet');
    if (succeeded) {
      // A Job completes only when its container exited 0 (restartPolicy Never), so 0 is known without the Pod.
      const terminated = await this.terminatedContainer(namespace, name);
      return {
        state: 'succeeded',
        exit_code: terminated?.exitCode ?? 0,
        started_at: startedAt ?? iso(terminated?.startedAt),
        finished_at: iso(status.completionTime) ?? iso(succeeded.lastTransitionTime) ?? iso(terminated?.finishedAt),
        reason: null,
      };
    }
    const failed = isTrue(conditions, 'Failed', 'FailureTarget');
    if (failed) {
      // Without a readable Pod the code is unknown (the Pod may have never started, or been deleted): null, not a guess.
      const terminated = await this.terminatedContainer(namespace, name);
      const code = terminated?.exitCode ?? null;
      return {
        state: 'failed',
        exit_code: code,
        started_at: startedAt ?? iso(terminated?.startedAt),
        finished_at: iso(failed.lastTransitionTime) ?? iso(terminated?.finishedAt) ?? new Date().toISOString(),
        reason: failureReason(failed, code),
      };
    }
    if (job.spec?.suspend) {
      return { state: 'cancelled', exit_code: null, started_at: startedAt, finished_at: null, reason: `the batch/v1 Job ${namespace}/${name} was suspended` };
    }
    // Ready counts Pods whose container runs; active also counts Pods still pulling their image.
    // Clusters older than `ready` (pre 1.24) only have active.
    const active = status.active ?? 0;
    if (active > 0 && !((status.ready ?? 0) > 0)) {
      const reason = await this.imagePullFailure(namespace, name);
      if (reason) return { state: 'failed', exit_code: null, started_at: null, finished_at: new Date().toISOString(), reason };
    }
    const running = status.ready !== undefined ? status.ready > 0 : active > 0;
    if (running) return { state: 'running', exit_code: null, started_at: startedAt ?? new Date().toISOString(), finished_at: null, reason: null };
    return { state: 'queued', exit_code: null, started_at: null, finished_at: null, reason: null };
  }

  /**
   * Why the job fails because its image cannot be pulled, or null while it may still be.
   * The kubelet gives no time for the first failed pull, so the pull is timed from when the
   * Pod was scheduled (the pull starts then), or from its creation on an older status.
   */
  private async imagePullFailure(namespace: string, jobName: string): Promise<string | null> {
    const timeoutMs = this.o.imagePullTimeoutMs ?? DEFAULT_IMAGE_PULL_TIMEOUT_MS;
    const pods = await this.podsOf(namespace, jobName);
    for (const pod of pods ?? []) {
      if (pod.metadata?.deletionTimestamp) continue;
      const container = (pod.status?.containerStatuses ?? []).find((c) => c.name === CONTAINER_NAME);
      const waiting = container?.state?.waiting;
      if (!container || !waiting?.reason) continue;
      // The image as the team wrote it (the status may show it normalized).
      const image = pod.spec?.containers.find((c) => c.name === CONTAINER_NAME)?.image || container.image;
      const permanent = PERMANENT_IMAGE_REASONS[waiting.reason];
      if (permanent) return imageReason(image, permanent, waiting);
      if (!RETRIED_IMAGE_REASONS.has(waiting.reason)) continue;
      const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'True')?.lastTransitionTime;
      const since = scheduled ?? pod.metadata?.creationTimestamp;
      if (!since) continue;
      const failingMs = Date.now() - new Date(since).getTime();
      if (failingMs >= timeoutMs) return imageReason(image, `could not be pulled in ${Math.round(timeoutMs / 1000)} s`, waiting);
    }
    return null;
  }

  /** The Job's Pods, or undefined (logged) when they cannot be read. */
  // API call: drivers: Pods (list)
  private async podsOf(namespace: string, jobName: string): Promise<V1Pod[] | undefined> {
    try {
      return (await this.call(() => this.core.listNamespacedPod({ namespace, labelSelector: `${POD_JOB_NAME_LABEL}=${jobName}` }))).items;
    } catch (err) {
      this.o.logger.warn({ namespace, job: jobName, err: messageOf(err) }, 'could not read the Pods of a Job');
      return undefined;
    }
  }

  /** The job container's terminated state in the Job's most recent Pod, if the Pods can be read. */
  private async terminatedContainer(namespace: string, jobName: string) {
    const pods = await this.podsOf(namespace, jobName);
    if (!pods) return undefined;
    const states = pods
      .flatMap((pod) => pod.status?.containerStatuses ?? [])
      .filter((c) => c.name === CONTAINER_NAME)
      .map((c) => c.state?.terminated ?? c.lastState?.terminated)
      .filter((t): t is NonNullable<typeof t> => t !== undefined);
    return states.sort((a, b) => (iso(b.finishedAt) ?? '').localeCompare(iso(a.finishedAt) ?? ''))[0];
  }

  private async delete(team: string, id: string, spec?: JobSpecForRun): Promise<void> {
    const name = jobNameOf(id, spec);
    try {
      // Background: the Job goes now and the garbage collector takes its Pods (Foreground would wait for them).
      await this.call(() => this.batch.deleteNamespacedJob({ name, namespace: this.namespaceOf(team), propagationPolicy: 'Background' }));
      this.o.logger.info({ team, id, job: name }, 'batch/v1 Job deleted');
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
    }
  }

  private namespaceOf(team: string): string {
    return namespaceOfTeam(team, this.o.systemNamespace);
  }

  health(): DriverHealth {
    return this.outcomes.health();
  }

  /** Runs a request, telling the driver's health whether the API server answered. */
  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      const answer = await request();
      this.outcomes.succeeded();
      return answer;
    } catch (err) {
      const code = httpCode(err);
      // A refusal (404, 409) is the API server answering; only no answer or a 5xx counts against it.
      if (code !== undefined && code < 500) this.outcomes.succeeded();
      else this.outcomes.failed(`the Kubernetes API server did not answer: ${messageOf(err)}`, code !== undefined);
      throw err;
    }
  }
}

/** e.g. `the image "busybx:1.36" could not be pulled in 300 s: Back-off pulling image ...`. */
function imageReason(image: string, what: string, waiting: V1ContainerStateWaiting): string {
  const detail = waiting.message || waiting.reason;
  return `the image "${image}" ${what}: ${detail}`;
}

function failureReason(condition: V1JobCondition, exitCode: number | null): string {
  if (exitCode !== null && exitCode !== 0) return `the command exited with code ${exitCode}`;
  if (condition.reason === 'DeadlineExceeded') return 'the job ran longer than its deadline and was stopped';
  const detail = [condition.reason, condition.message].filter(Boolean).join(': ');
  return detail ? `the batch/v1 Job failed (${detail})` : 'the batch/v1 Job failed';
}
