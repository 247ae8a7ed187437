/** Site-to-site VPN gateways: IPsec or WireGuard tunnels to a remote network. */
import { Static, Type } from '@sinclair/typebox';
import { domainError, fieldInvalid } from '../lib/errors';
import { blocksOverlap, parseIpv4Block } from '../lib/cidr';
import { isPublicAddress } from '../lib/ip';
import { randomString } from '../lib/ids';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
import { asStored, presentDetails } from './family';
import {
  baseRecordProperties,
  reconcileRecord,
  reconcileRecordProperties,
  baseStatusProperties,
  ExternalRecordSchema,
  NullableTimestamp,
  Region,
  ResourceName,
  strictObject,
  connectionSecretProperty,
  recordTimes,
} from './schema-kit';
import type { ExternalRecord } from './external-record';
import { REGIONAL_COLUMNS } from './presentation';

const STATES = ['creating', 'active', 'failed', 'deleting', 'deleted', 'destroyed'] as const;
const TUNNEL_TYPES = ['ipsec', 'wireguard'];
const PSK_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Length of a generated pre-shared key: ~238 bits over base62. */
const GENERATED_PSK_LENGTH = 40;

export interface VpnGatewaySpec {
  name: string;
  region: string;
  tunnel_type: string;
  local_network_cidr: string;
  remote_network_cidr: string;
  remote_peer_ip: string;
  /** Bumped by every rotation of the pre-shared key, which lives in a secret. */
  psk_version: number;
  /** The remote peer's WireGuard public key (base64); absent or null until the customer gives it. */
  remote_public_key?: string | null;
}

export interface VpnGatewayStatus extends BaseStatus {
  local_ip: string | null;
  public_key: string | null;
  /** When the tunnel came up: the base of its counters. */
  active_since: string | null;
  tunnel_status: 'up' | 'down';
  bytes_sent: number;
  bytes_received: number;
  last_handshake: string | null;
  external?: ExternalRecord;
}

export type VpnGateway = Resource<VpnGatewaySpec, VpnGatewayStatus>;

const Cidr = (description: string) => Type.String({ minLength: 1, maxLength: 18, description });
const TunnelType = Type.String({ maxLength: 32, description: 'Tunnel protocol: ipsec or wireguard.' });
const PeerIp = Type.String({ minLength: 1, maxLength: 45, description: 'Public IPv4 address of the remote peer.' });
const PreSharedKey = Type.String({
  pattern: '^[\\x20-\\x7E]{16,128}$',
  description: 'Pre-shared key, 16-128 printable ASCII characters. Write-only: never returned. Generated for IPsec when omitted.',
});
const WireguardKey = Type.String({
  minLength: 44,
  maxLength: 44,
  description: "The remote peer's WireGuard public key: 32 bytes in base64 (`wg pubkey` prints it). WireGuard only; without it the tunnel stays down.",
});
const NullableWireguardKey = Type.Union([WireguardKey, Type.Null()]);
const TunnelStatus = Type.String({ enum: ['up', 'down'], description: 'Live tunnel state: up or down.' });
/** A byte counter: int64, since a tunnel passes 2^31 bytes (2 GiB) soon enough and a client reading an int32 would fail on it. */
const Counter = (description: string) => Type.Integer({ minimum: 0, format: 'int64', description });

export const tunnelStatsSchema = strictObject({
  tunnel_status: TunnelStatus,
  bytes_sent: Counter('Bytes sent through the tunnel since it came up.'),
  bytes_received: Counter('Bytes received through the tunnel since it came up.'),
  last_handshake: NullableTimestamp('Time of the last tunnel handshake; null before the first.'),
});

/** A WireGuard key as `wg` prints it: 32 bytes, canonical base64. */
function isWireguardKey(value: string): boolean {
  return /^[A-Za-z0-9+/]{43}=$/.test(value) && Buffer.from(value, 'base64').toString('base64') === value;
}

/** docs/api.md: remote_public_key is a WireGuard gateway's only, and a real key. */
function assertRemotePublicKey(tunnelType: string, key: string | null | undefined): void {
  if (key === undefined) return;
  if (tunnelType !== 'wireguard') throw fieldInvalid('remote_public_key', `remote_public_key applies to WireGuard gateways only; this one uses ${tunnelType}.`);
  if (key !== null && !isWireguardKey(key))
    throw fieldInvalid('remote_public_key', 'remote_public_key must be a WireGuard public key: 32 bytes in base64, 44 characters ending in "=".');
}

