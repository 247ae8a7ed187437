/**
 * Jobs in cluster mode on a control plane that runs them: the operator, with the
 * Kubernetes job driver, on kube-apiserver + kube-controller-manager (its Job and CronJob
 * controllers) + kube-scheduler, whose kubelets KWOK plays (test/helpers/workload-cluster.ts).
 * KWOK also serves the kubelet's API, with every container's log being LOG_FILE, so a
 * job's output comes the whole way: the API server proxies pods/log to KWOK's server.
 * The operator runs as the chart's ServiceAccount under exactly the chart's RBAC.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BatchV1Api, V1CronJob } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { eventually, startServiceUnderChartRbac, TestService, waitForStatus } from '../helpers/service';
import { startWorkloadCluster, UNREACHABLE_REGISTRY, WorkloadCluster } from '../helpers/workload-cluster';
import { kubectlOn } from '../helpers/kube-apiserver';
import { expectOnlyListedCalls } from '../helpers/chart';
import { eventsOf, inCreatedOrder, Receiver, startReceiver } from '../helpers/receiver';

jest.setTimeout(360_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
/** What every container "printed": the CRI log format the kubelet keeps, as KWOK reads it. */
const LOG_LINES = ['hello from a KWOK container', 'second line'];
const criLog = (lines: string[]) => lines.map((line, i) => `2026-01-01T00:00:0${i}.000000000Z stdout F ${line}\n`).join('');

