/**
 * The objects of a VPN gateway on Kubernetes (pure): the agent's configuration and its
 * version, the WireGuard key, the Deployment and the Service.
 */
import { generateKeyPairSync } from 'node:crypto';
import type { Managed } from '../../src/drivers/types';
import type { VpnGatewayDesired } from '../../src/drivers/vpn-gateway';
import {
  agentConfig,
  CONFIG_KEY,
  DEFAULT_VPN_AGENT_SETTINGS,
  generateWireguardKey,
  missingPreSharedKey,
  PRIVATE_KEY_KEY,
  vpnGatewayObjects,
  wireguardPublicKey,
} from '../../src/drivers/kubernetes/vpn-gateway-manifests';
import { parseAgentConfig } from '../../src/vpn-agent/config';
import { findIn } from '../helpers/secret-scan';

const PSK = 'psk-that-must-stay-in-the-secret';
const peerKey = () => generateKeyPairSync('x25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');

function gateway(overrides: Partial<VpnGatewayDesired> = {}): Managed<VpnGatewayDesired> {
  const desired: VpnGatewayDesired = {
    name: 'office',
    region: 'fra1',
    tunnel_type: 'ipsec',
    local_network_cidr: '10.10.0.0/16',
    remote_network_cidr: '192.168.10.0/24',
    remote_peer_ip: '8.8.4.4',
    psk_version: 1,
    remote_public_key: null,
    pre_shared_key: PSK,
    ...overrides,
  };
  return { id: 'vpn_0123456789abcdef', team: 'team_x', generation: 1, desired, external: null, owner: null };
}
const placement = { namespace: 'cp-team-x', name: 'vpn-0123456789abcdef' };