function blockOf(field: string, value: string) {
  const block = parseIpv4Block(value);
  if (!block) throw domainError('invalid_cidr', `${field} must be an IPv4 network address with a prefix, such as 10.8.0.0/16; "${value}" is not.`, field);
  return block;
}

/** docs/api.md: both CIDRs are network addresses and do not overlap. */
function assertNetworks(local: string, remote: string): void {
  const localBlock = blockOf('local_network_cidr', local);
  const remoteBlock = blockOf('remote_network_cidr', remote);
  if (blocksOverlap(localBlock, remoteBlock)) {
    throw domainError('invalid_cidr', `The remote network ${remote} overlaps the local network ${local}.`, 'remote_network_cidr');
  }
}

const VpnGatewayCreate = strictObject({
  name: ResourceName(),
  region: Region(),
  tunnel_type: TunnelType,
  remote_network_cidr: Cidr('CIDR block of the remote network, e.g. 192.168.10.0/24.'),
  remote_peer_ip: PeerIp,
  pre_shared_key: Type.Optional(PreSharedKey),
  remote_public_key: Type.Optional(WireguardKey),
  local_network_cidr: Type.Optional(Cidr('CIDR block of the local network; defaults to the team network (CLOUDPLANE_VPC_CIDR).')),
});

/** A PATCH body, as validated against the update schema; the key is taken out of it (secret) before the spec sees it. */
const VpnGatewayUpdate = strictObject({
  name: Type.Optional(ResourceName()),
  remote_network_cidr: Type.Optional(Cidr('CIDR block of the remote network.')),
  pre_shared_key: Type.Optional(PreSharedKey),
  remote_public_key: Type.Optional(NullableWireguardKey),
});

/** The tunnel's live status (api/routes/vpn-gateways.ts). */
const VPN_GATEWAY_COMMANDS: readonly FamilyCommand[] = [
  {
    words: ['status'],
    summary: 'Live tunnel status',
    method: 'GET',
    path: '/{id}/status',
    columns: ['tunnel_status', 'bytes_sent', 'bytes_received', 'last_handshake'],
  },
];

