/**
 * The batch/v1 Job driver in cluster mode: the real service on a real kube-apiserver runs
 * each Cloudplane job as a batch/v1 Job. The test API server has no controller manager and
 * no kubelet, so the test plays their part: it writes the Job's status through the status
 * subresource, and the Job's Pod with its terminated or waiting container, as they would.
 * The operator runs under exactly the chart's RBAC (test/helpers/chart.ts).
 */
import { BatchV1Api, CoreV1Api, V1ContainerStatus, V1Job, V1JobStatus } from '@kubernetes/client-node';
import { clusterEnv, clusterFor, kubeConfigOf, stopClusters } from '../helpers/cluster';
import { eventually, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';
import { expectOnlyListedCalls, operatorEnvFromChart } from '../helpers/chart';
import type { KubeApiServer } from '../helpers/kube-apiserver';

const IMAGE = 'docker.io/library/busybox:1.36';
const PULL_TIMEOUT_S = 2;

describe('batch/v1 Job driver', () => {
  let t: TestService;
  let batch: BatchV1Api;
  let core: CoreV1Api;
  let namespace: string;
  let server: KubeApiServer;

  beforeAll(async () => {
    const dataDir = tempDataDir();
    server = await clusterFor(dataDir);
    const kc = kubeConfigOf(server);
    batch = kc.makeApiClient(BatchV1Api);
    core = kc.makeApiClient(CoreV1Api);
    const asChartAllows = operatorEnvFromChart(server, dataDir);
    t = await startTestService(
      {
        ...(await clusterEnv(dataDir)),
        ...asChartAllows,
        CLOUDPLANE_JOB_DRIVER: 'kubernetes',
        CLOUDPLANE_JOB_IMAGE_PULL_TIMEOUT_SECONDS: String(PULL_TIMEOUT_S),
      },
      dataDir,
    );
    namespace = t.teamId.replace('team_', 'team-');
  }, 120_000);

  afterAll(async () => {
    await t?.stop();
    await stopClusters();
  });

  /** Kubernetes keeps whole seconds; a time some seconds ago, as the API shows it. */
  const secondsAgo = (s: number) => new Date(Math.floor(Date.now() / 1000) * 1000 - s * 1000);
  const jobName = (id: string) => id.replace('_', '-');

  async function createJob(command: string, plan = 'standard', image = IMAGE) {
    const res = await t.api('POST', '/api/v1/jobs', { name: `job-${plan}-${Date.now() % 100000}`, command, image, plan });
    expect(res.status).toBe(201);
    const id: string = res.body.data.id;
    const job = await eventually(() => batch.readNamespacedJob({ name: jobName(id), namespace }));
    return { id, job };
  }

  /** Read-modify-write of the Job's status, as the job controller does it. */
  async function writeJobStatus(id: string, status: V1JobStatus): Promise<void> {
    const current = await batch.readNamespacedJob({ name: jobName(id), namespace });
    await batch.replaceNamespacedJobStatus({ name: jobName(id), namespace, body: { ...current, status } as V1Job });
  }

  /** The Job's Pod with its container terminated, as the job controller and the kubelet leave it. */
  async function writeTerminatedPod(job: V1Job, exitCode: number, startedAt: Date, finishedAt: Date): Promise<void> {
    const container = job.spec!.template.spec!.containers[0];
    await writePod(job, exitCode === 0 ? 'Succeeded' : 'Failed', {
      name: container.name,
      image: container.image!,
      imageID: `${container.image}@sha256:${'0'.repeat(64)}`,
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt, finishedAt } },
    });
  }

  /** The Job's Pod, scheduled at `scheduledAt`, with its container waiting as the kubelet reports it. */
  async function writeWaitingPod(job: V1Job, reason: string, message: string, scheduledAt: Date): Promise<void> {
    const container = job.spec!.template.spec!.containers[0];
    await writePod(
      job,
      'Pending',
      { name: container.name, image: container.image!, imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message } } },
      scheduledAt,
    );
  }

  /** Creates the Job's Pod as the job controller does (once), then writes its status as the kubelet does. */
  async function writePod(job: V1Job, phase: string, containerStatus: V1ContainerStatus, scheduledAt?: Date): Promise<void> {
    const template = job.spec!.template;
    const name = `${job.metadata!.name}-abcde`;
    const pod = await core
      .createNamespacedPod({
        namespace,
        body: {
          metadata: {
            name,
            labels: { ...template.metadata!.labels, 'job-name': job.metadata!.name!, 'batch.kubernetes.io/job-name': job.metadata!.name! },
            ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true }],
          },
          spec: template.spec!,
        },
      })
      .catch((err) => {
        if ((err as { code?: number }).code !== 409) throw err;
        return core.readNamespacedPod({ name, namespace });
      });
    pod.status = {
      phase,
      conditions: scheduledAt ? [{ type: 'PodScheduled', status: 'True', lastTransitionTime: scheduledAt }] : pod.status?.conditions,
      containerStatuses: [containerStatus],
    };
    await core.replaceNamespacedPodStatus({ name: pod.metadata!.name!, namespace, body: pod });
  }

  /** The job controller's status while its Pod exists but its container does not run yet. */
  const pending = (startTime: Date): V1JobStatus => ({ startTime, active: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {} });
  const running = (startTime: Date): V1JobStatus => ({ startTime, active: 1, ready: 1, terminating: 0, uncountedTerminatedPods: {} });
  /** As the job controller writes a Job whose one Pod exited 0 (1.31+: SuccessCriteriaMet, then Complete). */
  const completed = (startTime: Date, completionTime: Date): V1JobStatus => ({
    startTime,
    completionTime,
    active: 0,
    ready: 0,
    succeeded: 1,
    terminating: 0,
    uncountedTerminatedPods: {},
    conditions: [
      { type: 'SuccessCriteriaMet', status: 'True', reason: 'CompletionsReached', lastTransitionTime: completionTime, lastProbeTime: completionTime },
      { type: 'Complete', status: 'True', reason: 'CompletionsReached', lastTransitionTime: completionTime, lastProbeTime: completionTime },
    ],
  });

  const jobGone = (id: string) =>
    eventually(async () => {
      try {
        await batch.readNamespacedJob({ name: jobName(id), namespace });
        return false;
      } catch (err) {
        return (err as { code?: number }).code === 404;
      }
    });

  it('runs a job as a batch/v1 Job with its image and command, and follows it to success', async () => {
    const command = 'echo hello && sleep 1';
    const { id, job } = await createJob(command, 'performance');

    expect(job.metadata!.labels).toMatchObject({ 'cloudplane.dev/id': id, 'app.kubernetes.io/managed-by': 'cloudplane' });
    expect(job.spec).toMatchObject({ backoffLimit: 0, completions: 1, parallelism: 1 });
    expect(job.spec!.ttlSecondsAfterFinished).toBeUndefined();
    const pod = job.spec!.template.spec!;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.containers).toHaveLength(1);
    expect(pod.containers[0]).toMatchObject({ image: IMAGE, command: ['/bin/sh', '-c'], args: [command] });
    expect(pod.containers[0].resources!.requests).toEqual({ cpu: '2', memory: '4Gi' });
    expect((await t.api('GET', `/api/v1/jobs/${id}`)).body.data).toMatchObject({ status: 'queued', started_at: null, exit_code: null });

    const startTime = secondsAgo(4);
    await writeJobStatus(id, running(startTime));
    const shownRunning = await waitForStatus(t, `/api/v1/jobs/${id}`, 'running');
    expect(shownRunning).toMatchObject({ started_at: startTime.toISOString(), finished_at: null, exit_code: null });

    const completionTime = secondsAgo(1);
    await writeTerminatedPod(job, 0, startTime, completionTime);
    await writeJobStatus(id, completed(startTime, completionTime));
    const done = await waitForStatus(t, `/api/v1/jobs/${id}`, 'completed');
    expect(done).toMatchObject({ exit_code: 0, started_at: startTime.toISOString(), finished_at: completionTime.toISOString(), status_reason: null });
    // The record keeps the outcome; the Job is freed once it is written.
    await jobGone(id);
  });

  it('reports a failed Job with the exit code of its container', async () => {
    const { id, job } = await createJob('exit 3');
    const startTime = secondsAgo(3);
    await writeJobStatus(id, running(startTime));
    await waitForStatus(t, `/api/v1/jobs/${id}`, 'running');

    const failedAt = secondsAgo(1);
    await writeTerminatedPod(job, 3, startTime, failedAt);
    await writeJobStatus(id, {
      startTime,
      active: 0,
      ready: 0,
      failed: 1,
      terminating: 0,
      uncountedTerminatedPods: {},
      conditions: [
        {
          type: 'FailureTarget',
          status: 'True',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
          lastTransitionTime: failedAt,
          lastProbeTime: failedAt,
        },
        {
          type: 'Failed',
          status: 'True',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
          lastTransitionTime: failedAt,
          lastProbeTime: failedAt,
        },
      ],
    });
    const failed = await waitForStatus(t, `/api/v1/jobs/${id}`, 'failed');
    expect(failed).toMatchObject({
      exit_code: 3,
      started_at: startTime.toISOString(),
      finished_at: failedAt.toISOString(),
      status_reason: 'the command exited with code 3',
    });
  });

  it('cancels a running job by deleting its Job', async () => {
    const { id } = await createJob('sleep 3600');
    await writeJobStatus(id, running(secondsAgo(2)));
    await waitForStatus(t, `/api/v1/jobs/${id}`, 'running');

    expect((await t.api('POST', `/api/v1/jobs/${id}/cancel`)).status).toBeLessThan(300);
    const cancelled = await waitForStatus(t, `/api/v1/jobs/${id}`, 'cancelled');
    expect(cancelled.finished_at).not.toBeNull();
    await jobGone(id);
  });

  it('reports a job whose Job was deleted outside Cloudplane as failed, saying so', async () => {
    const { id } = await createJob('sleep 3600');
    await writeJobStatus(id, running(secondsAgo(2)));
    await waitForStatus(t, `/api/v1/jobs/${id}`, 'running');

    await batch.deleteNamespacedJob({ name: jobName(id), namespace, propagationPolicy: 'Background' });
    const failed = await waitForStatus(t, `/api/v1/jobs/${id}`, 'failed');
    expect(failed.exit_code).toBeNull();
    expect(failed.status_reason).toMatch(/no longer exists/);
  });

  it("fails a job whose image name is invalid at once, with the kubelet's message, and deletes its Job", async () => {
    const image = 'docker.io/library/BusyBox:1.36';
    const { id, job } = await createJob('true', 'standard', image);
    await writeJobStatus(id, pending(secondsAgo(0)));
    const message = `Failed to apply default image tag "${image}": couldn't parse image name "${image}": invalid reference format: repository name (library/BusyBox) must be lowercase`;
    // Scheduled just now: a timed pull failure could not have failed it yet.
    await writeWaitingPod(job, 'InvalidImageName', message, secondsAgo(0));

    const failed = await waitForStatus(t, `/api/v1/jobs/${id}`, 'failed');
    expect(failed).toMatchObject({ exit_code: null, started_at: null, status_reason: `the image "${image}" is not a valid image name: ${message}` });
    expect(failed.finished_at).not.toBeNull();
    await jobGone(id);
  });

  it('fails a job whose image keeps failing to pull once the pull timeout has passed, not before', async () => {
    const image = 'busybx:1.36';
    const { id, job } = await createJob('true', 'standard', image);
    const scheduledAt = secondsAgo(0);
    await writeJobStatus(id, pending(scheduledAt));
    const message = `Back-off pulling image "${image}": ErrImagePull: failed to pull and unpack image "docker.io/library/${image}": pull access denied, repository does not exist or may require authorization`;
    await writeWaitingPod(job, 'ImagePullBackOff', message, scheduledAt);

    const failed = await waitForStatus(t, `/api/v1/jobs/${id}`, 'failed');
    // The pull is timed from the Pod's scheduling time, so the failure cannot come earlier.
    expect(Date.now()).toBeGreaterThanOrEqual(scheduledAt.getTime() + PULL_TIMEOUT_S * 1000);
    expect(new Date(failed.finished_at).getTime()).toBeGreaterThanOrEqual(scheduledAt.getTime() + PULL_TIMEOUT_S * 1000);
    expect(failed).toMatchObject({
      exit_code: null,
      started_at: null,
      status_reason: `the image "${image}" could not be pulled in ${PULL_TIMEOUT_S} s: ${message}`,
    });
    await jobGone(id);
  });

  it("times a failing pull from the Pod's scheduling, so an operator that only now sees it (as after a restart) fails the job at once", async () => {
    const image = 'registry.example.com/private/tool:1';
    const { id, job } = await createJob('true', 'standard', image);
    // Scheduled ten minutes ago: the pull has failed for longer than the timeout, however recently this operator saw it.
    const scheduledAt = secondsAgo(600);
    const message = `Failed to pull image "${image}": unauthorized: authentication required`;
    await writeWaitingPod(job, 'ErrImagePull', message, scheduledAt);
    // No active Pod in the Job's status yet (the job controller has not counted it): nothing is read, the job waits.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await t.api('GET', `/api/v1/jobs/${id}`)).body.data.status).toBe('queued');

    await writeJobStatus(id, pending(scheduledAt));
    const failed = await waitForStatus(t, `/api/v1/jobs/${id}`, 'failed');
    expect(failed.status_reason).toBe(`the image "${image}" could not be pulled in ${PULL_TIMEOUT_S} s: ${message}`);
    await jobGone(id);
  });

  it('leaves a job whose image was pulled alone: it runs and completes past the pull timeout', async () => {
    const { id, job } = await createJob('sleep 3');
    const startTime = secondsAgo(PULL_TIMEOUT_S + 3);
    // Pulling the image: a waiting reason that is no pull failure.
    await writeWaitingPod(job, 'ContainerCreating', '', startTime);
    await writeJobStatus(id, pending(startTime));
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await t.api('GET', `/api/v1/jobs/${id}`)).body.data.status).toBe('queued');

    await writeJobStatus(id, running(startTime));
    await waitForStatus(t, `/api/v1/jobs/${id}`, 'running');
    const completionTime = secondsAgo(0);
    await writeTerminatedPod(job, 0, startTime, completionTime);
    await writeJobStatus(id, completed(startTime, completionTime));
    const done = await waitForStatus(t, `/api/v1/jobs/${id}`, 'completed');
    expect(done).toMatchObject({ exit_code: 0, status_reason: null });
  });

  it('made only calls the chart grants, none refused: Jobs made, read and deleted, their Pods listed', () => {
    const calls = expectOnlyListedCalls(server);
    const onJobs = new Set(calls.filter((c) => c.resource === 'jobs' && c.namespace === namespace).map((c) => c.verb));
    expect([...onJobs].sort()).toEqual(['create', 'delete', 'get']);
    expect(calls.some((c) => c.resource === 'pods' && c.verb === 'list' && c.namespace === namespace)).toBe(true);
  });
});
