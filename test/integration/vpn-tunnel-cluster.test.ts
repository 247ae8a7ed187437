/**
 * A VPN gateway end to end in cluster mode: the operator (under the chart's RBAC) makes the
 * gateway's Secret, Deployment and UDP Service on a real control plane whose kubelets KWOK
 * plays, and this test plays the rest of a node for the gateway's Pod, with real software:
 * - the kubelet: it reads the agent's configuration from the Secret the driver made (and
 *   keeps the file in step with it, as a Secret volume is), and runs the VPN agent
 *   (`node dist/src/main.js vpn-agent`, Cloudplane's own) in a network namespace whose
 *   management interface carries the Pod's IP, which KWOK gave it from the node's Pod CIDR
 *   and which the operator reaches from the test's namespace, as a Pod network would let it;
 * - MetalLB (load-balancer-addon.ts): the Service's ingress address is the gateway's
 *   underlay address in that namespace, joined by a veth to the customer's namespace, which
 *   has the gateway's remote_peer_ip.
 * The customer's side is configured as a customer would from what the API gives
 * (test/helpers/vpn-peer.ts): WireGuard from `public_key` and `local_ip` (their own key
 * given by PATCH after the gateway is active, with its tunnel down until then), IPsec from
 * the pre-shared key and `local_ip`. Then: the tunnel comes up, a ping crosses it, GET
 * .../status shows bytes and a handshake, the record's counters move (written at most
 * every CLOUDPLANE_VPN_COUNTER_INTERVAL_SECONDS, 2 s here), and the tunnel turns down when
 * the peer stops.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChildProcess } from 'node:child_process';
import { CoreV1Api, V1Pod, V1Secret } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { CONFIG_KEY } from '../../src/drivers/kubernetes/vpn-gateway-manifests';
import type { RawSection } from '../../src/vpn-agent/ipsec';
import { LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { eventually, TestService, waitForStatus, startServiceUnderChartRbac } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';

import { Netns, netnsSet } from '../helpers/netns';
import { HANDSHAKE_WINDOW_S } from '../helpers/vpn-agent';
import { IpsecPeer, requireVpnTools, startWireguardPeer, startIpsecPeer, wireguardGoBinary, wireguardKeyPair } from '../helpers/vpn-peer';

jest.setTimeout(420_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const MAIN = path.join(__dirname, '../../dist/src/main.js');
const LOCAL_NETWORK = '10.10.0.0/16';
const REMOTE_NETWORK = '192.168.10.0/24';
const PEER_IP = '8.8.4.4';
/** Inside the networks either side routes through the tunnel. */
const GATEWAY_SIDE_HOST = '10.10.0.1';
const CUSTOMER_SIDE_HOST = '192.168.10.1';
const GATEWAY = { region: 'fra1', local_network_cidr: LOCAL_NETWORK, remote_network_cidr: REMOTE_NETWORK, remote_peer_ip: PEER_IP };

/** The other address of an IPv4 /31: the test's own end of a Pod's link. */
function pairedAddress(ip: string): string {
  const octets = ip.split('.').map(Number);
  octets[3] ^= 1;
  return octets.join('.');
}

/** The one interface in `netns` carrying `address`. */
async function interfaceWith(netns: Netns, address: string): Promise<string> {
  const line = (await netns.exec('ip', ['-o', '-4', 'addr', 'show', 'to', `${address}/32`])).trim().split('\n')[0];
  const name = line?.split(/\s+/)[1];
  if (!name) throw new Error(`no interface with ${address} in ${netns.name}`);
  return name;
}

/** The IKE SAs as `initiator SPI/responder SPI`. */
function spisOf(sas: RawSection[]): string[] {
  return sas.map((sa) => `${sa['initiator-spi']}/${sa['responder-spi']}`);
}

/** What the test runs for one gateway Pod: its namespaces, its agent, and the config file the "kubelet" keeps in step with the Secret. */
interface PlayedPod {
  podIp: string;
  gateway: Netns;
  customer: Netns;
  dir: string;
  agent: ChildProcess;
  stop(): Promise<void>;
}

