/**
 * GitOps conventions on a real kube-apiserver, with the real kubectl and the real service
 * in cluster mode: a load balancer's backends name servers by their custom resource's
 * name (`serverRef`), which Git knows before any API id exists, and managed resources
 * publish their connection details to the Secret named in `writeConnectionSecretToRef`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { installCrds, kubeConfigOf, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer, kubectlOn, secretDataOf } from '../helpers/kube-apiserver';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';

jest.setTimeout(120_000);

const SETTLE_MS = 40_000;

let cluster: KubeApiServer;
let t: TestService;
let core: CoreV1Api;
let namespace: string;
let workDir: string;

const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);

/** kubectl apply of YAML text, as a GitOps sync would apply a file from the repository. */
async function apply(yaml: string): Promise<string> {
  const file = path.join(workDir, `manifest-${Date.now()}-${Math.random().toString(36).slice(2)}.yaml`);
  fs.writeFileSync(file, yaml);
  return kubectl('apply', '-n', namespace, '-f', file);
}

const getJson = async (short: string, name: string) => JSON.parse(await kubectl('get', short, name, '-n', namespace, '-o', 'json'));
/** The API id the operator gave a kubectl-made object, once it is adopted (has a status). */
const adoptedId = (short: string, name: string) =>
  eventually(
    async () => {
      const object = await getJson(short, name);
      return object.status?.status ? (object.metadata.labels['cloudplane.dev/id'] as string) : null;
    },
    SETTLE_MS,
    100,
  );
const secretData = (name: string) => secretDataOf(core, namespace, name);

const serverYaml = (name: string, extra = '') => `
apiVersion: cloudplane.dev/v1alpha1
kind: Server
metadata:
  name: ${name}
spec:
  name: ${name}
  region: fra1
  plan: s-1vcpu-1gb
${extra}`;

