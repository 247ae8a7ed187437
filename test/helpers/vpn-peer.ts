/**
 * The customer's side of a VPN gateway, configured as a customer would from what the API
 * gives them (WireGuard: the gateway's public_key and local_ip; IPsec: the PSK and
 * local_ip) and their own networks, with real Debian software: wireguard-go (this kernel
 * has no WireGuard module) driven by `wg`, and strongSwan's charon driven by swanctl.
 * Written apart from the agent's own renderers, so a test shows the two ends agree.
 */
import { execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { detectDataPlane, parseListSas, RawSection } from '../../src/vpn-agent/ipsec';
import type { Netns } from './netns';

export const TOOLS_HINT = 'run scripts/ensure-vpn-tools.sh (make test runs it through scripts/ensure-tools.sh)';

/** wireguard-go as scripts/ensure-vpn-tools.sh builds it, unless CLOUDPLANE_WIREGUARD_GO names another. */
export function wireguardGoBinary(): string {
  const candidates = [
    process.env.CLOUDPLANE_WIREGUARD_GO,
    path.join(os.homedir(), '.cache/cloudplane/bin/wireguard-go'),
    ...(process.env.PATH ?? '').split(':').map((d) => path.join(d, 'wireguard-go')),
  ];
  const found = candidates.find((c) => c && fs.existsSync(c));
  if (!found) throw new Error(`wireguard-go not found: ${TOOLS_HINT}`);
  return found;
}

export const CHARON = '/usr/lib/ipsec/charon';

/** Fails naming the install step when a tool the tunnel tests need is missing. */
export function requireVpnTools(): void {
  for (const tool of ['wg', 'swanctl', 'ping', 'unshare']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      throw new Error(`${tool} not found: ${TOOLS_HINT}`);
    }
  }
  if (!fs.existsSync(CHARON)) throw new Error(`${CHARON} not found (strongswan-charon): ${TOOLS_HINT}`);
  wireguardGoBinary();
}

