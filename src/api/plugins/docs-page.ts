/**
 * The API's docs page at /docs: Swagger UI (@fastify/swagger-ui) over the same document as
 * /api/v1/openapi.json, with its assets served from the package rather than a CDN, so the
 * page works on an air-gapped install and under a strict Content-Security-Policy (the
 * plugin's default sends no reader's browser to validator.swagger.io either). Public,
 * like the document it shows: it holds no data, and trying a call needs an API key.
 */
import type { FastifyInstance } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import { sendSecurityHeaders } from '../security-headers';

export const DOCS_PATH = '/docs';

export async function registerDocsPage(app: FastifyInstance): Promise<void> {
  await app.register(async function docsPage(scope) {
    // The console's page headers (nosniff, never framed, ...); Swagger UI sets its own CSP.
    sendSecurityHeaders(scope);
    await scope.register(swaggerUi, {
      routePrefix: DOCS_PATH,
      staticCSP: true,
      uiConfig: { deepLinking: true, persistAuthorization: false, displayOperationId: true, tryItOutEnabled: false },
      logLevel: 'warn',
    });
  });
}
