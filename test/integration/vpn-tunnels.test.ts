/**
 * The VPN agent against real tunnels. Three network namespaces: the test's own (the
 * operator's side, polling the agent's /status over a veth as the driver polls a Pod's IP),
 * the gateway's (the agent, run as `node dist/src/main.js vpn-agent`, with its tunnel
 * software) and the customer's (a peer configured from what the API gives a customer).
 * The addresses follow the API's rules: remote_peer_ip public (src/lib/ip.ts), the two
 * networks apart. Both ends run real Debian software: wg with wireguard-go (this kernel has
 * no WireGuard module) and strongSwan's charon (kernel-libipsec here: no ESP in this kernel).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isPublicAddress } from '../../src/lib/ip';
import { parseAgentConfig, VpnAgentConfig } from '../../src/vpn-agent/config';
import type { AgentStatus } from '../../src/vpn-agent/status-server';
import { AGENT_MAIN, childrenNamed, RunningAgent, startAgentInNetns } from '../helpers/vpn-agent';
import { Netns, netnsSet, NetnsSet } from '../helpers/netns';
import { eventually } from '../helpers/service';
import { IpsecPeer, requireVpnTools, startIpsecPeer, startWireguardPeer, WireguardPeer, wireguardKeyPair } from '../helpers/vpn-peer';

/** The addresses of one gateway and its customer; `k` keeps two tests' namespaces apart. */
function addressesFor(k: number) {
  return {
    statusHost: `10.254.${k}.1`,
    statusAgent: `10.254.${k}.2`,
    localIp: `11.200.${k}.1`,
    remotePeerIp: `11.200.${k}.2`,
    localNetwork: `10.20.${k}.0/24`,
    localHost: `10.20.${k}.1`,
    remoteNetwork: `10.30.${k}.0/24`,
    remoteHost: `10.30.${k}.1`,
  };
}
type Addresses = ReturnType<typeof addressesFor>;

interface Site {
  set: NetnsSet;
  gateway: Netns;
  peer: Netns;
  dir: string;
  addresses: Addresses;
}

