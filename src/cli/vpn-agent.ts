/**
 * `cloudplane vpn-agent [--config FILE] [--listen HOST:PORT] [--state-dir DIR] [--interface NAME]`:
 * runs a VPN gateway's tunnel beside the operator (see src/vpn-agent/agent.ts).
 */
import { parseArgs } from 'node:util';
import { loadVpnAgentSettings } from '../config';
import { createLogger } from '../logger';
import { startVpnAgent } from '../vpn-agent/agent';

export const VPN_AGENT_USAGE =
  'cloudplane vpn-agent [--config /etc/cloudplane/vpn/config.json] [--listen 0.0.0.0:9180] [--state-dir /run/cloudplane-vpn] [--interface cpvpn0]';

function parseListen(text: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) throw new Error(`--listen must be HOST:PORT, got ${JSON.stringify(text)}`);
  return { host: match.at(1) ?? match[2], port };
}

export async function runVpnAgent(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', default: '/etc/cloudplane/vpn/config.json' },
      listen: { type: 'string', default: '0.0.0.0:9180' },
      'state-dir': { type: 'string', default: '/run/cloudplane-vpn' },
      interface: { type: 'string', default: 'cpvpn0' },
    },
    strict: true,
  });
  // Linux interface names: at most 15 bytes, no slash or space.
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(values.interface))
    throw new Error(`--interface must be a network interface name of 1-15 characters, got ${JSON.stringify(values.interface)}`);
  const { host, port } = parseListen(values.listen);
  const settings = loadVpnAgentSettings();
  // Whatever the agent or its daemons write (key files, sockets) is for root's eyes only.
  process.umask(0o077);
  const logger = createLogger(settings.logLevel).child({ component: 'vpn-agent' });
  process.stdout.on('error', () => undefined);
  const agent = await startVpnAgent({
    configPath: values.config,
    host,
    port,
    stateDir: values['state-dir'],
    interfaceName: values.interface,
    wireguardGo: settings.wireguardGo,
    handshakeWindowMs: settings.handshakeWindowMs,
    logger,
  });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'VPN agent: stopping the tunnel');
    await agent.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}