beforeAll(async () => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-gitops-'));
  cluster = await startKubeApiServer();
  await installCrds(cluster);
  t = await startTestService({ ...storeEnvFor(cluster), CLOUDPLANE_SIM_DELAY_MS: '50', CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000' });
  core = kubeConfigOf(cluster).makeApiClient(CoreV1Api);
  namespace = t.teamId.replace('_', '-');
  await kubectl('create', 'namespace', namespace).catch((err: Error) => {
    if (!/AlreadyExists/.test(err.message)) throw err;
  });
}, 120_000);

afterAll(async () => {
  await t?.stop();
  await cluster?.stop();
  if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
});

describe('backends by reference and connection Secrets', () => {
  test('a load balancer applied before its server waits for it by name, attaches it once it exists, and publishes its address', async () => {
    // The load balancer comes first: Git does not order the files of a sync.
    await apply(`
apiVersion: cloudplane.dev/v1alpha1
kind: LoadBalancer
metadata:
  name: front
spec:
  name: front
  region: fra1
  protocol: http
  port: 80
  backends:
    - serverRef: { name: web-1 }
      port: 8080
  writeConnectionSecretToRef: { name: front-connection }
`);
    const lbId = await adoptedId('cplb', 'front');
    const waiting = await eventually(
      async () => {
        const lb = (await t.api('GET', `/api/v1/load-balancers/${lbId}`)).body.data;
        return lb.status === 'running' && lb.status_reason ? lb : null;
      },
      SETTLE_MS,
      100,
    );
    expect(waiting.status_reason).toMatch(/serverRef "web-1" names no Server in this namespace/);
    expect(waiting.backends).toEqual([{ server_id: null, server_ref: { name: 'web-1' }, port: 8080, status: 'unhealthy' }]);
    // The reason is the Ready condition's message, which kubectl describe shows.
    const cr = await getJson('cplb', 'front');
    expect(cr.status.conditions.find((c: { type: string }) => c.type === 'Ready').message).toMatch(/web-1/);

    await apply(serverYaml('web-1'));
    const serverId = await adoptedId('cpsvr', 'web-1');
    const server = await waitForStatus(t, `/api/v1/servers/${serverId}`, 'running', SETTLE_MS);

    // The server's arrival brings the load balancer back: the reference resolves and the backend is checked healthy.
    const attached = await eventually(
      async () => {
        const lb = (await t.api('GET', `/api/v1/load-balancers/${lbId}`)).body.data;
        return lb.backends[0]?.status === 'healthy' && lb.status_reason === null ? lb : null;
      },
      SETTLE_MS,
      100,
    );
    expect(attached.backends).toEqual([{ server_id: serverId, server_ref: { name: 'web-1' }, port: 8080, status: 'healthy' }]);
    expect(attached.ipv4).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(server.ipv4).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

    // A workload reads the address from the Secret, not from the API.
    const details = await eventually(() => secretData('front-connection'), SETTLE_MS, 100);
    expect(details).toEqual({ address: attached.ipv4, port: '80', protocol: 'http', url: `http://${attached.ipv4}:80` });
    const secret = await core.readNamespacedSecret({ name: 'front-connection', namespace });
    const lbObject = await getJson('cplb', 'front');
    // Owned by the custom resource: the garbage collector removes it with it.
    expect(secret.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'cloudplane.dev/v1alpha1',
        kind: 'LoadBalancer',
        name: 'front',
        uid: lbObject.metadata.uid,
        controller: true,
        blockOwnerDeletion: false,
      }),
    ]);

    // A change of what it publishes is written through.
    await kubectl('patch', 'cplb', 'front', '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { port: 8081 } }));
    const moved = await eventually(
      async () => ((await secretData('front-connection'))?.port === '8081' ? secretData('front-connection') : null),
      SETTLE_MS,
      100,
    );
    expect(moved).toEqual({ address: attached.ipv4, port: '8081', protocol: 'http', url: `http://${attached.ipv4}:8081` });
  });

  test('a backend that gives both server_id and serverRef, or neither, is refused by the API server on apply', async () => {
    const lb = (backend: string) => `
apiVersion: cloudplane.dev/v1alpha1
kind: LoadBalancer
metadata:
  name: both
spec:
  name: both
  region: fra1
  backends:
    - ${backend}
`;
    await expect(apply(lb('{ server_id: svr_aaaaaaaaaaaaaaaaaaaa, serverRef: { name: web-1 }, port: 8080 }'))).rejects.toThrow(
      /exactly one of server_id and serverRef/,
    );
    await expect(apply(lb('{ port: 8080 }'))).rejects.toThrow(/exactly one of server_id and serverRef/);
    await expect(kubectl('get', 'cplb', 'both', '-n', namespace)).rejects.toThrow(/NotFound/);
  });

  test('a server and a bucket publish their details; a bucket publishes no credentials', async () => {
    await apply(
      serverYaml('web-2', '  writeConnectionSecretToRef: { name: web-2-connection }\n') +
        `---
apiVersion: cloudplane.dev/v1alpha1
kind: Bucket
metadata:
  name: assets
spec:
  name: team-assets
  region: fra1
  writeConnectionSecretToRef: { name: assets-connection }
`,
    );
    const serverId = await adoptedId('cpsvr', 'web-2');
    const server = await waitForStatus(t, `/api/v1/servers/${serverId}`, 'running', SETTLE_MS);
    expect(await eventually(() => secretData('web-2-connection'), SETTLE_MS, 100)).toEqual({ address: server.ipv4 });

    const bucketId = await adoptedId('cpbkt', 'assets');
    const bucket = await waitForStatus(t, `/api/v1/object-storage/${bucketId}`, 'available', SETTLE_MS);
    const details = await eventually(() => secretData('assets-connection'), SETTLE_MS, 100);
    expect(details).toEqual({ endpoint: bucket.endpoint, bucket: 'team-assets', region: 'fra1' });

    // Deleted, it publishes nothing: the Secret goes as the deletion begins, not after the record's retention
    // (this API server has no garbage collector, so nothing else could remove it).
    expect((await t.api('DELETE', `/api/v1/object-storage/${bucketId}`)).status).toBeLessThan(300);
    await eventually(async () => (await secretData('assets-connection')) === undefined, SETTLE_MS, 100);
    expect((await t.api('GET', `/api/v1/object-storage/${bucketId}`)).body.data.status).toMatch(/deleting|deleted/);
  });

  test('a file share publishes its NFS export and a VPN gateway its public address', async () => {
    await apply(`
apiVersion: cloudplane.dev/v1alpha1
kind: FileShare
metadata:
  name: home
spec:
  name: home
  region: fra1
  size_gb: 100
  writeConnectionSecretToRef: { name: home-connection }
---
apiVersion: cloudplane.dev/v1alpha1
kind: VpnGateway
metadata:
  name: office
spec:
  name: office
  region: fra1
  tunnel_type: wireguard
  local_network_cidr: 10.30.0.0/16
  remote_network_cidr: 192.168.30.0/24
  remote_peer_ip: 93.184.216.40
  psk_version: 1
  writeConnectionSecretToRef: { name: office-connection }
`);
    const shareId = await adoptedId('cpfs', 'home');
    const share = await waitForStatus(t, `/api/v1/file-storage/${shareId}`, 'available', SETTLE_MS);
    const [server, exportPath] = share.mount_target.split(':');
    expect(await eventually(() => secretData('home-connection'), SETTLE_MS, 100)).toEqual({
      mount_target: share.mount_target,
      nfs_server: server,
      nfs_path: exportPath,
    });

    const gatewayId = await adoptedId('cpvpn', 'office');
    const gateway = await waitForStatus(t, `/api/v1/vpn-gateways/${gatewayId}`, 'active', SETTLE_MS);
    expect(await eventually(() => secretData('office-connection'), SETTLE_MS, 100)).toEqual({
      public_ip: gateway.local_ip,
      tunnel_type: 'wireguard',
      public_key: gateway.public_key,
      local_network_cidr: '10.30.0.0/16',
    });
  });

  test("a Secret of the name that is not the resource's is never written over; the resource says why", async () => {
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'taken' }, stringData: { password: 'not-yours' } } });
    await apply(serverYaml('web-3', '  writeConnectionSecretToRef: { name: taken }\n'));
    const id = await adoptedId('cpsvr', 'web-3');
    const refused = await eventually(
      async () => {
        const server = (await t.api('GET', `/api/v1/servers/${id}`)).body.data;
        return server.status === 'running' && server.status_reason ? server : null;
      },
      SETTLE_MS,
      100,
    );
    expect(refused.status_reason).toMatch(/Connection secret "taken" was not written/);
    expect(await secretData('taken')).toEqual({ password: 'not-yours' });

    // Pointed at a free name, it publishes there and the reason clears.
    await kubectl(
      'patch',
      'cpsvr',
      'web-3',
      '-n',
      namespace,
      '--type',
      'merge',
      '-p',
      JSON.stringify({ spec: { writeConnectionSecretToRef: { name: 'web-3-connection' } } }),
    );
    expect(await eventually(() => secretData('web-3-connection'), SETTLE_MS, 100)).toEqual({ address: refused.ipv4 });
    await eventually(async () => (await t.api('GET', `/api/v1/servers/${id}`)).body.data.status_reason === null, SETTLE_MS, 100);
  });

  test('the REST API does not take writeConnectionSecretToRef: it is a manifest field', async () => {
    const res = await t.api('POST', '/api/v1/servers', { name: 'rest-made', region: 'fra1', plan: 's-1vcpu-1gb', writeConnectionSecretToRef: { name: 'x' } });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
  });
});
