/**
 * The VPN agent's pure parts: the configuration file it accepts (the contract with the
 * Kubernetes VPN driver), the strongSwan files it writes, and its reading of swanctl's
 * --raw output (captured from strongSwan 5.9.8's swanctl on a libipsec tunnel).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../src/lib/processes';
import { parseAgentConfig, VpnAgentConfig } from '../../src/vpn-agent/config';
import { parseListSas, readingOf, renderSwanctlConf } from '../../src/vpn-agent/ipsec';
import { renderWgConfig } from '../../src/vpn-agent/wireguard';

const PRIVATE_KEY = 'yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=';
const PUBLIC_KEY = 'xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=';
const PSK = 'a "quoted" secret\nwith a newline';

const wireguard: VpnAgentConfig = {
  version: '3',
  tunnel_type: 'wireguard',
  local_ip: '11.200.0.1',
  local_network_cidr: '10.20.0.0/24',
  remote_network_cidr: '10.30.0.0/24',
  remote_peer_ip: '11.200.0.2',
  wireguard: { private_key: PRIVATE_KEY, listen_port: 51820, remote_public_key: PUBLIC_KEY },
};
const ipsec: VpnAgentConfig = { ...wireguard, tunnel_type: 'ipsec', wireguard: undefined, ipsec: { pre_shared_key: PSK } };

const parse = (value: unknown) => parseAgentConfig(JSON.stringify(value));

describe('VPN agent configuration', () => {
  it('accepts a WireGuard and an IPsec configuration, with a hash of the content', () => {
    const first = parse(wireguard);
    expect(first).toMatchObject({ ok: true, config: wireguard });
    expect(parse(ipsec)).toMatchObject({ ok: true, config: { tunnel_type: 'ipsec' } });
    expect(parse({ ...wireguard, wireguard: { ...wireguard.wireguard, remote_public_key: null } }).ok).toBe(true);
    expect(parse({ ...wireguard, version: '4' }).hash).not.toBe(first.hash);
    expect(parse(wireguard).hash).toBe(first.hash);
  });

  it('names each field at fault and never repeats a value', () => {
    const cases: Array<[unknown, string]> = [
      [{ ...wireguard, wireguard: { ...wireguard.wireguard, private_key: 'not-a-key' } }, '/wireguard/private_key'],
      [{ ...wireguard, local_network_cidr: '10.30.0.0/16' }, 'overlap'],
      [{ ...wireguard, remote_network_cidr: '10.30.0.1/24' }, '/remote_network_cidr'],
      [{ ...wireguard, remote_peer_ip: 'peer.example.com' }, '/remote_peer_ip'],
      [{ ...ipsec, ipsec: undefined }, '/ipsec is required'],
      [{ ...ipsec, tunnel_type: 'gre' }, '/tunnel_type'],
      [{ ...ipsec, extra: PSK }, 'additional properties'],
    ];
    for (const [config, expected] of cases) {
      const reading = parse(config);
      expect(reading.ok).toBe(false);
      if (reading.ok) continue;
      expect(reading.error).toContain(expected);
      expect(reading.error).not.toContain(PSK);
      expect(reading.error).not.toContain(PRIVATE_KEY);
    }
    expect(parseAgentConfig('{"version": ')).toMatchObject({ ok: false, error: 'configuration is not valid JSON' });
  });

  it('writes the PSK into swanctl.conf as hex, so no byte of it can break the file', () => {
    const conf = renderSwanctlConf({ ...ipsec, tunnel_type: 'ipsec', ipsec: { pre_shared_key: PSK } });
    expect(conf).toContain(`secret = 0x${Buffer.from(PSK).toString('hex')}`);
    expect(conf).not.toContain('quoted');
    expect(conf).toMatch(/local_ts = 10\.20\.0\.0\/24\s+remote_ts = 10\.30\.0\.0\/24/);
    expect(conf).toContain('id = 11.200.0.1');
    expect(conf).toContain('start_action = trap|start');
  });

  it('gives WireGuard a peer only once the peer key is known', () => {
    expect(renderWgConfig({ ...wireguard, tunnel_type: 'wireguard', wireguard: wireguard.wireguard! })).toContain(
      `[Peer]\nPublicKey = ${PUBLIC_KEY}\nAllowedIPs = 10.30.0.0/24`,
    );
    expect(renderWgConfig({ ...wireguard, tunnel_type: 'wireguard', wireguard: { ...wireguard.wireguard!, remote_public_key: null } })).not.toContain('[Peer]');
  });
});

describe("reading swanctl's --list-sas --raw", () => {
  const established =
    'list-sa event {cloudplane {uniqueid=1 version=2 state=ESTABLISHED local-host=11.200.0.1 local-port=4500 local-id=11.200.0.1 remote-host=11.200.0.2 remote-port=4500 remote-id=11.200.0.2 initiator-spi=2178e9cbe88dd3ad responder-spi=222ea9033aa56ca1 nat-remote=yes nat-any=yes encr-alg=AES_CBC encr-keysize=128 integ-alg=HMAC_SHA2_256_128 prf-alg=PRF_HMAC_SHA2_256 dh-group=CURVE_25519 established=4 rekey-time=13231 child-sas {cloudplane-2 {name=cloudplane uniqueid=2 reqid=1 state=INSTALLED mode=TUNNEL protocol=ESP encap=yes spi-in=2de8e4bc spi-out=148c06e0 encr-alg=AES_GCM_16 encr-keysize=128 bytes-in=168 packets-in=2 use-in=0 bytes-out=336 packets-out=4 use-out=0 rekey-time=3325 life-time=3956 install-time=2 local-ts=[10.20.0.0/24] remote-ts=[10.30.0.0/24]}}}}\nlist-sas reply {}\n';

  it('is up with the CHILD SA counters and the newest negotiation as the handshake', () => {
    const sas = parseListSas(established);
    expect(sas).toHaveLength(1);
    expect(sas[0]).toMatchObject({ state: 'ESTABLISHED', 'child-sas': { 'cloudplane-2': { 'local-ts': ['10.20.0.0/24'] } } });
    const now = Date.parse('2026-11-24T02:00:10Z');
    expect(readingOf(sas, now)).toEqual({ up: true, bytesSent: 336, bytesReceived: 168, lastHandshake: new Date('2026-11-24T02:00:08Z') });
  });

  it('is down while the IKE SA is still connecting, and with no SA at all', () => {
    const connecting =
      'list-sa event {cloudplane {uniqueid=3 version=2 state=CONNECTING local-host=11.200.0.1 remote-host=11.200.0.2 child-sas {}}}\nlist-sas reply {}\n';
    expect(readingOf(parseListSas(connecting))).toEqual({ up: false, bytesSent: 0, bytesReceived: 0, lastHandshake: null });
    expect(readingOf(parseListSas('list-sas reply {}\n'))).toEqual({ up: false, bytesSent: 0, bytesReceived: 0, lastHandshake: null });
  });
});

describe('tool errors', () => {
  it('blank out the secrets a tool quotes back (wg prints a key it refuses)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-wg-error-'));
    const file = path.join(dir, 'wg.conf');
    const notAKey = 'SECRET-looking-but-malformed-key';
    fs.writeFileSync(file, `[Interface]\nPrivateKey = ${notAKey}\n`, { mode: 0o600 });
    try {
      // Debian's wg, as the agent runs it (scripts/ensure-vpn-tools.sh installs it).
      await expect(run('wg', ['syncconf', 'cpnone0', file])).rejects.toThrow(notAKey);
      const refused = run('wg', ['syncconf', 'cpnone0', file], { redact: [notAKey] });
      await expect(refused).rejects.toThrow('wg syncconf failed: Key is not the correct length or format');
      await expect(refused).rejects.not.toThrow(notAKey);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