function makeSite(k: number): Site {
  const addresses = addressesFor(k);
  const set = netnsSet();
  const gateway = set.make('gw');
  const peer = set.make('peer');
  set.link(null, `${addresses.statusHost}/30`, gateway, `${addresses.statusAgent}/30`);
  set.link(gateway, `${addresses.localIp}/24`, peer, `${addresses.remotePeerIp}/24`);
  // One host on each private network, on loopback, for the ping to leave from and reach.
  return { set, gateway, peer, dir: fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-vpn-')), addresses };
}

async function addHosts(site: Site): Promise<void> {
  await site.gateway.exec('ip', ['addr', 'add', `${site.addresses.localHost}/32`, 'dev', 'lo']);
  await site.peer.exec('ip', ['addr', 'add', `${site.addresses.remoteHost}/32`, 'dev', 'lo']);
}

/** Writes the agent's config the way a Secret volume changes: a new file swapped in at once. */
function writeAgentConfig(site: Site, config: VpnAgentConfig): string {
  const file = path.join(site.dir, 'config.json');
  const temporary = `${file}.new`;
  fs.writeFileSync(temporary, JSON.stringify(config), { mode: 0o600 });
  fs.renameSync(temporary, file);
  return file;
}

function startAgent(site: Site, configFile: string): RunningAgent {
  return startAgentInNetns({ netns: site.gateway, configFile, statusAddress: site.addresses.statusAgent, dir: site.dir });
}

/** One ping from a host of the customer's network to one of the gateway's, through the tunnel. */
async function pingAcross(site: Site): Promise<boolean> {
  const result = await site.peer.attempt('ping', ['-c', '1', '-W', '2', '-I', site.addresses.remoteHost, site.addresses.localHost]);
  return result.ok;
}

function baseConfig(a: Addresses): Omit<VpnAgentConfig, 'tunnel_type' | 'version'> {
  return { local_ip: a.localIp, local_network_cidr: a.localNetwork, remote_network_cidr: a.remoteNetwork, remote_peer_ip: a.remotePeerIp };
}

beforeAll(() => {
  requireVpnTools();
  if (!fs.existsSync(AGENT_MAIN)) throw new Error(`${AGENT_MAIN} is missing: build first (npx tsc -p tsconfig.json)`);
});

describe('WireGuard gateway: the agent with wireguard-go, a customer peer with wireguard-go', () => {
  let site: Site;
  let agent: RunningAgent | null = null;
  let peer: WireguardPeer | null = null;
  const gatewayKeys = wireguardKeyPair();
  const customerKeys = wireguardKeyPair();

  beforeAll(async () => {
    site = makeSite(71);
    await addHosts(site);
  });

  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    await peer?.stop();
    site.set.destroy();
    fs.rmSync(site.dir, { recursive: true, force: true });
  });

  it('uses addresses the API accepts', () => {
    const config: VpnAgentConfig = {
      version: 'check',
      tunnel_type: 'wireguard',
      ...baseConfig(site.addresses),
      wireguard: { private_key: gatewayKeys.privateKey, listen_port: 51820, remote_public_key: customerKeys.publicKey },
    };
    expect(isPublicAddress(site.addresses.remotePeerIp)).toBe(true);
    expect(parseAgentConfig(JSON.stringify(config)).ok).toBe(true);
  });

  it('brings the tunnel up: a ping crosses it, and /status shows the handshake and bytes', async () => {
    const config: VpnAgentConfig = {
      version: 'wg-1',
      tunnel_type: 'wireguard',
      ...baseConfig(site.addresses),
      wireguard: { private_key: gatewayKeys.privateKey, listen_port: 51820, remote_public_key: customerKeys.publicKey },
    };
    agent = startAgent(site, writeAgentConfig(site, config));
    const running = agent;
    const before = await running.explain(eventually(async () => running.status(), 30_000, 200));
    expect(before).toMatchObject({ applied_version: 'wg-1', tunnel_status: 'down', last_handshake: null, error: null });

    // The customer knows the gateway's public_key and local_ip (and the two networks).
    peer = await startWireguardPeer({
      netns: site.peer,
      dir: site.dir,
      privateKey: customerKeys.privateKey,
      gatewayPublicKey: gatewayKeys.publicKey,
      gatewayLocalIp: site.addresses.localIp,
      ownNetworkCidr: site.addresses.remoteNetwork,
      gatewayNetworkCidr: site.addresses.localNetwork,
      interfaceName: `cpwp${process.pid % 100_000}`,
    });
    await running.explain(eventually(() => pingAcross(site), 30_000, 200));
    const up = await running.explain(
      eventually(
        async () => {
          const status = await running.status();
          return status.tunnel_status === 'up' && status.bytes_received > 0 && status.bytes_sent > 0 ? status : null;
        },
        15_000,
        200,
      ),
    );
    expect(Date.now() - Date.parse(up.last_handshake!)).toBeLessThan(120_000);
    // Nothing secret in an answer or a log line.
    const said = JSON.stringify(up) + running.log();
    expect(said).not.toContain(gatewayKeys.privateKey);
    expect(said).not.toContain(customerKeys.privateKey);
  }, 120_000);

  it('turns tunnel_status down once the peer has been silent past the handshake window, then stops cleanly on SIGTERM', async () => {
    const running = agent!;
    // The peer stops: wireguard-go goes and takes its interface with it.
    await peer!.stop();
    expect((await site.peer.attempt('ip', ['link', 'show', peer!.interfaceName])).ok).toBe(false);
    const down = await running.explain(
      eventually(
        async () => {
          const status = await running.status();
          return status.tunnel_status === 'down' ? status : null;
        },
        240_000,
        2000,
      ),
    );
    // The counters and the handshake stay what they were: the tunnel is configured, only silent.
    expect(down.last_handshake).not.toBeNull();
    expect(down.bytes_received).toBeGreaterThan(0);

    running.child.kill('SIGTERM');
    expect(await running.exit).toBe(0);
    agent = null;
    const left = await site.gateway.attempt('ip', ['link', 'show', 'cpvpn0']);
    expect(left.ok).toBe(false);
    expect(running.log()).toContain('VPN agent: tunnel stopped');
  }, 300_000);
});

