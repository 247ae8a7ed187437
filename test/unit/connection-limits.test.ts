/** What the per-address connection cap counts as one client (src/api/connection-limits.ts). */
import { clientOf } from '../../src/api/connection-limits';

describe('clientOf', () => {
  it('counts an IPv4 address as itself, also when the listener sees it IPv4-mapped', () => {
    expect(clientOf('127.0.0.2')).toBe('127.0.0.2');
    expect(clientOf('::ffff:127.0.0.2')).toBe('127.0.0.2');
  });

  it("counts every address of an IPv6 /64 as one client: a host's block costs it nothing more than one address", () => {
    expect(clientOf('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientOf('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe(clientOf('2001:db8:1:2::1'));
    expect(clientOf('2001:db8:1:3::1')).not.toBe(clientOf('2001:db8:1:2::1'));
  });
});