export const vpnGatewayFamily: FamilyDefinition<VpnGatewaySpec, VpnGatewayStatus> = {
  name: 'vpn_gateway',
  quota: { default: 1000 },
  title: 'VPN gateway',
  kind: 'VpnGateway',
  plural: 'vpngateways',
  shortNames: ['cpvpn'],
  path: 'vpn-gateways',
  idPrefix: 'vpn',
  states: STATES,
  busyStates: ['creating', 'deleting'],
  readyStates: ['active'],
  providerBacked: true,
  deletion: 'background',
  creationEvent: 'created',
  eventVerbs: { updated: 'had a new configuration applied (a PATCH, or an edit of its custom resource).' },
  description: 'A site-to-site VPN gateway connecting the team network to a remote network over IPsec or WireGuard.',
  secret: {
    field: 'pre_shared_key',
    secretName: (id) => `vpn-psk-${id}`,
    generate: (spec) => (spec.tunnel_type === 'ipsec' ? randomString(GENERATED_PSK_LENGTH, PSK_ALPHABET) : null),
    versionField: 'psk_version' satisfies keyof VpnGatewaySpec,
  },
  schemas: {
    create: VpnGatewayCreate,
    update: VpnGatewayUpdate,
    spec: strictObject({
      name: ResourceName(),
      region: Region(),
      tunnel_type: Type.String({ enum: TUNNEL_TYPES, description: 'Tunnel protocol: ipsec or wireguard.' }),
      local_network_cidr: Cidr('CIDR block of the local network.'),
      remote_network_cidr: Cidr('CIDR block of the remote network.'),
      remote_peer_ip: PeerIp,
      psk_version: Type.Integer({ minimum: 0, description: 'Version of the pre-shared key; a rotation increments it. The key is in the Secret vpn-psk-<id>.' }),
      remote_public_key: Type.Optional(NullableWireguardKey),
      ...connectionSecretProperty(),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      local_ip: Type.Union([Type.String(), Type.Null()], { description: 'Address of the gateway, allocated by the provider.' }),
      public_key: Type.Union([Type.String(), Type.Null()], { description: 'WireGuard public key of the gateway; null for IPsec.' }),
      active_since: NullableTimestamp('When the tunnel was first brought up.'),
      tunnel_status: TunnelStatus,
      bytes_sent: Counter('Bytes sent, as last observed.'),
      bytes_received: Counter('Bytes received, as last observed.'),
      last_handshake: NullableTimestamp('Last handshake, as last observed.'),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('vpn', STATES),
      ...reconcileRecordProperties(),
      name: ResourceName(),
      region: Region(),
      tunnel_type: Type.String({ enum: TUNNEL_TYPES, description: 'ipsec or wireguard.' }),
      local_network_cidr: Type.String({ description: 'CIDR block of the local network.' }),
      remote_network_cidr: Type.String({ description: 'CIDR block of the remote network.' }),
      remote_peer_ip: Type.String({ description: 'Public IPv4 address of the remote peer.' }),
      remote_public_key: Type.Union([Type.String(), Type.Null()], {
        description: "The remote peer's WireGuard public key; null when not given (the tunnel stays down) and for IPsec.",
      }),
      local_ip: Type.Union([Type.String(), Type.Null()], { description: 'Address of the gateway; null until it is active.' }),
      public_key: Type.Union([Type.String(), Type.Null()], { description: 'WireGuard public key of the gateway, for the peer; null for IPsec.' }),
      tunnel_status: TunnelStatus,
      bytes_sent: Counter('Bytes sent, as last observed; GET .../status for live figures.'),
      bytes_received: Counter('Bytes received, as last observed.'),
      last_handshake: NullableTimestamp('Last handshake, as last observed.'),
    }),
  },

  specFromCreate(body: Static<typeof VpnGatewayCreate>, { config }) {
    assertRegionAvailable(config, body.region);
    if (!TUNNEL_TYPES.includes(body.tunnel_type)) {
      throw domainError('invalid_tunnel_type', `tunnel_type must be ipsec or wireguard, not "${body.tunnel_type}".`, 'tunnel_type');
    }
    const local = body.local_network_cidr ?? config.vpcCidr;
    assertNetworks(local, body.remote_network_cidr);
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(body.remote_peer_ip) || !isPublicAddress(body.remote_peer_ip)) {
      throw domainError(
        'invalid_peer_ip',
        `remote_peer_ip must be a public IPv4 address (not private, loopback, link-local or multicast); "${body.remote_peer_ip}" is not.`,
        'remote_peer_ip',
      );
    }
    assertRemotePublicKey(body.tunnel_type, body.remote_public_key);
    return {
      name: body.name,
      region: body.region,
      tunnel_type: body.tunnel_type,
      local_network_cidr: local,
      remote_network_cidr: body.remote_network_cidr,
      remote_peer_ip: body.remote_peer_ip,
      psk_version: 1,
      ...(body.tunnel_type === 'wireguard' ? { remote_public_key: body.remote_public_key ?? null } : {}),
    };
  },

  applyUpdate(spec, patch: Omit<Static<typeof VpnGatewayUpdate>, 'pre_shared_key'>) {
    const next = { ...spec, ...patch };
    if (patch.remote_network_cidr !== undefined) assertNetworks(next.local_network_cidr, next.remote_network_cidr);
    assertRemotePublicKey(spec.tunnel_type, patch.remote_public_key);
    return next;
  },

  initialStatus: () => ({
    local_ip: null,
    public_key: null,
    active_since: null,
    tunnel_status: 'down',
    bytes_sent: 0,
    bytes_received: 0,
    last_handshake: null,
  }),

  nameOf: (spec) => spec.name,
  commands: VPN_GATEWAY_COMMANDS,
  connectionDetails: ({ spec, status }) =>
    status.local_ip
      ? presentDetails({
          public_ip: status.local_ip,
          tunnel_type: spec.tunnel_type,
          public_key: status.public_key,
          local_network_cidr: spec.local_network_cidr,
        })
      : null,

  toRecord({ meta, spec, status }) {
    const written = asStored(status);
    return {
      id: meta.id,
      name: spec.name,
      status: status.status,
      status_reason: status.status_reason ?? null,
      ...reconcileRecord(status),
      region: spec.region,
      tunnel_type: spec.tunnel_type,
      local_network_cidr: spec.local_network_cidr,
      remote_network_cidr: spec.remote_network_cidr,
      remote_peer_ip: spec.remote_peer_ip,
      remote_public_key: spec.remote_public_key ?? null,
      local_ip: status.local_ip ?? null,
      public_key: status.public_key ?? null,
      tunnel_status: written.tunnel_status ?? 'down',
      bytes_sent: written.bytes_sent ?? 0,
      bytes_received: written.bytes_received ?? 0,
      last_handshake: status.last_handshake ?? null,
      ...recordTimes(meta, status),
    };
  },
  presentation: {
    columns: [
      ...REGIONAL_COLUMNS,
      { key: 'tunnel_type', label: 'Tunnel', secondary: true },
      { key: 'remote_peer_ip', label: 'Remote peer', secondary: true },
      { key: 'tunnel_status', label: 'Tunnel status', secondary: true },
    ],
  },
};
