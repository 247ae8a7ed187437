/**
 * VPN gateways in cluster mode with the Kubernetes driver, on a real control plane whose
 * kubelets KWOK plays (test/helpers/workload-cluster.ts), the operator running under the
 * chart's RBAC, and load-balancer-addon.ts playing MetalLB. The test reads the real
 * objects the driver made: the agent's Secret, its Deployment and its UDP Service.
 *
 * The operator's log (debug level), every status it wrote and every event are searched
 * for the pre-shared keys and the WireGuard private key: they may be in the agent's
 * Secret and nowhere else.
 */
import { Writable } from 'node:stream';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, V1Deployment, V1Secret, V1Service } from '@kubernetes/client-node';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService, RunningService } from '../../src/service';
import { namespaceOfTeam, objectName, entryObjectName } from '../../src/store/kubernetes/names';
import { CONFIG_KEY, PRIVATE_KEY_KEY, wireguardPublicKey } from '../../src/drivers/kubernetes/vpn-gateway-manifests';
import type { VpnAgentConfig } from '../../src/vpn-agent/config';
import { LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { eventually, FAST_ENV, request, tempDataDir } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { expectOnlyListedCalls, operatorEnvFromChart } from '../helpers/chart';
import { findIn, Needle } from '../helpers/secret-scan';

jest.setTimeout(300_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const GATEWAY = { region: 'fra1', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4', local_network_cidr: '10.10.0.0/16' };

describe('cluster mode: VPN gateways as the VPN agent behind a UDP LoadBalancer Service', () => {
  let cluster: WorkloadCluster;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let addon: LoadBalancerAddon;
  let service: RunningService;
  let key: string;
  let namespace: string;
  const logLines: string[] = [];
  const needles: Needle[] = [];

  const api = (method: string, path: string, body?: unknown) => request(service.url, method, path, body, { key });
  const gatewayOf = async (id: string) => (await api('GET', `/api/v1/vpn-gateways/${id}`)).body.data;

  /** The driver's objects for gateway `id`; null for one that is not there. */
  const objectsOf = async (id: string) => {
    const name = objectName(id);
    const read = async <T>(call: () => Promise<T>): Promise<T | null> => call().catch((err) => (err?.code === 404 ? null : Promise.reject(err)));
    return {
      secret: await read<V1Secret>(() => core.readNamespacedSecret({ namespace, name: `${name}-agent` })),
      deployment: await read<V1Deployment>(() => apps.readNamespacedDeployment({ namespace, name })),
      service: await read<V1Service>(() => core.readNamespacedService({ namespace, name })),
    };
  };
  const configIn = (secret: V1Secret | null): VpnAgentConfig | null => {
    const data = secret?.data?.[CONFIG_KEY];
    return data ? JSON.parse(Buffer.from(data, 'base64').toString('utf8')) : null;
  };

  beforeAll(async () => {
    cluster = await startWorkloadCluster({ crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    addon = await startLoadBalancerAddon(cluster.kubeConfig);
    const dataDir = tempDataDir();
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    const config = loadConfig({
      ...FAST_ENV,
      CLOUDPLANE_PORT: '0',
      CLOUDPLANE_DATA_DIR: dataDir,
      CLOUDPLANE_STORE: 'kubernetes',
      ...operatorEnvFromChart(cluster, cluster.workDir),
      CLOUDPLANE_SYSTEM_NAMESPACE: SYSTEM_NAMESPACE,
      CLOUDPLANE_VPN_COUNTER_INTERVAL_SECONDS: '2',
      // Only the drivers' own polls and watches bring passes: the resync is out of the test's reach.
      CLOUDPLANE_RESYNC_SECONDS: '3600',
      CLOUDPLANE_LOG_LEVEL: 'debug',
    });
    service = await startService(config, createLogger('debug', sink));
    key = service.bootstrap!.token;
    namespace = namespaceOfTeam(service.bootstrap!.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    await service?.stop();
    await addon?.stop();
    await cluster?.stop();
  });

  it('chooses the kubernetes driver for VPN gateways in cluster mode', () => {
    expect(service.ctx.drivers.chosen.vpn_gateway).toBe('kubernetes');
  });

  it("makes a WireGuard gateway's Secret (key made once, configuration at the Service's address), Deployment and UDP Service", async () => {
    const created = await api('POST', '/api/v1/vpn-gateways', { ...GATEWAY, name: 'wg-objects', tunnel_type: 'wireguard' });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const made = await eventually(
      async () => {
        const objects = await objectsOf(id);
        return objects.deployment && configIn(objects.secret) ? objects : null;
      },
      60_000,
      200,
    );
    const { secret, deployment, service: svc } = made;
    for (const object of [secret!, deployment!, svc!]) {
      expect(object.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': id });
      expect(object.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'VpnGateway', controller: true })]);
    }
    const address = addon.assigned().get(`${namespace}/${objectName(id)}`);
    expect(svc!.spec).toMatchObject({ type: 'LoadBalancer', ports: [expect.objectContaining({ port: 51820, protocol: 'UDP' })] });
    expect(svc!.status?.loadBalancer?.ingress?.[0]?.ip).toBe(address);

    const privateKey = Buffer.from(secret!.data![PRIVATE_KEY_KEY], 'base64').toString('utf8');
    needles.push({ label: 'WireGuard private key', value: privateKey }, { label: 'WireGuard private key bytes', value: Buffer.from(privateKey, 'base64') });
    const config = configIn(secret)!;
    expect(config).toEqual({
      version: expect.any(String),
      tunnel_type: 'wireguard',
      local_ip: address,
      local_network_cidr: GATEWAY.local_network_cidr,
      remote_network_cidr: GATEWAY.remote_network_cidr,
      remote_peer_ip: GATEWAY.remote_peer_ip,
      wireguard: { private_key: privateKey, listen_port: 51820, remote_public_key: null },
    });
    const pod = deployment!.spec!.template.spec!;
    expect(pod.containers[0]).toMatchObject({ command: ['node', 'dist/src/main.js', 'vpn-agent'], securityContext: { capabilities: { add: ['NET_ADMIN'] } } });
    expect(pod.volumes).toEqual(
      expect.arrayContaining([expect.objectContaining({ secret: expect.objectContaining({ secretName: `${objectName(id)}-agent` }) })]),
    );
    // KWOK runs no container: no agent answers at the Pod IP, so the gateway is not active, and says nothing of its key.
    const pending = await gatewayOf(id);
    expect(pending).toMatchObject({ status: 'creating', local_ip: null, public_key: null, tunnel_status: 'down' });
    // The key is made once: later passes keep it.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const again = (await objectsOf(id)).secret!;
    expect(Buffer.from(again.data![PRIVATE_KEY_KEY], 'base64').toString('utf8')).toBe(privateKey);
    expect(wireguardPublicKey(privateKey)).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  });

  it('puts back a Deployment deleted and a configuration edited by hand', async () => {
    const { id } = (await api('POST', '/api/v1/vpn-gateways', { ...GATEWAY, name: 'drift', tunnel_type: 'wireguard' })).body.data;
    const first = await eventually(
      async () => {
        const objects = await objectsOf(id);
        return objects.deployment && configIn(objects.secret) ? objects : null;
      },
      60_000,
      200,
    );
    await apps.deleteNamespacedDeployment({ namespace, name: objectName(id) });
    await eventually(
      async () => {
        const { deployment } = await objectsOf(id);
        return deployment && deployment.metadata?.uid !== first.deployment!.metadata?.uid;
      },
      30_000,
      200,
    );
    const secret = (await objectsOf(id)).secret!;
    const edited = { ...configIn(secret)!, remote_network_cidr: '172.31.0.0/16' };
    await core.replaceNamespacedSecret({
      namespace,
      name: secret.metadata!.name!,
      body: { ...secret, data: { ...secret.data, [CONFIG_KEY]: Buffer.from(JSON.stringify(edited)).toString('base64') } },
    });
    await eventually(async () => configIn((await objectsOf(id)).secret)?.remote_network_cidr === GATEWAY.remote_network_cidr, 30_000, 200);
    needles.push({ label: 'WireGuard private key (drift)', value: Buffer.from(secret.data![PRIVATE_KEY_KEY], 'base64').toString('utf8') });
  });

  it('serves an IPsec gateway on UDP 500 and 4500, with its pre-shared key in the agent Secret only', async () => {
    const psk = `psk-${Date.now()}-cluster-secret`;
    needles.push({ label: 'pre-shared key', value: psk });
    const { id } = (await api('POST', '/api/v1/vpn-gateways', { ...GATEWAY, name: 'ipsec-objects', tunnel_type: 'ipsec', pre_shared_key: psk })).body.data;
    const { secret, service: svc } = await eventually(
      async () => {
        const objects = await objectsOf(id);
        return objects.deployment && configIn(objects.secret) ? objects : null;
      },
      60_000,
      200,
    );
    expect(svc!.spec?.ports?.map((p) => [p.port, p.protocol])).toEqual([
      [500, 'UDP'],
      [4500, 'UDP'],
    ]);
    expect(configIn(secret)).toMatchObject({ tunnel_type: 'ipsec', ipsec: { pre_shared_key: psk } });
    expect(secret!.data![PRIVATE_KEY_KEY]).toBeUndefined();
  });

  it('an IPsec gateway whose pre-shared key went from the store says so in status_reason while creating; the agent keeps its last key', async () => {
    const psk = `psk-${Date.now()}-lost-from-store`;
    needles.push({ label: 'pre-shared key (lost)', value: psk });
    const { id } = (await api('POST', '/api/v1/vpn-gateways', { ...GATEWAY, name: 'ipsec-keyless', tunnel_type: 'ipsec', pre_shared_key: psk })).body.data;
    await eventually(
      async () => {
        const objects = await objectsOf(id);
        return objects.deployment && configIn(objects.secret) ? objects : null;
      },
      60_000,
      200,
    );
    // The store's own Secret deleted by hand: the key is nowhere the operator could read it again.
    await core.deleteNamespacedSecret({ namespace, name: entryObjectName(`vpn-psk-${id}`) });
    const said = await eventually(
      async () => {
        const gateway = await gatewayOf(id);
        return gateway.status_reason ? gateway : null;
      },
      60_000,
      200,
    );
    expect(said).toMatchObject({
      status: 'creating',
      status_reason: 'The configuration was not applied: the pre-shared key is missing from the store; set a new one with PATCH pre_shared_key.',
    });
    // Never a configuration with an empty key: the one the agent has stays as it was.
    expect(configIn((await objectsOf(id)).secret)).toMatchObject({ tunnel_type: 'ipsec', ipsec: { pre_shared_key: psk } });
  });

  it('leaves no key in the log, the statuses or the events', async () => {
    expect(needles.length).toBeGreaterThanOrEqual(3);
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const gateways = await custom.listNamespacedCustomObject({ group: 'cloudplane.dev', version: 'v1alpha1', namespace, plural: 'vpngateways' });
    const events = await core.listNamespacedEvent({ namespace });
    const audit = (await api('GET', '/api/v1/audit-log?limit=100')).body.data;
    const log = logLines.join('');
    expect(log).toContain('VPN gateway');
    const found = [
      ...findIn('the operator log', Buffer.from(log), needles),
      ...findIn('the VpnGateway objects', Buffer.from(JSON.stringify(gateways)), needles),
      ...findIn('the Kubernetes events', Buffer.from(JSON.stringify(events)), needles),
      ...findIn('the audit log', Buffer.from(JSON.stringify(audit)), needles),
    ];
    expect(found).toEqual([]);
  });

  it("made only calls the chart grants, none refused: the agent's Secret, Deployment and Service applied", () => {
    const calls = expectOnlyListedCalls(cluster);
    const applied = new Set(calls.filter((c) => c.verb === 'patch' && c.namespace === namespace).map((c) => c.resource));
    expect([...applied]).toEqual(expect.arrayContaining(['secrets', 'deployments', 'services']));
  });
});
