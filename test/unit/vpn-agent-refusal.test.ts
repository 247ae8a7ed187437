/**
 * What the Kubernetes VPN driver says of a configuration the agent refused (pure): the
 * agent's error, one bounded line, with the keys the driver knows blanked out even if a
 * tool had quoted one back.
 */
import { agentRefusal } from '../../src/drivers/kubernetes/vpn-gateway-tunnel';
import { generateWireguardKey } from '../../src/drivers/kubernetes/vpn-gateway-manifests';
import { parseAgentConfig } from '../../src/vpn-agent/config';

const PSK = 'psk-that-must-stay-in-the-secret';

describe("the driver's reading of the agent's error", () => {
  it('is nothing while the agent reports no error (the new file may not be there yet)', () => {
    expect(agentRefusal({ error: null }, [PSK])).toBeNull();
  });

  it("repeats the agent's error after saying the agent did not apply the configuration", () => {
    expect(agentRefusal({ error: 'configuration is not valid JSON' }, [PSK])).toBe('the VPN agent did not apply it: configuration is not valid JSON');
  });

  it('never carries a pre-shared key or a private key, even one a tool quoted back', () => {
    const privateKey = generateWireguardKey();
    const said = agentRefusal(
      { error: `swanctl --load-all failed: bad secret "${PSK}" | wg syncconf failed: Key is not the correct length or format: \`${privateKey}'` },
      [PSK, privateKey, null],
    );
    expect(said).not.toContain(PSK);
    expect(said).not.toContain(privateKey);
    expect(said).toContain('[redacted]');
    const inHex = agentRefusal({ error: `swanctl failed: secret 0x${Buffer.from(PSK).toString('hex')} refused` }, [PSK])!;
    expect(inHex).not.toContain(Buffer.from(PSK).toString('hex'));
  });

  it('is one line of bounded length', () => {
    const said = agentRefusal({ error: `first line\nsecond line\t${'x'.repeat(5_000)}` }, [])!;
    expect(said).not.toMatch(/[\n\t]/);
    expect(said.length).toBeLessThanOrEqual(350);
    expect(said.startsWith('the VPN agent did not apply it: first line second line')).toBe(true);
  });

  it("carries the agent's own refusal of a configuration with a misplaced key without the key", () => {
    const reading = parseAgentConfig(
      JSON.stringify({
        version: 'v1',
        tunnel_type: 'ipsec',
        local_ip: '198.51.100.7',
        local_network_cidr: '10.10.0.0/16',
        remote_network_cidr: '192.168.10.0/24',
        remote_peer_ip: '8.8.4.4',
        psk: PSK,
      }),
    );
    expect(reading.ok).toBe(false);
    const said = agentRefusal({ error: reading.ok ? null : reading.error }, [])!;
    expect(said).toMatch(/^the VPN agent did not apply it: configuration is invalid: /);
    expect(said).not.toContain(PSK);
  });
});
