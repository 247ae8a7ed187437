/**
 * The Kubernetes VPN gateway driver driven directly, the way the reconciler drives it, on
 * a control plane whose kubelets KWOK plays (test/helpers/workload-cluster.ts), with
 * exactly the chart's RBAC. load-balancer-addon.ts plays MetalLB. What is checked here
 * needs no agent: what the driver makes and releases, what it leaves alone, and its
 * health; and, with the VPN agent (`node dist/src/main.js vpn-agent`) run in a network
 * namespace that carries the KWOK Pod's IP, what the driver makes of an agent that refuses
 * its configuration. (The tunnel itself is vpn-tunnel-cluster.test.ts's.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { MISSING_PRE_SHARED_KEY, NO_PRE_SHARED_KEY, VpnGatewayTunnelDriver } from '../../src/drivers/kubernetes/vpn-gateway-tunnel';
import { AGENT_STATUS_PORT, CONFIG_KEY } from '../../src/drivers/kubernetes/vpn-gateway-manifests';
import type { VpnGatewayDesired } from '../../src/drivers/vpn-gateway';
import type { Managed, Owner } from '../../src/drivers/types';
import { newId } from '../../src/lib/ids';
import { API_VERSION, GROUP, VERSION, namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { operatorKubeconfigFromChart, teamNamespaceAsTheOperatorMakesIt } from '../helpers/chart';
import { LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { eventually } from '../helpers/service';
import { netnsSet } from '../helpers/netns';
import { AGENT_MAIN } from '../helpers/vpn-agent';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';

jest.setTimeout(120_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const team = newId('team');
const namespace = namespaceOfTeam(team, SYSTEM_NAMESPACE);

let cluster: WorkloadCluster;
let addon: LoadBalancerAddon;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let driver: VpnGatewayTunnelDriver;

beforeAll(async () => {
  cluster = await startWorkloadCluster({ crds: true });
  addon = await startLoadBalancerAddon(cluster.kubeConfig);
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  // As the operator makes a team's namespace: its rights there, and nowhere else.
  teamNamespaceAsTheOperatorMakesIt(cluster, namespace);
  const operatorKubeConfig = new KubeConfig();
  operatorKubeConfig.loadFromFile(operatorKubeconfigFromChart(cluster, cluster.workDir));
  // Nothing answers at a KWOK Pod's IP: each read of the agent gives up soon.
  driver = new VpnGatewayTunnelDriver({
    kubeConfig: operatorKubeConfig,
    systemNamespace: SYSTEM_NAMESPACE,
    logger: pino({ level: 'silent' }),
    statusTimeoutMs: 300,
    progressPollMs: 100,
  });
}, 180_000);

afterAll(async () => {
  await addon?.stop();
  await cluster?.stop();
});

function desired(tunnelType: 'wireguard' | 'ipsec'): VpnGatewayDesired {
  return {
    name: 'gw',
    region: 'fra1',
    tunnel_type: tunnelType,
    local_network_cidr: '10.10.0.0/16',
    remote_network_cidr: '192.168.10.0/24',
    remote_peer_ip: '8.8.4.4',
    psk_version: 1,
    remote_public_key: null,
    pre_shared_key: tunnelType === 'ipsec' ? 'a-pre-shared-key-of-the-test' : null,
  };
}

/** A gateway's custom resource: the owner of what the driver makes. */
async function managed(tunnelType: 'wireguard' | 'ipsec' = 'wireguard'): Promise<Managed<VpnGatewayDesired>> {
  const id = newId('vpn');
  const { pre_shared_key: _key, ...spec } = desired(tunnelType);
  const made = (await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: 'vpngateways',
    body: { apiVersion: API_VERSION, kind: 'VpnGateway', metadata: { name: objectName(id), labels: { [`${GROUP}/id`]: id } }, spec },
  })) as { metadata: { name: string; uid: string } };
  const owner: Owner = { apiVersion: API_VERSION, kind: 'VpnGateway', name: made.metadata.name, uid: made.metadata.uid };
  return { id, team, generation: 1, desired: desired(tunnelType), external: null, owner };
}

