/**
 * Cookies, only where they are used. The sign-in routes (/auth) and the session routes set
 * them, in contexts of their own with @fastify/cookie; everywhere else the authentication
 * hook reads the one session cookie itself. At the root, the plugin's two hooks (a parse
 * of Cookie on every request, a look for cookies to set on every answer) ran on every
 * route, API-key calls included, which never carry a cookie.
 */
import cookie from '@fastify/cookie';
import type { ApiApp } from './api-app';

/** Registers routes in a context of their own that reads and sets cookies. */
export function withCookies(app: ApiApp, register: (scoped: ApiApp) => void): PromiseLike<unknown> {
  return app.register(async (scoped) => {
    await scoped.register(cookie);
    register(scoped);
  });
}

/**
 * The value of the cookie `name` in a Cookie header, read as @fastify/cookie reads it (the
 * `cookie` package): pairs split at `;`, name and value trimmed of blanks, the first pair of
 * a name wins, a value with `%` percent-decoded.
 */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq !== -1 && trimBlanks(pair.slice(0, eq)) === name) return decoded(trimBlanks(pair.slice(eq + 1)));
  }
  return undefined;
}

/** Spaces and tabs off both ends: the blanks the cookie package trims, not every whitespace. */
const trimBlanks = (text: string) => text.replace(/^[ \t]+|[ \t]+$/g, '');

function decoded(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