export function wireguardKeyPair(): { privateKey: string; publicKey: string } {
  const privateKey = execFileSync('wg', ['genkey']).toString().trim();
  const publicKey = execFileSync('wg', ['pubkey'], { input: `${privateKey}\n` })
    .toString()
    .trim();
  return { privateKey, publicKey };
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface CustomerSide {
  netns: Netns;
  /** Where the peer keeps its files (a test's temporary directory). */
  dir: string;
  /** The customer's own network (the gateway's remote_network_cidr). */
  ownNetworkCidr: string;
  /** The network behind the gateway (its local_network_cidr). */
  gatewayNetworkCidr: string;
  /** The gateway's local_ip. */
  gatewayLocalIp: string;
}

export interface WireguardPeer {
  interfaceName: string;
  /** Stops wireguard-go: its interface goes, and no handshake follows. */
  stop(): Promise<void>;
}

export async function startWireguardPeer(
  side: CustomerSide & { privateKey: string; gatewayPublicKey: string; gatewayPort?: number; interfaceName: string },
): Promise<WireguardPeer> {
  const { netns, interfaceName } = side;
  const daemon = netns.spawn(wireguardGoBinary(), ['-f', interfaceName], {
    env: { ...process.env, WG_PROCESS_FOREGROUND: '1', LOG_LEVEL: 'error' },
    stdio: 'ignore',
  });
  await waitUntil(`wireguard-go ${interfaceName}`, () => fs.existsSync(`/var/run/wireguard/${interfaceName}.sock`));
  const file = path.join(side.dir, `${interfaceName}.conf`);
  const config = [
    '[Interface]',
    `PrivateKey = ${side.privateKey}`,
    '',
    '[Peer]',
    `PublicKey = ${side.gatewayPublicKey}`,
    `Endpoint = ${side.gatewayLocalIp}:${side.gatewayPort ?? 51820}`,
    `AllowedIPs = ${side.gatewayNetworkCidr}`,
    'PersistentKeepalive = 25',
  ];
  fs.writeFileSync(file, `${config.join('\n')}\n`, { mode: 0o600 });
  await netns.exec('wg', ['setconf', interfaceName, file]);
  await netns.exec('ip', ['link', 'set', interfaceName, 'up']);
  await netns.exec('ip', ['route', 'replace', side.gatewayNetworkCidr, 'dev', interfaceName]);
  return {
    interfaceName,
    stop: async () => {
      daemon.kill('SIGTERM');
      await exited(daemon);
    },
  };
}

export interface IpsecPeer {
  /** Asks charon to negotiate now; whether an IKE and CHILD SA came up, and what swanctl said. */
  initiate(): Promise<{ ok: boolean; output: string }>;
  /** The customer changes the PSK: new secret loaded, the SAs made with the old one closed. */
  rotatePsk(psk: string): Promise<void>;
  /** The peer's IKE SAs (swanctl --list-sas --raw). */
  ikeSas(): Promise<RawSection[]>;
  /** Stops charon: SIGTERM (it says goodbye to the gateway) or SIGKILL (it vanishes). */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

export async function startIpsecPeer(side: CustomerSide & { psk: string; ownAddress: string }): Promise<IpsecPeer> {
  const { netns, dir } = side;
  const dataPlane = await detectDataPlane(pino({ level: 'silent' }));
  const socket = path.join(dir, 'peer-charon.vici');
  const uri = `unix://${socket}`;
  const strongswanConf = path.join(dir, 'peer-strongswan.conf');
  const swanctlConf = path.join(dir, 'peer-swanctl.conf');
  // A customer's strongswan.conf: the usual plugins, libipsec where the kernel lacks ESP.
  fs.writeFileSync(
    strongswanConf,
    `charon {
  load = random nonce openssl pem pkcs1 x509 revocation constraints pubkey curve25519 hmac kdf gcm aes sha1 sha2 ${dataPlane === 'libipsec' ? 'kernel-libipsec ' : ''}kernel-netlink socket-default vici
  plugins {
    vici {
      socket = ${uri}
    }
  }
  filelog {
    peer {
      path = ${path.join(dir, 'peer-charon.log')}
      default = 1
    }
  }
}
`,
  );
  const writeSwanctl = (psk: string) =>
    fs.writeFileSync(
      swanctlConf,
      `connections {
  gateway {
    version = 2
    remote_addrs = ${side.gatewayLocalIp}
    encap = yes
    dpd_delay = 10s
    local {
      auth = psk
      id = ${side.ownAddress}
    }
    remote {
      auth = psk
      id = ${side.gatewayLocalIp}
    }
    children {
      gateway {
        local_ts = ${side.ownNetworkCidr}
        remote_ts = ${side.gatewayNetworkCidr}
        start_action = start
      }
    }
  }
}
secrets {
  ike-gateway {
    id = ${side.gatewayLocalIp}
    secret = 0s${Buffer.from(psk).toString('base64')}
  }
}
`,
      { mode: 0o600 },
    );
  const env = { ...process.env, STRONGSWAN_CONF: strongswanConf };
  const swanctl = (args: string[]) => netns.attempt('env', [`STRONGSWAN_CONF=${strongswanConf}`, 'swanctl', ...args, '--uri', uri]);
  const load = async () => {
    const loaded = await swanctl(['--load-all', '--noprompt', '--file', swanctlConf]);
    if (!loaded.ok) throw new Error(`peer swanctl --load-all failed: ${loaded.output}`);
  };
  writeSwanctl(side.psk);
  const charon = netns.spawn(CHARON, [], { env, privateRun: true, stdio: 'ignore' });
  await waitUntil('peer charon vici socket', () => fs.existsSync(socket) || charon.exitCode !== null);
  if (charon.exitCode !== null) throw new Error(`peer charon exited ${charon.exitCode}; see ${path.join(dir, 'peer-charon.log')}`);
  await load();
  return {
    initiate: async () => {
      const result = await swanctl(['--initiate', '--child', 'gateway', '--timeout', '20']);
      return { ok: result.ok, output: result.output };
    },
    rotatePsk: async (psk) => {
      writeSwanctl(psk);
      await load();
      await swanctl(['--terminate', '--ike', 'gateway', '--force', '--timeout', '5']);
    },
    ikeSas: async () => {
      const listed = await swanctl(['--list-sas', '--raw']);
      if (!listed.ok) throw new Error(`peer swanctl --list-sas failed: ${listed.output}`);
      return parseListSas(listed.output);
    },
    stop: async (signal = 'SIGTERM') => {
      charon.kill(signal);
      await exited(charon);
    },
  };
}
