/**
 * Which addresses are public: used to refuse special-purpose targets (webhook SSRF guard,
 * VPN peers). Built on ipaddr.js's range classification, which follows the IANA IPv4 and
 * IPv6 Special-Purpose Address Registries, with what it lacks added here:
 * - every address ipaddr.js puts in a named range (anything but `unicast`) is refused,
 *   whatever the registry's "globally reachable" column says: anycast service addresses
 *   (PCP, TURN, AS112, AMT) and overlay identifiers (ORCHIDv2, DETs) are no host a
 *   receiver or a VPN peer runs on;
 * - IPv6 forms that carry an IPv4 address are judged by the IPv4 address they lead to
 *   (IPv4-mapped and -translated, the NAT64 well-known prefix, 6to4, both ends of
 *   Teredo), so `::ffff:127.0.0.1` or `2002:7f00:1::` cannot reach loopback;
 * - IPv4-compatible addresses (`::/96`, deprecated and unrouted), the dummy prefix
 *   `100:0:0:1::/64` (RFC 9780) and everything outside global unicast `2000::/3` (the
 *   IANA IPv6 address space calls the rest reserved) are refused.
 */
import ipaddr from 'ipaddr.js';
import { isIP } from 'node:net';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

const cidr6 = (text: string): [IPv6, number] => ipaddr.IPv6.parseCIDR(text);

/** Special-purpose IPv6 blocks ipaddr.js does not name. */
const IPV6_UNNAMED_SPECIAL = [
  cidr6('::/96'), // IPv4-compatible (RFC 4291 2.5.5.1, deprecated)
  cidr6('100:0:0:1::/64'), // dummy IPv6 prefix (RFC 9780)
];
const GLOBAL_UNICAST = cidr6('2000::/3');
const NAT64_WELL_KNOWN = cidr6('64:ff9b::/96');

const ipv4Of = (high: number, low: number): IPv4 => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/**
 * The IPv6 ranges (ipaddr.js's names) that carry IPv4 addresses, and where: the IPv4
 * addresses such an address leads to, or null when it names none of its own.
 */
const EMBEDDED_IPV4: Record<string, (p: number[], address: IPv6) => IPv4[] | null> = {
  ipv4Mapped: (p) => [ipv4Of(p[6], p[7])], // ::ffff:a.b.c.d (RFC 4291)
  rfc6145: (p) => [ipv4Of(p[6], p[7])], // ::ffff:0:a.b.c.d (RFC 6145)
  // 64:ff9b::a.b.c.d; the local-use 64:ff9b:1::/48 (RFC 8215) maps as its operator chooses.
  rfc6052: (p, address) => (address.match(NAT64_WELL_KNOWN) ? [ipv4Of(p[6], p[7])] : null),
  '6to4': (p) => [ipv4Of(p[1], p[2])], // 2002:AABB:CCDD::/48 (RFC 3056)
  // 2001:0:<server>:<flags>:<port>:<client>, the client's bits inverted (RFC 4380)
  teredo: (p) => [ipv4Of(p[2], p[3]), ipv4Of(~p[6] & 0xffff, ~p[7] & 0xffff)],
};

function isPublicIpv4(address: IPv4): boolean {
  return address.range() === 'unicast';
}

function isPublicIpv6(address: IPv6): boolean {
  const range = address.range();
  if (range in EMBEDDED_IPV4) return EMBEDDED_IPV4[range](address.parts, address)?.every(isPublicIpv4) ?? false;
  if (range !== 'unicast') return false;
  return address.match(GLOBAL_UNICAST) && !IPV6_UNNAMED_SPECIAL.some((block) => address.match(block));
}

/**
 * An IPv6 text with its trailing dotted quad written as two hex groups. ipaddr.js reads
 * any `::a.b.c.d` as IPv4-mapped (`::ffff:a.b.c.d`), which `::8.8.8.8` (IPv4-compatible) is not.
 */
function hexTail(text: string): string {
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (!dotted) return text;
  const [a, b, c, d] = dotted.slice(2).map(Number);
  return `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** True for a syntactically valid IPv4 (dotted decimal) or IPv6 address that is publicly routable. */
export function isPublicAddress(text: string): boolean {
  // node:net is the strict syntax gate: ipaddr.js also takes `127.1`, `0x7f.0.0.1` and `2130706433`.
  const family = isIP(text);
  if (family === 0) return false;
  return family === 4 ? isPublicIpv4(ipaddr.IPv4.parse(text)) : isPublicIpv6(ipaddr.IPv6.parse(hexTail(text)));
}