describe('cluster mode: a VPN gateway carries traffic between its agent and a customer peer', () => {
  let cluster: WorkloadCluster;
  let core: CoreV1Api;
  let addon: LoadBalancerAddon;
  let t: TestService;
  let namespace: string;

  beforeAll(async () => {
    requireVpnTools();
    if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npx tsc -p tsconfig.json)`);
    cluster = await startWorkloadCluster({ crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    addon = await startLoadBalancerAddon(cluster.kubeConfig);
    t = await startServiceUnderChartRbac(cluster, {
      CLOUDPLANE_VPN_COUNTER_INTERVAL_SECONDS: '2',
      CLOUDPLANE_VPN_AGENT_STATUS_TIMEOUT_MS: '1000',
    });
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    await t?.stop();
    await addon?.stop();
    await cluster?.stop();
  });

  const secretOf = (id: string) => core.readNamespacedSecret({ namespace, name: `${objectName(id)}-agent` });
  const configText = (secret: V1Secret): string | null => (secret.data?.[CONFIG_KEY] ? Buffer.from(secret.data[CONFIG_KEY], 'base64').toString('utf8') : null);

  /**
   * Plays the node for gateway `id` once the driver has made its Pod: the namespaces, the
   * Pod's IP on the management link, the Service's address on the underlay, the config
   * file synced from the Secret, and the agent.
   */
  async function playPod(id: string, role: string): Promise<PlayedPod> {
    const { pod, secret, localIp } = await eventually(
      async () => {
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `cloudplane.dev/id=${id}` });
        const running = pods.items.find((p: V1Pod) => p.status?.podIP && !p.metadata?.deletionTimestamp);
        const made = await secretOf(id).catch(() => null);
        const address = addon.assigned().get(`${namespace}/${objectName(id)}`);
        return running && made && configText(made) && address ? { pod: running, secret: made, localIp: address } : null;
      },
      90_000,
      200,
    );
    const podIp = pod.status!.podIP!;
    // Namespaces of this Pod only, gone with it: the next Pod's addresses may be this one's.
    const netns = netnsSet();
    const gateway = netns.make(`${role}g`);
    const customer = netns.make(`${role}c`);
    // The Pod network: the operator reaches the Pod's IP from the test's own namespace.
    netns.link(null, `${pairedAddress(podIp)}/31`, gateway, `${podIp}/31`);
    // The underlay: the Service's address at the gateway, the peer's public address at the customer.
    netns.link(gateway, `${localIp}/32`, customer, `${PEER_IP}/32`);
    await gateway.exec('ip', ['route', 'add', `${PEER_IP}/32`, 'dev', await interfaceWith(gateway, localIp)]);
    await customer.exec('ip', ['route', 'add', `${localIp}/32`, 'dev', await interfaceWith(customer, PEER_IP)]);
    // A host on each side's own network, where the tunnel leads.
    await gateway.exec('ip', ['addr', 'add', `${GATEWAY_SIDE_HOST}/32`, 'dev', 'lo']);
    await customer.exec('ip', ['addr', 'add', `${CUSTOMER_SIDE_HOST}/32`, 'dev', 'lo']);

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cp-vpn-${role}-`));
    const configFile = path.join(dir, 'config.json');
    // Like a Secret volume: the file swapped in whole whenever the Secret's content changes.
    const sync = (text: string) => {
      if (fs.existsSync(configFile) && fs.readFileSync(configFile, 'utf8') === text) return;
      fs.writeFileSync(`${configFile}.new`, text, { mode: 0o600 });
      fs.renameSync(`${configFile}.new`, configFile);
    };
    sync(configText(secret)!);
    let syncing = true;
    const syncLoop = (async () => {
      while (syncing) {
        const latest = await secretOf(id).catch(() => null);
        const text = latest && configText(latest);
        if (text) sync(text);
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    const agentLog = fs.openSync(path.join(dir, 'agent.log'), 'a');
    // The handshake window of test/helpers/vpn-agent.ts (30 s instead of 180 s): the WireGuard
    // test waits for a silent peer's tunnel to turn down, a whole window after the last
    // handshake, while its steps before that take a few seconds.
    const agent = gateway.spawn(
      process.execPath,
      [MAIN, 'vpn-agent', '--config', configFile, '--listen', '0.0.0.0:9180', '--state-dir', path.join(dir, 'state'), '--interface', 'cpvpn0'],
      {
        privateRun: true,
        env: {
          ...process.env,
          CLOUDPLANE_WIREGUARD_GO: wireguardGoBinary(),
          CLOUDPLANE_LOG_LEVEL: 'info',
          CLOUDPLANE_VPN_HANDSHAKE_WINDOW_SECONDS: String(HANDSHAKE_WINDOW_S),
        },
        stdio: ['ignore', agentLog, agentLog],
      },
    );
    return {
      podIp,
      gateway,
      customer,
      dir,
      agent,
      async stop() {
        syncing = false;
        await syncLoop;
        if (agent.exitCode === null && agent.signalCode === null) {
          agent.kill('SIGTERM');
          await new Promise((resolve) => agent.once('exit', resolve));
        }
        netns.destroy();
      },
    };
  }

  /** Pings across until one gets through, asking the peer to (re)negotiate between tries, as a customer would; fails with what both ends said. */
  async function crossesTunnel(pod: PlayedPod, peer: IpsecPeer): Promise<void> {
    let said = '';
    await eventually(
      async () => {
        if ((await ping(pod)).ok) return true;
        said = (await peer.initiate()).output;
        return null;
      },
      90_000,
      1_000,
    ).catch((err) => {
      throw new Error(`${err.message}\nthe peer's swanctl said:\n${said}\nagent log:\n${agentLogOf(pod).slice(-4000)}`);
    });
  }

  /** The agent's own /status, asked at the Pod IP as the operator asks it. */
  const agentStatusOf = async (pod: PlayedPod) =>
    (await (await fetch(`http://${pod.podIp}:9180/status`)).json()) as { applied_version: string | null; tunnel_status: string };
  const agentLogOf = (pod: PlayedPod) => fs.readFileSync(path.join(pod.dir, 'agent.log'), 'utf8');
  const ping = (pod: PlayedPod) => pod.customer.attempt('ping', ['-c', '2', '-W', '2', '-I', CUSTOMER_SIDE_HOST, GATEWAY_SIDE_HOST]);

  it('WireGuard: the peer configured from public_key and local_ip exchanges traffic, and the API shows the counters move', async () => {
    const customerKeys = wireguardKeyPair();
    // Made without the peer's key: active, with its address and key for the customer, and the tunnel down.
    const created = await t.api('POST', '/api/v1/vpn-gateways', { ...GATEWAY, name: 'wg-e2e', tunnel_type: 'wireguard' });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const pod = await playPod(id, 'wg');
    try {
      const active = await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'active', 90_000).catch((err) => {
        throw new Error(`${err.message}\nagent log:\n${agentLogOf(pod)}`);
      });
      expect(active.local_ip).toBe(addon.assigned().get(`${namespace}/${objectName(id)}`));
      expect(active.public_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
      expect(active).toMatchObject({ remote_public_key: null, tunnel_status: 'down' });

      // The customer gives their key by PATCH: a new configuration, which the agent applies.
      const before = JSON.parse(configText(await secretOf(id))!);
      const patched = await t.api('PATCH', `/api/v1/vpn-gateways/${id}`, { remote_public_key: customerKeys.publicKey });
      expect(patched.status).toBe(200);
      const after = await eventually(
        async () => {
          const config = JSON.parse(configText(await secretOf(id))!);
          return config.version !== before.version ? config : null;
        },
        30_000,
        200,
      );
      expect(after.wireguard).toEqual({ ...before.wireguard, remote_public_key: customerKeys.publicKey });
      await eventually(async () => (await agentStatusOf(pod)).applied_version === after.version, 30_000, 200);

      const peer = await startWireguardPeer({
        netns: pod.customer,
        dir: pod.dir,
        ownNetworkCidr: REMOTE_NETWORK,
        gatewayNetworkCidr: LOCAL_NETWORK,
        gatewayLocalIp: active.local_ip,
        gatewayPublicKey: active.public_key,
        privateKey: customerKeys.privateKey,
        interfaceName: 'cpwgpeer',
      });
      const crossed = await eventually(
        async () => {
          const result = await ping(pod);
          return result.ok ? result : null;
        },
        30_000,
        500,
      );
      expect(crossed.output).toMatch(/2 received/);

      const live = await eventually(
        async () => {
          const status = (await t.api('GET', `/api/v1/vpn-gateways/${id}/status`)).body.data;
          return status.tunnel_status === 'up' && status.bytes_received > 0 && status.bytes_sent > 0 && status.last_handshake ? status : null;
        },
        30_000,
        500,
      );
      expect(Date.parse(live.last_handshake)).toBeGreaterThan(Date.now() - 120_000);

      // The record follows: up at once, the counters at most every 2 s (the interval set above).
      const first = await eventually(
        async () => {
          const record = (await t.api('GET', `/api/v1/vpn-gateways/${id}`)).body.data;
          return record.tunnel_status === 'up' && record.bytes_received > 0 && record.last_handshake ? record : null;
        },
        30_000,
        500,
      );
      expect((await ping(pod)).ok).toBe(true);
      await eventually(
        async () => {
          const record = (await t.api('GET', `/api/v1/vpn-gateways/${id}`)).body.data;
          return record.bytes_received > first.bytes_received && record.bytes_sent > first.bytes_sent;
        },
        30_000,
        500,
      );

      // The peer goes away: no handshake follows, and the tunnel turns down once the last one is stale.
      await peer.stop();
      await eventually(async () => (await t.api('GET', `/api/v1/vpn-gateways/${id}`)).body.data.tunnel_status === 'down', 240_000, 1_000);
      expect((await t.api('GET', `/api/v1/vpn-gateways/${id}/status`)).body.data.tunnel_status).toBe('down');

      // Delete releases everything: deleting, then deleted with the objects gone.
      const deleting = await t.api('DELETE', `/api/v1/vpn-gateways/${id}`);
      expect(deleting.status).toBe(202);
      await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'deleted', 60_000);
      await expect(secretOf(id)).rejects.toMatchObject({ code: 404 });
    } finally {
      await pod.stop();
    }
  });

  it('IPsec: the peer configured from the PSK and local_ip exchanges traffic, and a PSK rotation by PATCH re-keys the tunnel', async () => {
    const psk = `first-psk-${Date.now()}`;
    const created = await t.api('POST', '/api/v1/vpn-gateways', { ...GATEWAY, name: 'ipsec-e2e', tunnel_type: 'ipsec', pre_shared_key: psk });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const pod = await playPod(id, 'ip');
    try {
      const active = await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'active', 90_000).catch((err) => {
        throw new Error(`${err.message}\nagent log:\n${agentLogOf(pod)}`);
      });
      expect(active.public_key).toBeNull();
      const peer = await startIpsecPeer({
        netns: pod.customer,
        dir: pod.dir,
        ownNetworkCidr: REMOTE_NETWORK,
        gatewayNetworkCidr: LOCAL_NETWORK,
        gatewayLocalIp: active.local_ip,
        ownAddress: PEER_IP,
        psk,
      });
      try {
        // The peer brings the tunnel up as it loads (start_action = start), and the gateway may too: a ping across is the proof.
        await crossesTunnel(pod, peer);
        const up = await eventually(
          async () => {
            const status = (await t.api('GET', `/api/v1/vpn-gateways/${id}/status`)).body.data;
            return status.tunnel_status === 'up' && status.bytes_received > 0 && status.last_handshake ? status : null;
          },
          30_000,
          500,
        );
        const firstSas = spisOf(await peer.ikeSas());
        expect(firstSas.length).toBeGreaterThan(0);

        // Rotation: PATCH the new key; the driver rewrites the config (a new version), the agent re-keys; the customer changes theirs.
        const before = configText(await secretOf(id));
        const rotated = `rotated-psk-${Date.now()}`;
        expect((await t.api('PATCH', `/api/v1/vpn-gateways/${id}`, { pre_shared_key: rotated })).status).toBe(200);
        const after = await eventually(
          async () => {
            const text = configText(await secretOf(id));
            return text && text !== before ? JSON.parse(text) : null;
          },
          30_000,
          200,
        );
        expect(after.ipsec.pre_shared_key).toBe(rotated);
        expect(after.version).not.toBe(JSON.parse(before!).version);
        await peer.rotatePsk(rotated);
        await crossesTunnel(pod, peer);
        // Re-keyed: none of the IKE SAs made with the old key is left, and the tunnel carries traffic on a new one.
        const secondSas = spisOf(await peer.ikeSas());
        expect(secondSas.length).toBeGreaterThan(0);
        expect(secondSas.filter((spi) => firstSas.includes(spi))).toEqual([]);
        // The agent (asked at the Pod IP, as the operator asks it) runs the new configuration's version, and the API sees the tunnel up.
        const agentStatus = await agentStatusOf(pod);
        expect(agentStatus).toMatchObject({ applied_version: after.version, tunnel_status: 'up' });
        await eventually(
          async () => {
            const status = (await t.api('GET', `/api/v1/vpn-gateways/${id}/status`)).body.data;
            return status.tunnel_status === 'up' && status.last_handshake && Date.parse(status.last_handshake) >= Date.parse(up.last_handshake);
          },
          30_000,
          500,
        );

        await peer.stop('SIGTERM');
        await eventually(async () => (await t.api('GET', `/api/v1/vpn-gateways/${id}`)).body.data.tunnel_status === 'down', 120_000, 1_000);
      } finally {
        await peer.stop('SIGKILL').catch(() => undefined);
      }
    } finally {
      await pod.stop();
    }
  });
});