describe('VPN gateway manifests', () => {
  it("derives a WireGuard public key as `wg pubkey` does (RFC 7748's test vector)", () => {
    const alicePrivate = Buffer.from('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a', 'hex').toString('base64');
    const alicePublic = Buffer.from('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a', 'hex').toString('base64');
    expect(wireguardPublicKey(alicePrivate)).toBe(alicePublic);
    const generated = generateWireguardKey();
    expect(Buffer.from(generated, 'base64')).toHaveLength(32);
    expect(generateWireguardKey()).not.toBe(generated);
  });

  it('writes no configuration and no Deployment until the Service has its address', () => {
    const objects = vpnGatewayObjects(gateway(), placement, DEFAULT_VPN_AGENT_SETTINGS, null, null);
    expect(objects.config).toBeNull();
    expect(objects.deployment).toBeNull();
    expect(objects.secret.data).toEqual({});
    expect(objects.service.spec).toMatchObject({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' });
    expect(objects.service.spec?.ports).toEqual([
      { name: 'ike', port: 500, targetPort: 500, protocol: 'UDP' },
      { name: 'ike-nat-t', port: 4500, targetPort: 4500, protocol: 'UDP' },
    ]);
  });

  it('gives the agent an IPsec configuration with the key, versioned by psk_version and never by the key itself', () => {
    const objects = vpnGatewayObjects(gateway(), placement, DEFAULT_VPN_AGENT_SETTINGS, '198.51.100.7', null);
    const config = JSON.parse(Buffer.from(objects.secret.data![CONFIG_KEY], 'base64').toString('utf8'));
    expect(config).toEqual({
      version: expect.stringMatching(/^[0-9a-f]{16}$/),
      tunnel_type: 'ipsec',
      local_ip: '198.51.100.7',
      local_network_cidr: '10.10.0.0/16',
      remote_network_cidr: '192.168.10.0/24',
      remote_peer_ip: '8.8.4.4',
      ipsec: { pre_shared_key: PSK },
    });
    // Another key under the same version is the same configuration version: the version says nothing of the key.
    expect(agentConfig(gateway({ pre_shared_key: 'another-key-entirely' }).desired, '198.51.100.7', null).version).toBe(config.version);
    expect(agentConfig(gateway({ psk_version: 2 }).desired, '198.51.100.7', null).version).not.toBe(config.version);
    expect(agentConfig(gateway({ remote_network_cidr: '172.20.0.0/16' }).desired, '198.51.100.7', null).version).not.toBe(config.version);
    expect(
      findIn('the Deployment and Service', Buffer.from(JSON.stringify([objects.deployment, objects.service])), [{ label: 'pre-shared key', value: PSK }]),
    ).toEqual([]);
  });

  it('runs the agent with NET_ADMIN, /dev/net/tun, forwarding and its Secret, and readiness on /healthz', () => {
    const objects = vpnGatewayObjects(
      gateway(),
      placement,
      { ...DEFAULT_VPN_AGENT_SETTINGS, image: 'registry.example/cloudplane:1.2.3' },
      '198.51.100.7',
      null,
    );
    const pod = objects.deployment!.spec!.template.spec!;
    const container = pod.containers[0];
    expect(objects.deployment!.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
    expect(container).toMatchObject({
      image: 'registry.example/cloudplane:1.2.3',
      command: ['node', 'dist/src/main.js', 'vpn-agent'],
      securityContext: { runAsUser: 0, capabilities: { add: ['NET_ADMIN'] } },
      readinessProbe: { httpGet: { path: '/healthz', port: 'status' } },
    });
    expect(container.ports).toEqual(
      expect.arrayContaining([
        { name: 'status', containerPort: 9180, protocol: 'TCP' },
        { name: 'ike', containerPort: 500, protocol: 'UDP' },
      ]),
    );
    expect(container.volumeMounts).toEqual([
      { name: 'config', mountPath: '/etc/cloudplane/vpn', readOnly: true },
      { name: 'tun', mountPath: '/dev/net/tun' },
    ]);
    expect(pod.volumes).toEqual([
      { name: 'config', secret: { secretName: 'vpn-0123456789abcdef-agent', items: [{ key: CONFIG_KEY, path: CONFIG_KEY }] } },
      { name: 'tun', hostPath: { path: '/dev/net/tun', type: 'CharDevice' } },
    ]);
    expect(pod.securityContext?.sysctls).toEqual([{ name: 'net.ipv4.ip_forward', value: '1' }]);
  });

  it("gives a WireGuard agent its private key and the peer's, on UDP 51820, versioned by the public half", () => {
    const privateKey = generateWireguardKey();
    const peer = peerKey();
    const objects = vpnGatewayObjects(
      gateway({ tunnel_type: 'wireguard', pre_shared_key: null, remote_public_key: peer }),
      placement,
      DEFAULT_VPN_AGENT_SETTINGS,
      '198.51.100.8',
      privateKey,
    );
    expect(Buffer.from(objects.secret.data![PRIVATE_KEY_KEY], 'base64').toString()).toBe(privateKey);
    expect(objects.config).toMatchObject({ tunnel_type: 'wireguard', wireguard: { private_key: privateKey, listen_port: 51820, remote_public_key: peer } });
    expect(objects.config!.ipsec).toBeUndefined();
    expect(objects.service.spec?.ports).toEqual([{ name: 'wireguard', port: 51820, targetPort: 51820, protocol: 'UDP' }]);
    const without = agentConfig(gateway({ tunnel_type: 'wireguard', pre_shared_key: null }).desired, '198.51.100.8', privateKey);
    expect(without.wireguard?.remote_public_key).toBeNull();
    expect(without.version).not.toBe(objects.config!.version);
  });

  it('writes no configuration and no Deployment for an IPsec gateway whose pre-shared key is missing, never an empty key', () => {
    const objects = vpnGatewayObjects(gateway({ pre_shared_key: null }), placement, DEFAULT_VPN_AGENT_SETTINGS, '198.51.100.7', null);
    expect(objects.config).toBeNull();
    expect(objects.deployment).toBeNull();
    expect(objects.secret.data).toEqual({});
    expect(() => agentConfig(gateway({ pre_shared_key: null }).desired, '198.51.100.7', null)).toThrow('an IPsec gateway needs its pre-shared key');
    expect(missingPreSharedKey(gateway({ pre_shared_key: '' }).desired)).toBe(true);
    expect(missingPreSharedKey(gateway({ tunnel_type: 'wireguard', pre_shared_key: null }).desired)).toBe(false);
  });

  it('writes configurations the agent accepts (src/vpn-agent/config.ts is the contract)', () => {
    const ipsec = vpnGatewayObjects(gateway(), placement, DEFAULT_VPN_AGENT_SETTINGS, '198.51.100.7', null);
    const wireguard = vpnGatewayObjects(
      gateway({ tunnel_type: 'wireguard', pre_shared_key: null, remote_public_key: peerKey() }),
      placement,
      DEFAULT_VPN_AGENT_SETTINGS,
      '198.51.100.8',
      generateWireguardKey(),
    );
    const bare = vpnGatewayObjects(
      gateway({ tunnel_type: 'wireguard', pre_shared_key: null }),
      placement,
      DEFAULT_VPN_AGENT_SETTINGS,
      '198.51.100.9',
      generateWireguardKey(),
    );
    for (const { secret } of [ipsec, wireguard, bare]) {
      const reading = parseAgentConfig(Buffer.from(secret.data![CONFIG_KEY], 'base64').toString('utf8'));
      expect(reading).toMatchObject({ ok: true });
    }
  });
});