describe('jobs on a cluster that runs them (kube-controller-manager, KWOK)', () => {
  let cluster: WorkloadCluster;
  let t: TestService;
  let batch: BatchV1Api;
  let namespace: string;
  let receiver: Receiver;

  beforeAll(async () => {
    const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-kwok-logs-')), 'container.log');
    fs.writeFileSync(logFile, criLog(LOG_LINES));
    cluster = await startWorkloadCluster({ crds: true, podLogsFile: logFile });
    batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
    t = await startServiceUnderChartRbac(cluster, {
      CLOUDPLANE_SYSTEM_NAMESPACE: SYSTEM_NAMESPACE,
      CLOUDPLANE_JOB_DRIVER: 'kubernetes',
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // The tests poll the API every 25 ms for up to 90 s while KWOK runs a Job: on a loaded
      // machine that passed the default 1,000 requests a minute, and the 429s that followed
      // read as a missing run and an empty log (as in scheduled-jobs.test.ts).
      CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000',
      // A CronJob deleted by hand is put back at the next look, the resync (30 s by
      // default): 5 s here, so that wait is not most of the test.
      CLOUDPLANE_RESYNC_SECONDS: '5',
    });
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
    receiver = await startReceiver();
    expect((await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['job.*'] })).status).toBe(201);
  });

  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
    await cluster?.stop();
  });

  const typesFor = (id: string) => inCreatedOrder(eventsOf(receiver).filter((e) => e.data.id === id)).map((e) => e.type);
  const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);
  const runsOf = async (id: string): Promise<any[]> => (await t.api('GET', `/api/v1/jobs/${id}/runs?limit=100`)).body.data;
  /** The CronJob of a scheduled job, or null once there is none. */
  const cronJobOf = async (id: string): Promise<V1CronJob | null> =>
    batch.readNamespacedCronJob({ name: objectName(id), namespace }).catch((err) => {
      if ((err as { code?: number }).code === 404) return null;
      throw err;
    });
  /** `kubectl create job --from=cronjob/...`: a run made by hand from the CronJob's template, owned by it. */
  const runByHand = (id: string, name: string) => kubectl('create', 'job', name, `--from=cronjob/${objectName(id)}`, '-n', namespace);

  // The three below run side by side: the CronJob controller's schedule takes one to two
  // whole minutes of waiting, during which the others' jobs run on the same cluster. Each
  // looks only at its own job's runs, events and Jobs.
  it.concurrent("runs a job as a batch/v1 Job to completion, and GET /jobs/{id}/logs shows its Pod's log read through the API server", async () => {
    const created = await t.api('POST', '/api/v1/jobs', { name: 'say-hello', command: 'echo hello' });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const done = await waitForStatus(t, `/api/v1/jobs/${id}`, 'completed', 90_000);
    expect(done).toMatchObject({ exit_code: 0, status_reason: null });
    const logs = await t.api('GET', `/api/v1/jobs/${id}/logs`);
    expect(logs.status).toBe(200);
    expect(logs.body.data).toEqual({ job_id: id, run_id: id, status: 'completed', output: LOG_LINES.map((l) => `${l}\n`).join('') });
    await eventually(async () => typesFor(id).includes('job.completed'), 20_000);
    expect(typesFor(id)).toEqual(['job.queued', 'job.running', 'job.completed']);
    // The outcome is on the record: the Job is freed.
    await eventually(async () => !(await batch.listNamespacedJob({ namespace })).items.some((j) => j.metadata?.name === objectName(id)), 30_000);
  });

  it.concurrent(
    'keeps a scheduled job as a batch/v1 CronJob: schedule, zone and policy mapped, pause and resume as suspend, each Job it makes recorded as a run; cancel removes it',
    async () => {
      const created = await t.api('POST', '/api/v1/jobs', {
        name: 'nightly',
        command: 'echo nightly',
        schedule: '30 3 * * 1-5',
        timezone: 'Europe/Berlin',
        concurrency_policy: 'forbid',
      });
      expect(created.status).toBe(201);
      const job = created.body.data;
      const cronJob = (await eventually(() => cronJobOf(job.id), 30_000))!;
      expect(cronJob.metadata!.labels).toMatchObject({ 'cloudplane.dev/id': job.id, 'app.kubernetes.io/managed-by': 'cloudplane' });
      expect(cronJob.spec).toMatchObject({ schedule: '30 3 * * 1-5', timeZone: 'Europe/Berlin', concurrencyPolicy: 'Forbid', suspend: false });
      const template = cronJob.spec!.jobTemplate.spec!;
      expect(template).toMatchObject({ backoffLimit: 0, completions: 1, parallelism: 1 });
      expect(template.template.spec!.containers[0]).toMatchObject({
        image: 'docker.io/library/alpine:3.20',
        command: ['/bin/sh', '-c'],
        args: ['echo nightly'],
      });
      const shown = await eventually(async () => {
        const current = (await t.api('GET', `/api/v1/jobs/${job.id}`)).body.data;
        return current.next_run_at ? current : null;
      });
      expect(shown).toMatchObject({ status: 'scheduled', last_run_at: null });
      expect(new Date(shown.next_run_at).getUTCMinutes()).toBe(30);

      expect((await t.api('POST', `/api/v1/jobs/${job.id}/pause`)).body.data.status).toBe('paused');
      await eventually(async () => (await cronJobOf(job.id))?.spec?.suspend === true, 20_000);
      expect((await t.api('POST', `/api/v1/jobs/${job.id}/resume`)).body.data.status).toBe('scheduled');
      await eventually(async () => (await cronJobOf(job.id))?.spec?.suspend === false, 20_000);

      // A run made by hand from the CronJob, as the CronJob controller makes one at a time of the schedule.
      await runByHand(job.id, 'nightly-by-hand');
      const [run] = await eventually(async () => {
        const runs = await runsOf(job.id);
        return runs.length === 1 && runs[0].status === 'completed' ? runs : null;
      }, 90_000);
      expect(run).toMatchObject({ scheduled_job_id: job.id, name: 'nightly', command: 'echo nightly', schedule: null, exit_code: 0 });
      expect(run.id).not.toBe(job.id);
      const logs = (await t.api('GET', `/api/v1/jobs/${job.id}/logs`)).body.data;
      expect(logs).toEqual({ job_id: job.id, run_id: run.id, status: 'completed', output: LOG_LINES.map((l) => `${l}\n`).join('') });
      // Deliveries run side by side, so job.running may arrive after job.completed: wait for all three, then compare in created order.
      await eventually(async () => typesFor(run.id).length >= 3, 20_000).catch(() => undefined);
      expect(typesFor(run.id)).toEqual(['job.queued', 'job.running', 'job.completed']);
      expect(eventsOf(receiver).find((e) => e.data.id === run.id).data).toMatchObject({ scheduled_job_id: job.id, scheduled_at: run.scheduled_at });
      // The outcome is on the run's record: its Job is freed, and no second run is recorded.
      await eventually(async () => !(await batch.listNamespacedJob({ namespace })).items.some((j) => j.metadata?.name === 'nightly-by-hand'), 30_000);
      expect(await runsOf(job.id)).toHaveLength(1);
      await eventually(async () => (await t.api('GET', `/api/v1/jobs/${job.id}`)).body.data.last_run_at === run.scheduled_at);

      // Deleted or edited by hand: put back at the next look (the resync, shortened above).
      await batch.deleteNamespacedCronJob({ name: objectName(job.id), namespace });
      const back = await eventually(
        async () => {
          const current = await cronJobOf(job.id);
          return current && !current.metadata?.deletionTimestamp && current.metadata?.uid !== cronJob.metadata!.uid ? current : null;
        },
        90_000,
        500,
      );
      expect(back.spec).toMatchObject({ schedule: '30 3 * * 1-5', timeZone: 'Europe/Berlin', concurrencyPolicy: 'Forbid', suspend: false });

      const cancelled = await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
      expect(cancelled.body.data.status).toBe('cancelled');
      await eventually(async () => (await cronJobOf(job.id)) === null, 20_000);
    },
  );

  it.concurrent("runs on the CronJob controller's own schedule; under replace the next time cancels the run still going", async () => {
    // Pods of this image never start (KWOK fails its pull), so a run stays queued until replaced.
    const image = `${UNREACHABLE_REGISTRY}/tool:1`;
    const created = await t.api('POST', '/api/v1/jobs', {
      name: 'every-minute',
      command: 'echo tick',
      image,
      schedule: '* * * * *',
      concurrency_policy: 'replace',
    });
    expect(created.status).toBe(201);
    const job = created.body.data;
    expect((await eventually(() => cronJobOf(job.id), 30_000))!.spec).toMatchObject({ schedule: '* * * * *', timeZone: 'UTC', concurrencyPolicy: 'Replace' });

    // Two whole minutes at most: the CronJob controller makes a Job at each, deleting the one still going.
    const [first] = await eventually(
      async () => {
        const runs = await runsOf(job.id);
        return runs.length >= 1 ? runs : null;
      },
      90_000,
      500,
    );
    expect(first).toMatchObject({ scheduled_job_id: job.id, status: 'queued', exit_code: null });
    // The CronJob's time: a whole minute.
    expect(first.scheduled_at).toMatch(/:00\.000Z$/);
    await eventually(async () => (await t.api('GET', `/api/v1/jobs/${job.id}`)).body.data.last_run_at === first.scheduled_at, 20_000, 500);
    const replaced = await eventually(
      async () => {
        const res = await t.api('GET', `/api/v1/jobs/${first.id}`);
        return res.body.data.status === 'cancelled' ? res.body.data : null;
      },
      // The next whole minute, the CronJob controller's sync (10 s) and a busy machine's reconcile.
      150_000,
      500,
    );
    expect(replaced.status_reason).toBe('Replaced by a later run of its schedule (concurrency policy replace).');
    const second = await eventually(async () => (await runsOf(job.id)).find((r) => r.id !== first.id), 30_000, 500);
    expect(second).toMatchObject({ scheduled_job_id: job.id, status: 'queued' });
    expect(Date.parse(second.scheduled_at) - Date.parse(first.scheduled_at)).toBe(60_000);
    await eventually(async () => typesFor(first.id).includes('job.cancelled'), 20_000);
    expect(typesFor(first.id)).toEqual(['job.queued', 'job.cancelled']);

    // Cancelling the schedule removes the CronJob; the run it made goes on until cancelled itself.
    expect((await t.api('POST', `/api/v1/jobs/${job.id}/cancel`)).body.data.status).toBe('cancelled');
    await eventually(async () => (await cronJobOf(job.id)) === null, 20_000);
    expect((await t.api('GET', `/api/v1/jobs/${second.id}`)).body.data.status).toBe('queued');
    expect((await t.api('POST', `/api/v1/jobs/${second.id}/cancel`)).body.data.status).toBe('cancelled');
    await eventually(
      async () => !(await batch.listNamespacedJob({ namespace })).items.some((j) => j.metadata?.labels?.['cloudplane.dev/scheduled-job-id'] === job.id),
      30_000,
      500,
    );
  });

  it('made only calls the chart grants, none refused: CronJobs made, read, replaced and deleted; Jobs listed', () => {
    const calls = expectOnlyListedCalls(cluster);
    const on = (resource: string) => [...new Set(calls.filter((c) => c.resource === resource && c.namespace === namespace).map((c) => c.verb))].sort();
    expect(on('cronjobs')).toEqual(['create', 'delete', 'get', 'update']);
    expect(on('jobs')).toEqual(['create', 'delete', 'get', 'list']);
  });
});
