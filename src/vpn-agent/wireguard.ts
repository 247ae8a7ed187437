/**
 * WireGuard: a kernel interface where the kernel has the module, else wireguard-go (a
 * userspace implementation behind the same `wg` interface); configured with `wg syncconf`
 * from a 0600 file that exists only while wg reads it, so the private key never appears
 * in an argument list and does not stay on disk.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { Daemon } from './commands';
import { run, succeeds, waitFor, writePrivateFile } from '../lib/processes';
import { isWireguardConfig, VpnAgentConfig, WireguardAgentConfig } from './config';
import type { Tunnel, TunnelReading } from './tunnel';

/** wireguard-go's control sockets (wg looks for them here). */
const USERSPACE_SOCKET_DIR = '/var/run/wireguard';

export interface WireguardOptions {
  interfaceName: string;
  stateDir: string;
  wireguardGo: string;
  /** A peer is up while its last handshake is this recent (WireGuard re-handshakes every 2 minutes while traffic flows). */
  handshakeWindowMs: number;
  logger: Logger;
}

export class WireguardTunnel implements Tunnel {
  private userspace: Daemon | null = null;
  private interfaceReady = false;
  private routedCidr: string | null = null;
  private peerKey: string | null = null;

  constructor(private readonly options: WireguardOptions) {}

  async apply(config: VpnAgentConfig): Promise<void> {
    if (!isWireguardConfig(config)) throw new Error('not a WireGuard configuration');
    await this.ensureInterface();
    const name = this.options.interfaceName;
    const file = path.join(this.options.stateDir, 'wireguard.conf');
    writePrivateFile(file, renderWgConfig(config));
    try {
      await run('wg', ['syncconf', name, file], { redact: [config.wireguard.private_key] });
    } finally {
      fs.rmSync(file, { force: true });
    }
    await run('ip', ['link', 'set', 'dev', name, 'up']);
    await this.routeRemoteNetwork(config.remote_network_cidr);
    this.peerKey = config.wireguard.remote_public_key;
  }

  async read(): Promise<TunnelReading> {
    const idle: TunnelReading = { up: false, bytesSent: 0, bytesReceived: 0, lastHandshake: null };
    if (!this.interfaceReady || !this.peerKey) return idle;
    const dump = await run('wg', ['show', this.options.interfaceName, 'dump']);
    // The first line is the interface's own (it holds the private key): only peer lines are read.
    const peer = dump
      .split('\n')
      .slice(1)
      .map((line) => line.split('\t'))
      .find((fields) => fields[0] === this.peerKey);
    if (!peer) return idle;
    // public-key, preshared-key, endpoint, allowed-ips, latest-handshake, transfer-rx, transfer-tx, persistent-keepalive
    const handshakeSeconds = Number(peer[4]);
    const lastHandshake = handshakeSeconds > 0 ? new Date(handshakeSeconds * 1000) : null;
    return {
      up: lastHandshake !== null && Date.now() - lastHandshake.getTime() < this.options.handshakeWindowMs,
      bytesReceived: Number(peer[5]) || 0,
      bytesSent: Number(peer[6]) || 0,
      lastHandshake,
    };
  }

  healthy(): boolean {
    return !this.userspace || this.userspace.running;
  }

  async stop(): Promise<void> {
    const name = this.options.interfaceName;
    if (this.userspace) {
      // wireguard-go removes its interface as it exits.
      await this.userspace.stop();
      this.userspace = null;
    }
    if (await succeeds('ip', ['link', 'show', 'dev', name])) await run('ip', ['link', 'del', 'dev', name]);
    this.interfaceReady = false;
    this.routedCidr = null;
    this.peerKey = null;
  }

  private async ensureInterface(): Promise<void> {
    const name = this.options.interfaceName;
    if (this.interfaceReady && this.healthy()) return;
    if (this.userspace) await this.stop();
    if (await succeeds('ip', ['link', 'show', 'dev', name])) await run('ip', ['link', 'del', 'dev', name]);
    if (await succeeds('ip', ['link', 'add', 'dev', name, 'type', 'wireguard'])) {
      this.options.logger.info({ interface: name }, 'WireGuard: kernel interface');
    } else {
      this.options.logger.info(
        { interface: name, wireguardGo: this.options.wireguardGo },
        'WireGuard: the kernel has no WireGuard module; starting wireguard-go',
      );
      // WG_PROCESS_FOREGROUND: what wireguard-go sets for its own daemon child; it also skips the kernel-module banner.
      const daemon = new Daemon(
        'wireguard-go',
        this.options.wireguardGo,
        ['-f', name],
        { ...process.env, LOG_LEVEL: 'error', WG_PROCESS_FOREGROUND: '1' },
        this.options.logger,
      );
      this.userspace = daemon;
      const socket = path.join(USERSPACE_SOCKET_DIR, `${name}.sock`);
      await waitFor(
        'wireguard-go interface',
        async () => fs.existsSync(socket) && (await succeeds('ip', ['link', 'show', 'dev', name])),
        10_000,
        () => daemon.running,
      );
    }
    this.interfaceReady = true;
  }

  private async routeRemoteNetwork(cidr: string): Promise<void> {
    const name = this.options.interfaceName;
    if (this.routedCidr && this.routedCidr !== cidr) await succeeds('ip', ['route', 'del', this.routedCidr, 'dev', name]);
    await run('ip', ['route', 'replace', cidr, 'dev', name]);
    this.routedCidr = cidr;
  }
}

/** The `wg setconf` format: the gateway listens; the customer's peer finds it at local_ip and may roam. */
export function renderWgConfig(config: WireguardAgentConfig): string {
  const lines = ['[Interface]', `PrivateKey = ${config.wireguard.private_key}`, `ListenPort = ${config.wireguard.listen_port}`];
  if (config.wireguard.remote_public_key) {
    lines.push('', '[Peer]', `PublicKey = ${config.wireguard.remote_public_key}`, `AllowedIPs = ${config.remote_network_cidr}`);
  }
  return `${lines.join('\n')}\n`;
}
