/** IPv4 CIDR blocks as the VPN rules need them: strict parsing and overlap. */
import { isIPv4 } from 'node:net';

export interface Ipv4Block {
  /** The network address as an unsigned 32-bit number. */
  network: number;
  prefix: number;
}

const toNumber = (address: string) => address.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);

/** Parses `10.8.0.0/16`; null unless it is an IPv4 network address with a prefix of 0-32. */
export function parseIpv4Block(text: string): Ipv4Block | null {
  const match = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(text);
  if (!match || !isIPv4(match[1])) return null;
  const prefix = Number(match[2]);
  if (prefix > 32) return null;
  const network = toNumber(match[1]);
  const size = 2 ** (32 - prefix);
  // Host bits set (10.8.0.1/16) name an address, not a network.
  if (network % size !== 0) return null;
  return { network, prefix };
}

export function blocksOverlap(a: Ipv4Block, b: Ipv4Block): boolean {
  const endOf = (x: Ipv4Block) => x.network + 2 ** (32 - x.prefix);
  return a.network < endOf(b) && b.network < endOf(a);
}
