/**
 * IPsec: strongSwan's charon (IKEv2, pre-shared key), configured through swanctl over its
 * vici socket from files the agent writes into its state directory. The ESP data plane is
 * the kernel's XFRM where the kernel has ESP, else charon's kernel-libipsec plugin (ESP in
 * userspace over a TUN device). ESP is always UDP-encapsulated: a Service of type
 * LoadBalancer forwards UDP 500 and 4500, never IP protocol 50.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { Daemon } from './commands';
import { CommandError, run, succeeds, waitFor, writePrivateFile } from '../lib/processes';
import { IpsecAgentConfig, isIpsecConfig, VpnAgentConfig } from './config';
import type { Tunnel, TunnelReading } from './tunnel';
import { textOf } from '../lib/unknown-values';

export const CONNECTION = 'cloudplane';
const CHARON_PATHS = ['/usr/lib/ipsec/charon', '/usr/libexec/ipsec/charon', '/usr/lib/strongswan/charon'];

export type IpsecDataPlane = 'kernel' | 'libipsec';

export interface IpsecOptions {
  stateDir: string;
  logger: Logger;
}

export class IpsecTunnel implements Tunnel {
  private charon: Daemon | null = null;
  private dataPlane: IpsecDataPlane | null = null;
  /** A digest of the connection and secret last loaded (the PSK itself is not kept apart from the config). */
  private loadedDigest: string | null = null;

  constructor(private readonly options: IpsecOptions) {}

  private get vici(): string {
    return `unix://${path.join(this.options.stateDir, 'charon.vici')}`;
  }

  private get strongswanConf(): string {
    return path.join(this.options.stateDir, 'strongswan.conf');
  }

  async apply(config: VpnAgentConfig): Promise<void> {
    if (!isIpsecConfig(config)) throw new Error('not an IPsec configuration');
    await this.ensureCharon();
    const swanctlConf = renderSwanctlConf(config);
    const digest = createHash('sha256').update(swanctlConf).digest('hex');
    if (digest === this.loadedDigest) return;
    const file = path.join(this.options.stateDir, 'swanctl.conf');
    writePrivateFile(file, swanctlConf);
    const psk = config.ipsec.pre_shared_key;
    try {
      await this.swanctl(['--load-all', '--noprompt', '--file', file], [psk, Buffer.from(psk, 'utf8').toString('hex')]);
    } finally {
      fs.rmSync(file, { force: true });
    }
    const first = this.loadedDigest === null;
    this.loadedDigest = digest;
    if (first) return; // start_action brings the first SA up
    // A changed key or traffic selector: the SAs negotiated under the old settings go, and
    // a new IKE SA is negotiated under the new ones.
    await this.swanctl(['--terminate', '--ike', CONNECTION, '--force', '--timeout', '5']).catch(() => undefined);
    await this.swanctl(['--initiate', '--child', CONNECTION, '--timeout', '3']).catch((err: unknown) => {
      this.options.logger.info({ reason: textOf(err) }, 'IPsec: initiation after a change did not complete yet (the trap policy initiates on traffic)');
    });
  }

  async read(): Promise<TunnelReading> {
    const idle: TunnelReading = { up: false, bytesSent: 0, bytesReceived: 0, lastHandshake: null };
    if (!this.charon?.running || this.loadedDigest === null) return idle;
    const raw = await this.swanctl(['--list-sas', '--raw', '--ike', CONNECTION]);
    return readingOf(parseListSas(raw));
  }

  healthy(): boolean {
    return !this.charon || this.charon.running;
  }

  async stop(): Promise<void> {
    // charon deletes its SAs (telling the peer) and removes its policies as it exits.
    await this.charon?.stop();
    this.charon = null;
    this.loadedDigest = null;
    for (const file of ['swanctl.conf', 'strongswan.conf', 'charon.vici']) fs.rmSync(path.join(this.options.stateDir, file), { force: true });
  }

  private swanctl(args: string[], redact: readonly string[] = []): Promise<string> {
    return run('swanctl', [...args, '--uri', this.vici], { env: { ...process.env, STRONGSWAN_CONF: this.strongswanConf }, redact });
  }

  private async ensureCharon(): Promise<void> {
    if (this.charon?.running) return;
    if (this.charon) this.options.logger.warn({ reason: this.charon.describeExit() }, 'IPsec: charon is gone; starting it again');
    this.charon = null;
    this.loadedDigest = null;
    this.dataPlane ??= await detectDataPlane(this.options.logger);
    const socket = path.join(this.options.stateDir, 'charon.vici');
    fs.rmSync(socket, { force: true });
    fs.writeFileSync(this.strongswanConf, renderStrongswanConf(socket, this.dataPlane), { mode: 0o600 });
    const charonPath = CHARON_PATHS.find((p) => fs.existsSync(p));
    if (!charonPath) throw new CommandError(`charon not found (looked in ${CHARON_PATHS.join(', ')}); install strongswan-charon`);
    const charon = new Daemon('charon', charonPath, [], { ...process.env, STRONGSWAN_CONF: this.strongswanConf }, this.options.logger);
    this.charon = charon;
    await waitFor(
      'charon vici socket',
      () => fs.existsSync(socket),
      15_000,
      () => charon.running,
    ).catch((err: unknown) => {
      throw new CommandError(charon.running ? textOf(err) : `${charon.describeExit()} (another charon may hold /var/run/charon.pid)`);
    });
  }
}

