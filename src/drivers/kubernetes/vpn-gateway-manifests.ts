/**
 * The three objects a VPN gateway is made of in its team's namespace, built from its
 * desired state (pure):
 * - a Secret `<name>-agent` holding the agent's configuration (config.json, the
 *   VpnAgentConfig of src/vpn-agent/config.ts) and, for WireGuard, the gateway's private
 *   key, generated once by the driver and kept only here;
 * - a Deployment `<name>` of one Pod running Cloudplane's own image as `vpn-agent`, with
 *   root, NET_ADMIN and /dev/net/tun for the tunnel device, IPv4 forwarding on (the remote
 *   network reaches the cluster through it), the Secret mounted read-only, and readiness
 *   on the agent's /healthz;
 * - a Service `<name>` of type LoadBalancer for the tunnel's UDP ports, keeping the peer's
 *   source address (externalTrafficPolicy Local: WireGuard and IKE match the peer by it).
 *
 * The configuration carries a version the agent reports back once it has applied it. The
 * version is a hash of the configuration with its secrets left out (the pre-shared key by
 * psk_version, the private key by its public key), so it can be recorded and shown; a
 * hash of a customer's key could be guessed at offline.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { V1Deployment, V1ResourceRequirements, V1Secret, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { canonicalJson } from '../../lib/canonical-json';
import { ID_LABEL } from '../../store/kubernetes/names';
import type { VpnGatewayDesired } from '../vpn-gateway';
import type { VpnAgentConfig } from '../../vpn-agent/config';
import type { Managed } from '../types';
import { managedLabels, ownerReferencesOf, Placement } from './objects';
import { known } from '../../lib/known';

export const CONTAINER_NAME = 'vpn-agent';
export const CONFIG_KEY = 'config.json';
export const PRIVATE_KEY_KEY = 'wireguard-private-key';
export const CONFIG_DIR = '/etc/cloudplane/vpn';
/** Where the agent answers /status and /healthz (its default --listen). */
export const AGENT_STATUS_PORT = 9180;
export const WIREGUARD_PORT = 51820;
export const IKE_PORT = 500;
export const IKE_NAT_T_PORT = 4500;
const TUN_DEVICE = '/dev/net/tun';
const COMPONENT_LABEL = 'app.kubernetes.io/component';
const COMPONENT = 'vpn-gateway';

export interface VpnAgentDeploymentSettings {
  /** Cloudplane's own image: the agent is its `vpn-agent` subcommand. */
  image: string;
  resources: V1ResourceRequirements;
  /** A rollout that makes no progress for this long counts as failed (the Deployment's own deadline). */
  progressDeadlineSeconds: number;
}

export const DEFAULT_VPN_AGENT_SETTINGS: VpnAgentDeploymentSettings = {
  image: 'ghcr.io/cloudplane/cloudplane:latest',
  resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
  progressDeadlineSeconds: 600,
};

type Named = { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };

export interface VpnGatewayObjects {
  /** Null until the Service has its address: the configuration needs it as local_ip. */
  config: VpnAgentConfig | null;
  secret: V1Secret & Named;
  /** Null until there is a configuration to run: the Pod would find no config.json. */
  deployment: (V1Deployment & Named) | null;
  service: V1Service & Named;
}

/** What the Deployment selects: its own Pod, by id and role. */
export function podSelector(id: string): Record<string, string> {
  return { [ID_LABEL]: id, [COMPONENT_LABEL]: COMPONENT };
}

export const agentSecretName = (placement: Placement) => `${placement.name}-agent`;

/** A new WireGuard private key: X25519, raw 32 bytes in base64 as `wg genkey` prints it. */
export function generateWireguardKey(): string {
  const { privateKey } = generateKeyPairSync('x25519');
  return rawKey(known(privateKey.export({ format: 'jwk' }).d, 'the private part (d) of an X25519 JWK'));
}

/** PKCS#8 DER of an X25519 private key up to its 32 raw bytes (RFC 8410). */
const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

/** The public key of a WireGuard private key, as `wg pubkey` prints it. */
export function wireguardPublicKey(privateKeyBase64: string): string {
  const der = Buffer.concat([X25519_PKCS8_PREFIX, Buffer.from(privateKeyBase64, 'base64')]);
  const publicKey = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }));
  return rawKey(known(publicKey.export({ format: 'jwk' }).x, 'the public part (x) of an X25519 JWK'));
}

const rawKey = (base64url: string) => Buffer.from(base64url, 'base64url').toString('base64');

/** An IPsec gateway whose pre-shared key the store no longer holds: it cannot be configured. */
export function missingPreSharedKey(desired: VpnGatewayDesired): boolean {
  return desired.tunnel_type === 'ipsec' && !desired.pre_shared_key;
}