async function objectsOf(resource: Managed<VpnGatewayDesired>) {
  const name = objectName(resource.id);
  const read = async <T>(call: () => Promise<T>): Promise<T | null> => call().catch((err) => (err?.code === 404 ? null : Promise.reject(err)));
  return {
    secret: await read(() => core.readNamespacedSecret({ namespace, name: `${name}-agent` })),
    deployment: await read(() => apps.readNamespacedDeployment({ namespace, name })),
    service: await read(() => core.readNamespacedService({ namespace, name })),
  };
}

/** Creates, then updates until the objects hold the desired state (the Service's address included). */
async function made(resource: Managed<VpnGatewayDesired>) {
  let external = (await driver.create(resource)).external;
  await eventually(
    async () => {
      const observed = await driver.observe({ ...resource, external });
      if (observed.exists && observed.upToDate) return true;
      external = (await driver.update({ ...resource, external })).external;
      return false;
    },
    60_000,
    100,
  );
  return { ...resource, external };
}

describe('the Kubernetes VPN gateway driver', () => {
  it('records where its objects are and the configuration version, and no key', async () => {
    const resource = await made(await managed('ipsec'));
    expect(resource.external).toEqual({ namespace, name: objectName(resource.id), config_version: expect.stringMatching(/^[0-9a-f]{16}$/) });
    const observed = await driver.observe(resource);
    // No agent answers: not ready, the tunnel down, and the driver's health untouched by it.
    expect(observed).toMatchObject({
      exists: true,
      upToDate: true,
      ready: false,
      observed: { tunnel_status: 'down', bytes_sent: 0, bytes_received: 0, last_handshake: null },
      failure: null,
    });
    expect(driver.health()).toMatchObject({ state: 'connected', recentFailures: 0 });
  });

  it('a rotated key (a new psk_version) is a new configuration version', async () => {
    const resource = await made(await managed('ipsec'));
    const rotated = { ...resource, desired: { ...resource.desired, psk_version: 2, pre_shared_key: 'the-rotated-pre-shared-key' } };
    expect(await driver.observe(rotated)).toMatchObject({ upToDate: false });
    const step = await driver.update(rotated);
    expect(step.external.config_version).not.toBe(resource.external!.config_version);
    expect(await driver.observe({ ...rotated, external: step.external })).toMatchObject({ upToDate: true });
  });

  it('never touches an object under its names that it did not make: the gateway fails, naming it', async () => {
    const resource = await managed();
    const name = `${objectName(resource.id)}-agent`;
    await core.createNamespacedSecret({ namespace, body: { metadata: { name }, stringData: { note: 'mine' } } });
    await driver.create(resource);
    expect(await driver.observe(resource)).toMatchObject({
      exists: true,
      ready: false,
      failure: `a Secret ${namespace}/${name} that Cloudplane did not make for this VPN gateway is in the way`,
    });
    await driver.delete(resource);
    const left = await objectsOf(resource);
    expect({ note: left.secret?.data?.note, deployment: left.deployment, service: left.service }).toEqual({
      note: Buffer.from('mine').toString('base64'),
      deployment: null,
      service: null,
    });
    await core.deleteNamespacedSecret({ name, namespace });
  });

  it('delete removes all three objects, and observe then reports absent', async () => {
    const resource = await made(await managed());
    await eventually(
      async () => {
        await driver.delete(resource);
        return !(await driver.observe(resource)).exists;
      },
      30_000,
      100,
    );
    expect(await objectsOf(resource)).toEqual({ secret: null, deployment: null, service: null });
    expect(addon.assigned().has(`${namespace}/${objectName(resource.id)}`)).toBe(false);
  });

  it('owner references cascade: deleting the custom resource removes what the driver made', async () => {
    const resource = await made(await managed());
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: 'vpngateways',
      name: resource.owner!.name,
      propagationPolicy: 'Background',
    });
    await eventually(
      async () => {
        const objects = await objectsOf(resource);
        return objects.secret === null && objects.deployment === null && objects.service === null;
      },
      60_000,
      200,
    );
    expect(await driver.observe(resource)).toEqual({ exists: false });
  });

  it('counts an API server that does not answer into its health', async () => {
    const nowhere = new KubeConfig();
    nowhere.loadFromString(cluster.kubeconfigYaml.replace(cluster.url, 'https://127.0.0.1:1'));
    const unreachable = new VpnGatewayTunnelDriver({
      kubeConfig: nowhere,
      systemNamespace: SYSTEM_NAMESPACE,
      logger: pino({ level: 'silent' }),
      requestTimeoutMs: 2_000,
    });
    await expect(unreachable.observe(await managed())).rejects.toThrow();
    expect(unreachable.health()).toMatchObject({ state: 'unavailable', reachable: false, recentFailures: 3 });
  });

  it('an IPsec gateway that never had a configuration and whose pre-shared key is missing fails, with no Secret holding an empty key', async () => {
    const resource = await managed('ipsec');
    const keyless = { ...resource, desired: { ...resource.desired, pre_shared_key: null } };
    let external = (await driver.create(keyless)).external;
    // Also once the Service has its address, which a configuration would need.
    const observed = await eventually(
      async () => {
        external = (await driver.update({ ...keyless, external })).external;
        const seen = await driver.observe({ ...keyless, external });
        return addon.assigned().has(`${namespace}/${objectName(resource.id)}`) ? seen : null;
      },
      60_000,
      100,
    );
    expect(observed).toMatchObject({ exists: true, upToDate: false, ready: false, failure: NO_PRE_SHARED_KEY, rejected: null });
    const objects = await objectsOf(resource);
    expect(objects.secret?.data?.[CONFIG_KEY]).toBeUndefined();
    expect(objects.deployment).toBeNull();
    expect(external.config_version).toBeUndefined();
  });

  it('a configured IPsec gateway whose pre-shared key went missing is refused by name, keeps its last configuration, and comes back with a new key', async () => {
    const resource = await made(await managed('ipsec'));
    const before = (await objectsOf(resource)).secret!.data![CONFIG_KEY];
    const keyless = { ...resource, desired: { ...resource.desired, pre_shared_key: null } };
    expect(await driver.observe(keyless)).toMatchObject({ exists: true, upToDate: false, failure: null, rejected: MISSING_PRE_SHARED_KEY });
    const step = await driver.update(keyless);
    expect(await driver.observe({ ...keyless, external: step.external })).toMatchObject({ upToDate: false, failure: null, rejected: MISSING_PRE_SHARED_KEY });
    // The agent's configuration stays as it was: never one with an empty key.
    expect((await objectsOf(resource)).secret!.data![CONFIG_KEY]).toBe(before);
    // A new key (a PATCH) brings it back.
    const rekeyed = await made({
      ...keyless,
      external: step.external,
      desired: { ...keyless.desired, psk_version: 2, pre_shared_key: 'a-new-pre-shared-key' },
    });
    expect(await driver.observe(rekeyed)).toMatchObject({ upToDate: true, rejected: null, failure: null });
  });

  it('reads the agent at the Pod IP: ready once it applied the configuration, and a newer one it refused is not applied, with its reason', async () => {
    const resource = await made(await managed('ipsec'));
    const pod = await eventually(
      async () => {
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `${GROUP}/id=${resource.id}` });
        return pods.items.find((p) => p.status?.podIP && p.status.phase === 'Running' && !p.metadata?.deletionTimestamp) ?? null;
      },
      60_000,
      200,
    );
    const podIp = pod.status!.podIP!;
    const paired = podIp.split('.').map(Number);
    paired[3] ^= 1;
    // The Pod network: the driver (in the test's namespace) reaches the Pod's IP in the agent's.
    const netns = netnsSet();
    const agentNs = netns.make('agent');
    netns.link(null, `${paired.join('.')}/31`, agentNs, `${podIp}/31`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-vpn-refused-'));
    const configFile = path.join(dir, 'config.json');
    // As a Secret volume is: the file swapped in whole.
    const writeConfig = (text: string) => {
      fs.writeFileSync(`${configFile}.new`, text, { mode: 0o600 });
      fs.renameSync(`${configFile}.new`, configFile);
    };
    const configText = async () =>
      Buffer.from((await core.readNamespacedSecret({ namespace, name: `${objectName(resource.id)}-agent` })).data![CONFIG_KEY], 'base64').toString('utf8');
    writeConfig(await configText());
    const logFile = path.join(dir, 'agent.log');
    const log = fs.openSync(logFile, 'a');
    let lastSeen: unknown = null;
    // What the driver saw last and the Pods it could read, beside the agent's log: a failure here says which side was wrong.
    const explain = async (err: Error) => {
      const pods = (await core.listNamespacedPod({ namespace, labelSelector: `${GROUP}/id=${resource.id}` })).items.map((p) => ({
        name: p.metadata?.name,
        ip: p.status?.podIP,
        phase: p.status?.phase,
        ready: p.status?.conditions?.find((c) => c.type === 'Ready')?.status,
        deleting: Boolean(p.metadata?.deletionTimestamp),
      }));
      const seen = JSON.stringify(lastSeen).replaceAll(resource.desired.pre_shared_key ?? '', '<key>');
      throw new Error(
        `${err.message}\nagent at ${podIp}; pods: ${JSON.stringify(pods)}\nlast observed: ${seen}\nagent log:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`,
      );
    };
    let agent: ChildProcess | null = null;
    try {
      agent = agentNs.spawn(
        process.execPath,
        [AGENT_MAIN, 'vpn-agent', '--config', configFile, '--listen', `0.0.0.0:${AGENT_STATUS_PORT}`, '--state-dir', path.join(dir, 'state')],
        { privateRun: true, env: { ...process.env, CLOUDPLANE_LOG_LEVEL: 'info' }, stdio: ['ignore', log, log] },
      );
      const applied = await eventually(
        async () => {
          const seen = await driver.observe(resource);
          lastSeen = seen;
          return seen.exists && seen.ready ? seen : null;
        },
        60_000,
        200,
      ).catch(explain);
      expect(applied).toMatchObject({ upToDate: true, ready: true, failure: null, rejected: null });

      // Its key gone from the store: still ready on the configuration it runs, refused by name.
      const keyless = { ...resource, desired: { ...resource.desired, pre_shared_key: null } };
      expect(await driver.observe(keyless)).toMatchObject({ upToDate: false, ready: true, failure: null, rejected: MISSING_PRE_SHARED_KEY });

      // A change whose file reaches the agent cut short, as a half-written volume would leave it: the agent cannot read it.
      const changed = { ...resource, desired: { ...resource.desired, remote_network_cidr: '192.168.20.0/24' } };
      const step = await driver.update(changed);
      const text = await configText();
      expect(JSON.parse(text).remote_network_cidr).toBe('192.168.20.0/24');
      writeConfig(text.slice(0, text.length / 3));
      const refused = await eventually(
        async () => {
          const seen = await driver.observe({ ...changed, external: step.external });
          lastSeen = seen;
          return seen.exists && seen.rejected ? seen : null;
        },
        60_000,
        200,
      ).catch(explain);
      expect(refused).toMatchObject({
        exists: true,
        upToDate: false,
        ready: false,
        failure: null,
        rejected: 'the VPN agent did not apply it: configuration is not valid JSON',
      });
      expect(JSON.stringify(refused)).not.toContain(resource.desired.pre_shared_key);
    } finally {
      fs.closeSync(log);
      if (agent && agent.exitCode === null && agent.signalCode === null) {
        const exited = new Promise((resolve) => agent!.once('exit', resolve));
        agent.kill('SIGTERM');
        await exited;
      }
      netns.destroy();
    }
  });
});