/**
 * Whether this kernel can hold an ESP state: adds and removes a throw-away transport-mode
 * state on loopback (all-zero keys). A kernel without ESP answers `Requested type not found`.
 */
export async function detectDataPlane(logger: Logger): Promise<IpsecDataPlane> {
  const id = ['src', '127.0.0.1', 'dst', '127.0.0.1', 'proto', 'esp', 'spi', '0xc10d0001'];
  try {
    await run('ip', [
      'xfrm',
      'state',
      'add',
      ...id,
      'mode',
      'transport',
      'enc',
      'cbc(aes)',
      `0x${'00'.repeat(16)}`,
      'auth',
      'hmac(sha256)',
      `0x${'00'.repeat(32)}`,
    ]);
    await run('ip', ['xfrm', 'state', 'delete', ...id]);
    logger.info('IPsec: the kernel has ESP; using kernel XFRM');
    return 'kernel';
  } catch (err) {
    logger.info({ reason: (err as Error).message }, 'IPsec: the kernel refused an ESP state; using kernel-libipsec (ESP in userspace over TUN)');
    await succeeds('ip', ['xfrm', 'state', 'delete', ...id]);
    return 'libipsec';
  }
}

/**
 * charon's own settings: only the plugins it needs (no /etc/strongswan.d), its vici socket
 * in the state directory (so charons in different namespaces do not meet at
 * /var/run/charon.vici), log to stderr at level 1 (level 1 never prints keys), and short
 * retransmissions so a vanished peer shows as down within about half a minute after DPD.
 */
export function renderStrongswanConf(viciSocket: string, dataPlane: IpsecDataPlane): string {
  const plugins = [
    'random',
    'nonce',
    'openssl',
    'pem',
    'pkcs1',
    'x509',
    'revocation',
    'constraints',
    'pubkey',
    'curve25519',
    'hmac',
    'kdf',
    'gcm',
    'aes',
    'sha1',
    'sha2',
  ];
  if (dataPlane === 'libipsec') plugins.push('kernel-libipsec');
  plugins.push('kernel-netlink', 'socket-default', 'vici');
  return `charon {
  load = ${plugins.join(' ')}
  install_routes = yes
  retransmit_tries = 4
  retransmit_timeout = 2.0
  retransmit_base = 1.5
  plugins {
    vici {
      socket = unix://${viciSocket}
    }
  }
  filelog {
    stderr {
      default = 1
    }
  }
}
`;
}