/** The agent's configuration for `desired` at `localIp`, with its version. */
export function agentConfig(desired: VpnGatewayDesired, localIp: string, privateKey: string | null): VpnAgentConfig {
  const base = {
    tunnel_type: desired.tunnel_type === 'wireguard' ? ('wireguard' as const) : ('ipsec' as const),
    local_ip: localIp,
    local_network_cidr: desired.local_network_cidr,
    remote_network_cidr: desired.remote_network_cidr,
    remote_peer_ip: desired.remote_peer_ip,
  };
  if (base.tunnel_type === 'wireguard') {
    if (!privateKey) throw new Error('a WireGuard gateway needs its private key');
    const wireguard = { listen_port: WIREGUARD_PORT, remote_public_key: desired.remote_public_key };
    const version = versionOf({ ...base, wireguard: { ...wireguard, public_key: wireguardPublicKey(privateKey) } });
    return { version, ...base, wireguard: { private_key: privateKey, ...wireguard } };
  }
  if (!desired.pre_shared_key) throw new Error('an IPsec gateway needs its pre-shared key');
  const version = versionOf({ ...base, psk_version: desired.psk_version });
  return { version, ...base, ipsec: { pre_shared_key: desired.pre_shared_key } };
}

function versionOf(withoutSecrets: unknown): string {
  return createHash('sha256').update(canonicalJson(withoutSecrets)).digest('hex').slice(0, 16);
}

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** The tunnel's UDP ports. */
function tunnelPorts(desired: VpnGatewayDesired): V1ServicePort[] {
  return desired.tunnel_type === 'wireguard'
    ? [{ name: 'wireguard', port: WIREGUARD_PORT, targetPort: WIREGUARD_PORT, protocol: 'UDP' }]
    : [
        { name: 'ike', port: IKE_PORT, targetPort: IKE_PORT, protocol: 'UDP' },
        { name: 'ike-nat-t', port: IKE_NAT_T_PORT, targetPort: IKE_NAT_T_PORT, protocol: 'UDP' },
      ];
}

/**
 * The objects for `resource`. `localIp` is the Service's address once it has one;
 * `privateKey` the WireGuard key kept in the Secret (null for IPsec).
 */
export function vpnGatewayObjects(
  resource: Managed<VpnGatewayDesired>,
  placement: Placement,
  settings: VpnAgentDeploymentSettings,
  localIp: string | null,
  privateKey: string | null,
): VpnGatewayObjects {
  const { desired } = resource;
  const { namespace, name } = placement;
  const labels = { ...managedLabels(resource.id), [COMPONENT_LABEL]: COMPONENT, 'app.kubernetes.io/name': 'cloudplane-vpn-agent' };
  const metadata = { name, namespace, labels, ownerReferences: ownerReferencesOf(resource.owner) };
  const secretName = agentSecretName(placement);
  // No configuration without its key, rather than one with an empty key.
  const config = localIp && !missingPreSharedKey(desired) ? agentConfig(desired, localIp, privateKey) : null;
  const data: Record<string, string> = {};
  // The key as `wg genkey` prints it, so `kubectl get secret` shows what wg would read.
  if (privateKey) data[PRIVATE_KEY_KEY] = base64(privateKey);
  if (config) data[CONFIG_KEY] = base64(JSON.stringify(config, null, 2));
  const ports = tunnelPorts(desired);
  const health = { httpGet: { path: '/healthz', port: 'status' } };

  return {
    config,
    secret: { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { ...metadata, name: secretName }, data },
    deployment: config && {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata,
      spec: {
        replicas: 1,
        revisionHistoryLimit: 3,
        progressDeadlineSeconds: settings.progressDeadlineSeconds,
        selector: { matchLabels: podSelector(resource.id) },
        // Never two agents with the same key and address: the old Pod goes before the new one starts.
        strategy: { type: 'Recreate' },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            // The remote network reaches the cluster through this Pod (an unsafe sysctl: the kubelet must allow it).
            securityContext: { sysctls: [{ name: 'net.ipv4.ip_forward', value: '1' }] },
            containers: [
              {
                name: CONTAINER_NAME,
                image: settings.image,
                command: ['node', 'dist/src/main.js', 'vpn-agent'],
                args: ['--config', `${CONFIG_DIR}/${CONFIG_KEY}`, '--listen', `0.0.0.0:${AGENT_STATUS_PORT}`],
                ports: [
                  ...ports.map((p) => ({ name: p.name, containerPort: p.port, protocol: 'UDP' })),
                  { name: 'status', containerPort: AGENT_STATUS_PORT, protocol: 'TCP' },
                ],
                readinessProbe: { ...health, periodSeconds: 5, failureThreshold: 2 },
                livenessProbe: { ...health, periodSeconds: 10, failureThreshold: 3 },
                resources: settings.resources,
                // Root in the container (the image's user is 1000): the tools make interfaces and routes, charon writes /var/run.
                securityContext: { runAsUser: 0, runAsGroup: 0, runAsNonRoot: false, capabilities: { add: ['NET_ADMIN'] } },
                volumeMounts: [
                  { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
                  { name: 'tun', mountPath: TUN_DEVICE },
                ],
              },
            ],
            volumes: [
              { name: 'config', secret: { secretName, items: [{ key: CONFIG_KEY, path: CONFIG_KEY }] } },
              { name: 'tun', hostPath: { path: TUN_DEVICE, type: 'CharDevice' } },
            ],
          },
        },
      },
    },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata,
      spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Local', selector: podSelector(resource.id), ports },
    },
  };
}