describe('IPsec gateway: the agent with charon, a customer peer with charon (IKEv2, PSK)', () => {
  let site: Site;
  let agent: RunningAgent | null = null;
  let peer: IpsecPeer | null = null;
  const firstPsk = 'first shared "secret" of the test';
  const secondPsk = 'second shared secret, after rotation';
  let configFile: string;
  const configWith = (version: string, psk: string): VpnAgentConfig => ({
    version,
    tunnel_type: 'ipsec',
    ...baseConfig(site.addresses),
    ipsec: { pre_shared_key: psk },
  });
  const customer = () => ({
    netns: site.peer,
    dir: site.dir,
    ownAddress: site.addresses.remotePeerIp,
    gatewayLocalIp: site.addresses.localIp,
    ownNetworkCidr: site.addresses.remoteNetwork,
    gatewayNetworkCidr: site.addresses.localNetwork,
  });
  const statusWhen = (check: (s: AgentStatus) => boolean, timeoutMs = 30_000) =>
    agent!.explain(
      eventually(
        async () => {
          const status = await agent!.status();
          return check(status) ? status : null;
        },
        timeoutMs,
        250,
      ),
    );

  beforeAll(async () => {
    site = makeSite(72);
    await addHosts(site);
  });

  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    await peer?.stop('SIGKILL');
    site.set.destroy();
    fs.rmSync(site.dir, { recursive: true, force: true });
  });

  it('brings the tunnel up: a ping crosses it, and /status shows the IKE SA and bytes', async () => {
    expect(isPublicAddress(site.addresses.remotePeerIp)).toBe(true);
    configFile = writeAgentConfig(site, configWith('ipsec-1', firstPsk));
    agent = startAgent(site, configFile);
    await statusWhen((s) => s.applied_version === 'ipsec-1' && s.error === null);
    // The customer knows the PSK and the gateway's local_ip (and the two networks).
    peer = await startIpsecPeer({ ...customer(), psk: firstPsk });
    await agent!.explain(eventually(() => pingAcross(site), 30_000, 250));
    const up = await statusWhen((s) => s.tunnel_status === 'up' && s.bytes_sent > 0 && s.bytes_received > 0);
    expect(Date.now() - Date.parse(up.last_handshake!)).toBeLessThan(120_000);
    const said = JSON.stringify(up) + agent.log();
    expect(said).not.toContain(firstPsk);
    expect(said).not.toContain(Buffer.from(firstPsk).toString('hex'));
  }, 120_000);

  it('re-keys on a PSK change in the config file: the old PSK cannot establish, the new one makes a new IKE SA', async () => {
    const [before] = (await peer!.ikeSas()).filter((sa) => sa.state === 'ESTABLISHED');
    expect(before).toBeDefined();
    const handshakeBefore = (await agent!.status()).last_handshake!;

    writeAgentConfig(site, configWith('ipsec-2', secondPsk));
    // The gateway drops the SAs made with the old key: the tunnel is down.
    await statusWhen((s) => s.applied_version === 'ipsec-2' && s.tunnel_status === 'down');
    // A peer still on the old key is refused.
    const refused = await peer!.initiate();
    expect(refused.ok).toBe(false);
    expect(await pingAcross(site)).toBe(false);
    expect((await agent!.status()).tunnel_status).toBe('down');

    // The customer rotates too: a new IKE SA, and traffic flows again.
    await peer!.rotatePsk(secondPsk);
    const accepted = await peer!.initiate();
    expect(accepted).toMatchObject({ ok: true });
    await agent!.explain(eventually(() => pingAcross(site), 30_000, 250));
    const [after] = (await peer!.ikeSas()).filter((sa) => sa.state === 'ESTABLISHED');
    expect(after['initiator-spi']).not.toEqual(before['initiator-spi']);
    const up = await statusWhen((s) => s.tunnel_status === 'up' && s.bytes_received > 0);
    expect(Date.parse(up.last_handshake!)).toBeGreaterThanOrEqual(Date.parse(handshakeBefore));
    const said = JSON.stringify(up) + agent!.log();
    for (const psk of [firstPsk, secondPsk]) {
      expect(said).not.toContain(psk);
      expect(said).not.toContain(Buffer.from(psk).toString('hex'));
    }
  }, 120_000);

  it('starts charon again when it dies, with the last good configuration while the file is broken', async () => {
    // The file goes wrong first: the tunnel keeps what it had.
    fs.writeFileSync(configFile, JSON.stringify({ ...configWith('ipsec-3', secondPsk), remote_network_cidr: site.addresses.localNetwork }));
    await statusWhen((s) => s.error?.includes('overlap') === true && s.applied_version === 'ipsec-2');
    const [charon] = childrenNamed(agent!.child.pid!, 'charon');
    expect(charon).toBeDefined();
    process.kill(charon, 'SIGKILL');
    await eventually(
      async () => {
        const [again] = childrenNamed(agent!.child.pid!, 'charon');
        return again !== undefined && again !== charon;
      },
      30_000,
      250,
    );
    await agent!.explain(eventually(() => pingAcross(site), 60_000, 500));
    await statusWhen((s) => s.tunnel_status === 'up' && s.applied_version === 'ipsec-2' && s.error !== null);
    expect(agent!.log()).toContain('charon is gone; starting it again');
    // Mended, the file is applied again (the same tunnel: no re-key needed).
    writeAgentConfig(site, configWith('ipsec-4', secondPsk));
    await statusWhen((s) => s.applied_version === 'ipsec-4' && s.error === null && s.tunnel_status === 'up');
  }, 120_000);

  it('turns tunnel_status down when the peer vanishes (dead peer detection), then stops cleanly on SIGTERM', async () => {
    // SIGKILL: the peer sends no goodbye, so only the gateway's DPD can notice.
    await peer!.stop('SIGKILL');
    peer = null;
    await statusWhen((s) => s.tunnel_status === 'down', 120_000);

    const running = agent!;
    running.child.kill('SIGTERM');
    expect(await running.exit).toBe(0);
    agent = null;
    expect(running.log()).toContain('VPN agent: tunnel stopped');
    // charon took its libipsec TUN device with it.
    expect((await site.gateway.exec('ip', ['-br', 'link'])).includes('ipsec0')).toBe(false);
  }, 180_000);
});
