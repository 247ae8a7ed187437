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
import { BatchV1Api } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { eventually, startServiceUnderChartRbac, TestService, waitForStatus } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { eventsOf, Receiver, startReceiver } from '../helpers/receiver';

jest.setTimeout(240_000);

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

  const typesFor = (id: string) => eventsOf(receiver).filter((e) => e.data.id === id).map((e) => e.type);

  it("runs a job as a batch/v1 Job to completion, and GET /jobs/{id}/logs shows its Pod's log read through the API server", async () => {
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
});
