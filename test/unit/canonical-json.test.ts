import { canonicalJson, sameJson } from '../../src/lib/canonical-json';

describe('canonical JSON', () => {
  it('sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: [{ z: null, y: 'x' }, 2] })).toBe('{"a":[{"y":"x","z":null},2],"b":1}');
  });

  it('sees an object with the API server key order as the same one', () => {
    const written = [{ server_id: 'svr_1', port: 80, status: 'healthy', drain_until: null }];
    const readBack = [{ drain_until: null, port: 80, server_id: 'svr_1', status: 'healthy' }];
    expect(JSON.stringify(written)).not.toBe(JSON.stringify(readBack));
    expect(sameJson(written, readBack)).toBe(true);
  });

  it('still tells real differences apart', () => {
    expect(sameJson({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameJson({ a: null }, {})).toBe(false);
    expect(sameJson({ a: { b: 1 } }, { a: { b: '1' } })).toBe(false);
  });
});
