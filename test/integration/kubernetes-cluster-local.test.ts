/**
 * The local Kubernetes cluster driver with the real binaries make test builds (etcd,
 * kube-apiserver, KWOK): a cluster made through the API answers `kubectl get nodes` with
 * exactly its pools' nodes through the API's kubeconfig, scaling a pool changes them, a
 * rotated kubeconfig stops the old token, and deleting the cluster stops its processes and
 * leaves no etcd data behind. The token is in no file of the cluster's directory.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { etcdBinary, kubeApiServerBinary, kubectlBinary } from '../helpers/kube-apiserver';
import { kwokTool } from '../helpers/workload-cluster';
import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';
import { findInFiles } from '../helpers/secret-scan';
import { isAlive } from '../../src/lib/processes';

const exec = promisify(execFile);

describe('Kubernetes clusters on the local driver (etcd, kube-apiserver and KWOK)', () => {
  let t: TestService;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-k8s-'));
    const binPath = [etcdBinary(), kubeApiServerBinary(), kwokTool().binary].map((binary) => path.dirname(binary)).join(path.delimiter);
    t = await startTestService({
      CLOUDPLANE_DRIVER_KUBERNETES_CLUSTER: 'local',
      CLOUDPLANE_KUBERNETES_BIN_PATH: binPath,
      CLOUDPLANE_LOCAL_KUBERNETES_DIR: dir,
      CLOUDPLANE_RESYNC_SECONDS: '2',
    });
  }, 120_000);
  afterAll(async () => {
    await t.stop();
    // What a failed test left running.
    for (const cluster of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      const pidsFile = path.join(dir, cluster, 'processes.json');
      if (!fs.existsSync(pidsFile)) continue;
      for (const pid of Object.values<number>(JSON.parse(fs.readFileSync(pidsFile, 'utf8')))) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const kubectl = async (kubeconfig: string, ...args: string[]) => {
    const file = path.join(t.dataDir, `kubeconfig-${Date.now()}-${Math.random()}`);
    fs.writeFileSync(file, kubeconfig, { mode: 0o600 });
    try {
      return (await exec(kubectlBinary(), ['--kubeconfig', file, ...args], { timeout: 30_000 })).stdout;
    } finally {
      fs.rmSync(file, { force: true });
    }
  };
  const nodeNames = async (kubeconfig: string) =>
    (await kubectl(kubeconfig, 'get', 'nodes', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').filter(Boolean).sort();

  it('answers kubectl with its pools’ nodes, scales a pool, rotates its token and leaves nothing when deleted', async () => {
    const created = await t.api('POST', '/api/v1/kubernetes-clusters', {
      name: 'dev',
      region: 'fra1',
      node_pools: [
        { name: 'workers', size: 's-2vcpu-4gb', count: 2, labels: { tier: 'web' } },
        { name: 'gpu', size: 's-4vcpu-8gb', count: 1, taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }] },
      ],
    });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const running = await waitForStatus(t, `/api/v1/kubernetes-clusters/${id}`, 'running', 180_000);
    expect(running.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    await eventually(async () => {
      const cluster = (await t.api('GET', `/api/v1/kubernetes-clusters/${id}`)).body.data;
      return cluster.node_pools.every((pool: { count: number; ready_nodes: number }) => pool.ready_nodes === pool.count);
    }, 120_000);

    const kubeconfig = (await t.api('GET', `/api/v1/kubernetes-clusters/${id}/kubeconfig`)).body as string;
    // The kubeconfig trusts the cluster's own authority; kubectl checks the API server's certificate with it.
    expect(kubeconfig).toContain('certificate-authority-data');
    expect(kubeconfig).not.toContain('insecure-skip-tls-verify');
    expect(await nodeNames(kubeconfig)).toEqual(['gpu-0', 'workers-0', 'workers-1']);
    const gpu = JSON.parse(await kubectl(kubeconfig, 'get', 'node', 'gpu-0', '-o', 'json'));
    expect(gpu.spec.taints).toEqual([{ key: 'gpu', value: 'true', effect: 'NoSchedule' }]);
    expect(JSON.parse(await kubectl(kubeconfig, 'get', 'node', 'workers-1', '-o', 'json')).metadata.labels).toMatchObject({ tier: 'web' });

    // Scaling a pool changes its nodes.
    expect((await t.api('PATCH', `/api/v1/kubernetes-clusters/${id}/node-pools/workers`, { count: 3 })).status).toBe(200);
    await eventually(async () => (await nodeNames(kubeconfig)).join(' ') === 'gpu-0 workers-0 workers-1 workers-2', 120_000);

    // A rotated kubeconfig: the new token works, the old one no longer does.
    expect((await t.api('POST', `/api/v1/kubernetes-clusters/${id}/kubeconfig/rotate`)).status).toBe(200);
    const rotated = (await t.api('GET', `/api/v1/kubernetes-clusters/${id}/kubeconfig`)).body as string;
    expect(rotated).not.toBe(kubeconfig);
    await eventually(async () => {
      try {
        await nodeNames(kubeconfig);
        return false;
      } catch (err) {
        return /Unauthorized|must be logged in/.test(String(err));
      }
    }, 120_000);
    expect(await nodeNames(rotated)).toHaveLength(4);

    // Neither token is in the cluster's files (etcd holds Secrets encrypted) nor the service's data directory.
    const token = (yaml: string) => /token: (\S+)/.exec(yaml)?.[1] ?? '';
    const needles = [
      { label: 'kubeconfig token', value: token(kubeconfig) },
      { label: 'rotated kubeconfig token', value: token(rotated) },
    ];
    expect(needles.every((n) => n.value.length === 23)).toBe(true);
    expect([...findInFiles(path.join(dir, id), needles), ...findInFiles(t.dataDir, needles)]).toEqual([]);

    const pids = Object.values<number>(JSON.parse(fs.readFileSync(path.join(dir, id, 'processes.json'), 'utf8')));
    expect(pids).toHaveLength(3);
    expect((await t.api('DELETE', `/api/v1/kubernetes-clusters/${id}`)).status).toBe(202);
    await eventually(async () => !fs.existsSync(path.join(dir, id)), 120_000);
    await eventually(async () => pids.every((pid) => !isAlive(pid)), 30_000);
  }, 600_000);
});
