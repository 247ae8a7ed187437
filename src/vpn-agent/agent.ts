/**
 * The VPN agent: applies the configuration file to a tunnel, re-applies when the file's
 * content changes (a Secret volume swaps a symlink, so the file is read and hashed every
 * poll rather than watched), and serves the tunnel's live state.
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import { ConfigReading, parseAgentConfig, VpnAgentConfig } from './config';
import { IpsecTunnel } from './ipsec';
import { AgentStatus, startStatusServer, StatusServer } from './status-server';
import type { Tunnel } from './tunnel';
import { WireguardTunnel } from './wireguard';

export const CONFIG_POLL_MS = 2000;

export interface VpnAgentOptions {
  configPath: string;
  host: string;
  port: number;
  stateDir: string;
  interfaceName: string;
  wireguardGo: string;
  /** A WireGuard peer counts as up while its latest handshake is younger than this. */
  handshakeWindowMs: number;
  logger: Logger;
}

export interface VpnAgent {
  url: string;
  stop(): Promise<void>;
}

export async function startVpnAgent(options: VpnAgentOptions): Promise<VpnAgent> {
  const { logger } = options;
  fs.mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
  let tunnel: { type: VpnAgentConfig['tunnel_type']; tunnel: Tunnel } | null = null;
  let appliedHash: string | null = null;
  let appliedVersion: string | null = null;
  let lastGood: VpnAgentConfig | null = null;
  let error: string | null = null;
  let loggedError: string | null = null;
  let stopping = false;
  let timer: NodeJS.Timeout | null = null;
  let pass: Promise<void> = Promise.resolve();

  const setError = (message: string | null) => {
    error = message;
    if (message && message !== loggedError) logger.error({ reason: message }, 'VPN agent: configuration not applied');
    loggedError = message;
  };

  const stopTunnel = async () => {
    await tunnel?.tunnel.stop();
    tunnel = null;
  };

  const tunnelFor = (type: VpnAgentConfig['tunnel_type']): Tunnel =>
    type === 'wireguard'
      ? new WireguardTunnel({
          interfaceName: options.interfaceName,
          stateDir: options.stateDir,
          wireguardGo: options.wireguardGo,
          handshakeWindowMs: options.handshakeWindowMs,
          logger,
        })
      : new IpsecTunnel({ stateDir: options.stateDir, logger });

  const readConfig = (): ConfigReading => {
    try {
      return parseAgentConfig(fs.readFileSync(options.configPath, 'utf8'));
    } catch (err) {
      return { ok: false, hash: '', error: `cannot read ${options.configPath}: ${(err as NodeJS.ErrnoException).code ?? 'error'}` };
    }
  };

  /** Brings the tunnel to `config`; false (with `error` set) when it could not. */
  const apply = async (config: VpnAgentConfig): Promise<boolean> => {
    try {
      if (tunnel && tunnel.type !== config.tunnel_type) await stopTunnel();
      tunnel ??= { type: config.tunnel_type, tunnel: tunnelFor(config.tunnel_type) };
      await tunnel.tunnel.apply(config);
      return true;
    } catch (err) {
      setError((err as Error).message);
      return false;
    }
  };

  const reconcile = async () => {
    const reading = readConfig();
    // A daemon that died (charon, wireguard-go) is started again with the configuration.
    const repair = tunnel !== null && !tunnel.tunnel.healthy();
    if (reading.hash === appliedHash && !repair) return;
    if (!reading.ok) {
      setError(reading.error);
      // A file gone wrong does not leave a dead tunnel dead: the last good one comes back.
      if (repair && lastGood) await apply(lastGood);
      return;
    }
    if (!(await apply(reading.config))) return;
    lastGood = reading.config;
    appliedHash = reading.hash;
    appliedVersion = reading.config.version;
    setError(null);
    logger.info({ version: reading.config.version, tunnel_type: reading.config.tunnel_type }, 'VPN agent: configuration applied');
  };

  const schedule = () => {
    if (stopping) return;
    timer = setTimeout(() => {
      pass = reconcile().finally(schedule);
    }, CONFIG_POLL_MS);
  };

  const status = async (): Promise<AgentStatus> => {
    const base = { applied_version: appliedVersion, error };
    if (!tunnel) return { ...base, tunnel_status: 'down', bytes_sent: 0, bytes_received: 0, last_handshake: null };
    try {
      const reading = await tunnel.tunnel.read();
      return {
        ...base,
        tunnel_status: reading.up ? 'up' : 'down',
        bytes_sent: reading.bytesSent,
        bytes_received: reading.bytesReceived,
        last_handshake: reading.lastHandshake?.toISOString() ?? null,
      };
    } catch (err) {
      return { ...base, error: error ?? (err as Error).message, tunnel_status: 'down', bytes_sent: 0, bytes_received: 0, last_handshake: null };
    }
  };

  pass = reconcile();
  await pass;
  let server: StatusServer;
  try {
    server = await startStatusServer(options.host, options.port, status);
  } catch (err) {
    await stopTunnel();
    throw err;
  }
  logger.info({ url: server.url, config: options.configPath }, 'VPN agent: serving status');
  schedule();

  return {
    url: server.url,
    stop: async () => {
      stopping = true;
      if (timer) clearTimeout(timer);
      await pass;
      await server.close();
      await stopTunnel();
      logger.info('VPN agent: tunnel stopped');
    },
  };
}
