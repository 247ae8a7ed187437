/**
 * The web console (console/, built by `make build` into dist/console): public static files
 * at `/`, in the root context beside /healthz and the docs page. Only the files the build
 * made are routes (`wildcard: false`), so every other path still reaches the API's
 * not-found handler, and /api/v1 keeps answering JSON. The console holds no data: every
 * call it makes goes to /api/v1 with the session cookie.
 *
 * Its pages get a strict Content-Security-Policy (no inline script or style, nothing from
 * another origin, never framed); Vite's content-hashed assets are cached for a year,
 * everything else is revalidated, so a new build is seen at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fastifyStatic from '@fastify/static';
import { PAGE_SECURITY_HEADERS, sendSecurityHeaders } from '../security-headers';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = { ...PAGE_SECURITY_HEADERS, 'content-security-policy': CONSOLE_CSP };

/** Vite names what it builds under assets/ after its content hash: they never change. */
const HASHED_ASSETS = `${path.sep}assets${path.sep}`;

function setCaching(reply: FastifyReply, file: string): void {
  reply.header('cache-control', file.includes(HASHED_ASSETS) ? 'public, max-age=31536000, immutable' : 'no-cache');
}

export async function registerConsole(app: FastifyInstance, consoleDir: string): Promise<void> {
  await app.register(async function consolePages(scope) {
    sendSecurityHeaders(scope, SECURITY_HEADERS);
    if (!fs.existsSync(path.join(consoleDir, 'index.html'))) {
      // Built without the console (only `npx tsc`): say so rather than answer an opaque 404.
      scope.get('/', { schema: { hide: true } }, async (_request, reply) =>
        reply
          .code(404)
          .type('text/plain; charset=utf-8')
          .send(
            `The web console is not built. Run \`make build\` (it builds console/ into ${consoleDir}), then restart. The API is at /api/v1 and its documentation at /docs.\n`,
          ),
      );
      return;
    }
    await scope.register(fastifyStatic, {
      root: consoleDir,
      prefix: '/',
      wildcard: false,
      index: 'index.html',
      cacheControl: false,
      setHeaders: setCaching,
      schemaHide: true,
      decorateReply: false,
    });
  });
}
