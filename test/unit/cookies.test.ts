/**
 * The authentication hook reads the session cookie itself (api/cookies.ts): it must read a
 * Cookie header as @fastify/cookie does, which parses with the `cookie` package.
 */
import fc from 'fast-check';
import { cookieOf } from '../../src/api/cookies';

// The reference: what @fastify/cookie parses a Cookie header with (ESM; Jest compiles it).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parseCookie } = require('cookie') as { parseCookie(header: string): Record<string, string | undefined> };

describe('cookieOf', () => {
  it('reads a header as the cookie package does: pairs at `;`, blanks trimmed, the first of a name, percent-decoded', () => {
    const piece = fc.constantFrom(
      'cloudplane_session',
      'other',
      ' cloudplane_session',
      'cloudplane_session ',
      '=',
      ';',
      ' ',
      'cps_abc-_09',
      '%41',
      '%zz',
      '"q"',
      'a=b',
      '\t',
      '\u00a0',
      '\v',
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 12 }).map((parts) => parts.join('')),
        (header) => {
          expect(cookieOf(header, 'cloudplane_session')).toBe(parseCookie(header).cloudplane_session);
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it('finds the session among the cookies a browser sends, and nothing without a header', () => {
    expect(cookieOf('theme=dark; cloudplane_session=cps_token1; cloudplane_session=cps_token2', 'cloudplane_session')).toBe('cps_token1');
    expect(cookieOf('theme=dark', 'cloudplane_session')).toBeUndefined();
    expect(cookieOf(undefined, 'cloudplane_session')).toBeUndefined();
  });
});
