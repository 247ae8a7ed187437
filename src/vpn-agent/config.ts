/**
 * The VPN agent's configuration file: what the Kubernetes VPN driver writes into the
 * gateway's Secret (`vpn-<id>-agent`) and the agent applies. The schema is the contract
 * between the two; keys (WireGuard private key, IPsec pre-shared key) live only here.
 */
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import Ajv from 'ajv';
import { Static, Type } from '@sinclair/typebox';
import { blocksOverlap, parseIpv4Block } from '../lib/cidr';

/** A base64 WireGuard key: 32 bytes. */
const WireguardKey = Type.String({ pattern: '^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$' });

export const VpnAgentConfigSchema = Type.Object(
  {
    /** Opaque to the agent; /status answers it back once this content is applied. */
    version: Type.String({ minLength: 1 }),
    tunnel_type: Type.Union([Type.Literal('wireguard'), Type.Literal('ipsec')]),
    local_ip: Type.String({ minLength: 1 }),
    local_network_cidr: Type.String({ minLength: 1 }),
    remote_network_cidr: Type.String({ minLength: 1 }),
    remote_peer_ip: Type.String({ minLength: 1 }),
    wireguard: Type.Optional(
      Type.Object(
        {
          private_key: WireguardKey,
          listen_port: Type.Integer({ minimum: 1, maximum: 65535 }),
          remote_public_key: Type.Union([WireguardKey, Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
    ipsec: Type.Optional(Type.Object({ pre_shared_key: Type.String({ minLength: 1 }) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export type VpnAgentConfig = Static<typeof VpnAgentConfigSchema>;
export type WireguardAgentConfig = VpnAgentConfig & { tunnel_type: 'wireguard'; wireguard: NonNullable<VpnAgentConfig['wireguard']> };
export type IpsecAgentConfig = VpnAgentConfig & { tunnel_type: 'ipsec'; ipsec: NonNullable<VpnAgentConfig['ipsec']> };

export function isWireguardConfig(config: VpnAgentConfig): config is WireguardAgentConfig {
  return config.tunnel_type === 'wireguard' && config.wireguard !== undefined;
}

export function isIpsecConfig(config: VpnAgentConfig): config is IpsecAgentConfig {
  return config.tunnel_type === 'ipsec' && config.ipsec !== undefined;
}

const validateShape = new Ajv({ allErrors: true, strict: false }).compile<VpnAgentConfig>(VpnAgentConfigSchema);

export type ConfigReading = { ok: true; config: VpnAgentConfig; hash: string } | { ok: false; hash: string; error: string };

/**
 * Parses and checks a configuration file's content. The error names the fields at fault
 * and never repeats a value: a key in the wrong place must not reach a log or /status.
 */
export function parseAgentConfig(text: string): ConfigReading {
  const hash = createHash('sha256').update(text).digest('hex');
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return { ok: false, hash, error: 'configuration is not valid JSON' };
  }
  if (!validateShape(data)) {
    const fields = (validateShape.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
    return { ok: false, hash, error: `configuration is invalid: ${[...new Set(fields)].join('; ')}` };
  }
  const problems = meaningProblems(data);
  if (problems.length > 0) return { ok: false, hash, error: `configuration is invalid: ${problems.join('; ')}` };
  return { ok: true, config: data, hash };
}

function meaningProblems(config: VpnAgentConfig): string[] {
  const problems: string[] = [];
  for (const field of ['local_ip', 'remote_peer_ip'] as const) {
    if (!isIPv4(config[field])) problems.push(`/${field} must be an IPv4 address`);
  }
  const local = parseIpv4Block(config.local_network_cidr);
  const remote = parseIpv4Block(config.remote_network_cidr);
  if (!local) problems.push('/local_network_cidr must be an IPv4 network (a.b.c.d/n)');
  if (!remote) problems.push('/remote_network_cidr must be an IPv4 network (a.b.c.d/n)');
  if (local && remote && blocksOverlap(local, remote)) problems.push('/local_network_cidr and /remote_network_cidr overlap');
  if (config.tunnel_type === 'wireguard' && !config.wireguard) problems.push('/wireguard is required for tunnel_type wireguard');
  if (config.tunnel_type === 'ipsec' && !config.ipsec) problems.push('/ipsec is required for tunnel_type ipsec');
  return problems;
}