/** swanctl.conf for one IKEv2 connection authenticated by the PSK, ids = the two public addresses. */
export function renderSwanctlConf(config: IpsecAgentConfig): string {
  // Hex keeps any byte of the PSK out of swanctl.conf's quoting rules.
  const secret = `0x${Buffer.from(config.ipsec.pre_shared_key, 'utf8').toString('hex')}`;
  return `connections {
  ${CONNECTION} {
    version = 2
    remote_addrs = ${config.remote_peer_ip}
    encap = yes
    dpd_delay = 10s
    local {
      auth = psk
      id = ${config.local_ip}
    }
    remote {
      auth = psk
      id = ${config.remote_peer_ip}
    }
    children {
      ${CONNECTION} {
        local_ts = ${config.local_network_cidr}
        remote_ts = ${config.remote_network_cidr}
        start_action = trap|start
        dpd_action = trap
      }
    }
  }
}
secrets {
  ike-${CONNECTION} {
    id-local = ${config.local_ip}
    id-remote = ${config.remote_peer_ip}
    secret = ${secret}
  }
}
`;
}

/** One node of swanctl's --raw output: `key=value`, `key=[a b]` and `name {...}` sections. */
export interface RawSection {
  [key: string]: string | string[] | RawSection;
}

/** Parses `swanctl --list-sas --raw`: one `list-sa event {...}` line per IKE SA, then the reply. */
export function parseListSas(raw: string): RawSection[] {
  return raw
    .split('\n')
    .filter((line) => line.startsWith('list-sa event'))
    .map((line) => parseRaw(line.slice('list-sa event'.length)))
    .flatMap((event) => Object.values(event).filter((v): v is RawSection => typeof v === 'object' && !Array.isArray(v)));
}

function parseRaw(text: string): RawSection {
  const tokens = text.match(/[^\s{}=[\]]+=\[[^\]]*\]|[^\s{}=]+=[^\s{}]*|[^\s{}=]+\s*\{|\}/g) ?? [];
  const root: RawSection = {};
  const stack: RawSection[] = [root];
  for (const token of tokens) {
    const top = stack[stack.length - 1];
    if (token === '}') {
      if (stack.length > 1) stack.pop();
    } else if (token.endsWith('{')) {
      const section: RawSection = {};
      top[token.slice(0, -1).trim()] = section;
      stack.push(section);
    } else {
      const at = token.indexOf('=');
      const value = token.slice(at + 1);
      top[token.slice(0, at)] = value.startsWith('[') ? value.slice(1, -1).split(' ').filter(Boolean) : value;
    }
  }
  return root;
}

const text = (section: RawSection, key: string): string | undefined => (typeof section[key] === 'string' ? section[key] : undefined);

/** Up when an IKE SA is ESTABLISHED with an INSTALLED CHILD SA; bytes over the installed CHILD SAs. */
export function readingOf(ikeSas: RawSection[], now = Date.now()): TunnelReading {
  let up = false;
  let bytesSent = 0;
  let bytesReceived = 0;
  const secondsAgoSeen: number[] = [];
  const seen = (secondsAgo: string | undefined) => {
    if (secondsAgo === undefined || !/^\d+$/.test(secondsAgo)) return;
    secondsAgoSeen.push(Number(secondsAgo));
  };
  for (const ike of ikeSas) {
    if (text(ike, 'state') !== 'ESTABLISHED') continue;
    seen(text(ike, 'established'));
    const children = ike['child-sas'];
    if (typeof children !== 'object' || Array.isArray(children)) continue;
    for (const child of Object.values(children)) {
      if (typeof child !== 'object' || Array.isArray(child) || text(child, 'state') !== 'INSTALLED') continue;
      up = true;
      bytesSent += Number(text(child, 'bytes-out') ?? 0);
      bytesReceived += Number(text(child, 'bytes-in') ?? 0);
      seen(text(child, 'install-time'));
    }
  }
  const lastHandshake = secondsAgoSeen.length === 0 ? null : new Date(Math.floor(now / 1000 - Math.min(...secondsAgoSeen)) * 1000);
  return { up, bytesSent, bytesReceived, lastHandshake };
}
