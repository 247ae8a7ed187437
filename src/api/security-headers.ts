/**
 * The security headers of the pages a browser shows (the console, the docs page): no
 * content-type sniffing, never framed, no referrer to another origin, a window of its own.
 * Each page adds its own Content-Security-Policy (the console's; Swagger UI's, staticCSP).
 */
import type { FastifyInstance } from 'fastify';

export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

/** Sends `headers` on every answer of `scope` (its own context: the hook goes no further). */
export function sendSecurityHeaders(scope: FastifyInstance, headers: Readonly<Record<string, string>> = PAGE_SECURITY_HEADERS): void {
  scope.addHook('onSend', (_request, reply, payload, done) => {
    reply.headers(headers);
    done(null, payload);
  });
}
