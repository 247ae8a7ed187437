import { isPublicAddress } from '../../src/lib/ip';

/**
 * One sample address from every entry of the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries (as of 2025), whatever the entry's "globally reachable" column says: none of
 * them is a host a webhook receiver or a VPN peer lives on.
 */
const IPV4_SPECIAL: Array<[string, string]> = [
  ['0.0.0.0/8 "this network"', '0.1.2.3'],
  ['0.0.0.0/32 "this host on this network"', '0.0.0.0'],
  ['10.0.0.0/8 private-use', '10.1.2.3'],
  ['100.64.0.0/10 shared address space', '100.100.1.1'],
  ['127.0.0.0/8 loopback', '127.0.0.1'],
  ['169.254.0.0/16 link-local (cloud metadata)', '169.254.169.254'],
  ['172.16.0.0/12 private-use', '172.31.255.1'],
  ['192.0.0.0/24 IETF protocol assignments', '192.0.0.100'],
  ['192.0.0.0/29 IPv4 service continuity prefix', '192.0.0.2'],
  ['192.0.0.8/32 IPv4 dummy address', '192.0.0.8'],
  ['192.0.0.9/32 Port Control Protocol anycast', '192.0.0.9'],
  ['192.0.0.10/32 TURN anycast', '192.0.0.10'],
  ['192.0.0.170/32 NAT64/DNS64 discovery', '192.0.0.170'],
  ['192.0.0.171/32 NAT64/DNS64 discovery', '192.0.0.171'],
  ['192.0.2.0/24 documentation (TEST-NET-1)', '192.0.2.10'],
  ['192.31.196.0/24 AS112-v4', '192.31.196.1'],
  ['192.52.193.0/24 AMT', '192.52.193.1'],
  ['192.88.99.0/24 deprecated 6to4 relay anycast', '192.88.99.1'],
  ['192.88.99.2/32 6a44 relay anycast', '192.88.99.2'],
  ['192.168.0.0/16 private-use', '192.168.1.1'],
  ['192.175.48.0/24 AS112 direct delegation', '192.175.48.6'],
  ['198.18.0.0/15 benchmarking', '198.19.0.1'],
  ['198.51.100.0/24 documentation (TEST-NET-2)', '198.51.100.7'],
  ['203.0.113.0/24 documentation (TEST-NET-3)', '203.0.113.9'],
  ['240.0.0.0/4 reserved', '250.1.2.3'],
  ['255.255.255.255/32 limited broadcast', '255.255.255.255'],
];

const IPV6_SPECIAL: Array<[string, string]> = [
  ['::1/128 loopback', '::1'],
  ['::/128 unspecified', '::'],
  ['::ffff:0:0/96 IPv4-mapped', '::ffff:10.0.0.1'],
  ['64:ff9b::/96 IPv4-IPv6 translation', '64:ff9b::7f00:1'],
  ['64:ff9b:1::/48 IPv4-IPv6 translation, local use', '64:ff9b:1::808:808'],
  ['100::/64 discard-only', '100::1'],
  ['100:0:0:1::/64 dummy IPv6 prefix', '100:0:0:1::1'],
  ['2001::/23 IETF protocol assignments', '2001:1ff::1'],
  ['2001::/32 Teredo', '2001:0:4136:e378:8000:63bf:f5ff:fffe'],
  ['2001:1::1/128 Port Control Protocol anycast', '2001:1::1'],
  ['2001:1::2/128 TURN anycast', '2001:1::2'],
  ['2001:1::3/128 DNS-SD service registration anycast', '2001:1::3'],
  ['2001:2::/48 benchmarking', '2001:2::1'],
  ['2001:3::/32 AMT', '2001:3::1'],
  ['2001:4:112::/48 AS112-v6', '2001:4:112::1'],
  ['2001:10::/28 deprecated ORCHID', '2001:10::1'],
  ['2001:20::/28 ORCHIDv2', '2001:20::1'],
  ['2001:30::/28 drone remote ID entity tags', '2001:30::1'],
  ['2001:db8::/32 documentation', '2001:db8::1'],
  ['2002::/16 6to4', '2002:c0a8:101::1'],
  ['2620:4f:8000::/48 AS112 direct delegation', '2620:4f:8000::1'],
  ['3fff::/20 documentation', '3fff::1'],
  ['5f00::/16 segment routing SIDs', '5f00::1'],
  ['fc00::/7 unique-local', 'fd12:3456::1'],
  ['fe80::/10 link-local', 'fe80::1'],
];

/** IPv6 forms that carry an IPv4 address: judged by the IPv4 address they lead to. */
const EMBEDDED: Array<[string, string, boolean]> = [
  ['IPv4-mapped, loopback', '::ffff:127.0.0.1', false],
  ['IPv4-mapped, hex form, metadata service', '::ffff:a9fe:a9fe', false],
  ['IPv4-mapped, public', '::ffff:8.8.8.8', true],
  ['IPv4-compatible (deprecated, ::/96), private', '::10.0.0.1', false],
  ['IPv4-compatible, loopback', '::127.0.0.1', false],
  ['IPv4-compatible, public: still refused, the form is not routed', '::8.8.8.8', false],
  ['IPv4-translated (::ffff:0:0:0/96), private', '::ffff:0:a00:1', false],
  ['NAT64 well-known prefix, private', '64:ff9b::10.1.2.3', false],
  ['NAT64 well-known prefix, public', '64:ff9b::1.1.1.1', true],
  ['6to4 of a loopback address', '2002:7f00:1::1', false],
  ['6to4 of a private address', '2002:0a00:0001::1', false],
  ['6to4 of a public address', '2002:0808:0808::1', true],
  ['Teredo, public server, client 127.0.0.1 (obfuscated)', '2001:0:4136:e378:8000:63bf:80ff:fffe', false],
  ['Teredo, private server', '2001:0:0a00:0001:8000:63bf:f7f7:f7f7', false],
  ['Teredo, public server and client', '2001:0:4136:e378:8000:63bf:f7f7:f7f7', true],
  ['multicast IPv4', '224.0.0.251', false],
  ['multicast IPv6', 'ff02::fb', false],
  ['deprecated site-local IPv6', 'fec0::1', false],
  ['IPv6 outside 2000::/3 (reserved by the IETF)', '4000::1', false],
];

const PUBLIC: string[] = [
  '8.8.8.8',
  '1.1.1.1',
  '9.9.9.9',
  '140.82.112.3',
  '151.101.1.69',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001:81c::200e',
  '2620:fe::fe',
];

describe('isPublicAddress', () => {
  it.each(IPV4_SPECIAL)('refuses IPv4 %s (%s)', (_entry, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(IPV6_SPECIAL)('refuses IPv6 %s (%s)', (_entry, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(EMBEDDED)('judges %s (%s) by what it leads to', (_form, address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it.each(PUBLIC)('accepts the public address %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each(['', 'localhost', '1.2.3', '01.2.3.4', '256.1.1.1', '0x7f.0.0.1', '2130706433', '::ffff:1.2.3', 'fe80::1::2'])(
    'refuses %j, which is no address',
    (text) => {
      expect(isPublicAddress(text)).toBe(false);
    },
  );
});
