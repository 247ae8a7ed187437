/**
 * The docs page at /docs: public like the document it shows, the same document as
 * /api/v1/openapi.json, its assets served by the service itself (no CDN) under a
 * Content-Security-Policy with the console's security headers, and no way out of its asset folder or into the API.
 */
import { rawRequest } from '../helpers/raw-http';
import { startTestService, TestService } from '../helpers/service';

describe('GET /docs', () => {
  let t: TestService;

  beforeAll(async () => {
    t = await startTestService();
  });

  afterAll(async () => {
    await t.stop();
  });

  it('serves the Swagger UI page without a key, loading only assets the service serves', async () => {
    const page = await rawRequest(t.url, 'GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const html = String(page.body);
    expect(html).toContain('swagger-ui');
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(2);
    for (const asset of assets) {
      expect(asset).not.toMatch(/^(https?:)?\/\//);
      const fetched = await rawRequest(t.url, 'GET', new URL(asset, `${t.url}/docs/`).pathname);
      expect({ asset, status: fetched.status }).toEqual({ asset, status: 200 });
    }
    const bundle = await rawRequest(t.url, 'GET', '/docs/static/swagger-ui-bundle.js');
    expect(bundle.headers['content-type']).toMatch(/javascript/);
    expect(bundle.headers['content-security-policy']).toMatch(/default-src 'self'/);
  });

  // Found by an attacker's review: the page had none of the console's security headers.
  it("sends the pages' security headers (nosniff, never framed) on the page, its assets and its document", async () => {
    for (const path of ['/docs', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
      const answer = await rawRequest(t.url, 'GET', path);
      expect({ path, status: answer.status, nosniff: answer.headers['x-content-type-options'], frame: answer.headers['x-frame-options'] }).toEqual({
        path,
        status: 200,
        nosniff: 'nosniff',
        frame: 'DENY',
      });
    }
  });

  it('shows the very document /api/v1/openapi.json serves', async () => {
    const shown = await rawRequest(t.url, 'GET', '/docs/json');
    const served = await rawRequest(t.url, 'GET', '/api/v1/openapi.json');
    expect(shown.status).toBe(200);
    expect(shown.body.paths['/api/v1/load-balancers'].post.operationId).toBe('createLoadBalancer');
    expect(shown.body).toEqual(served.body);
  });

  it('leads neither out of its asset folder nor around authentication', async () => {
    const refusals: Record<string, [number, string]> = {
      '/docs/static/../../package.json': [403, 'forbidden'],
      '/docs/static/%2e%2e/%2e%2e/package.json': [403, 'forbidden'],
      '/docs/static/..%2f..%2fpackage.json': [404, 'route_not_found'],
      '/docs/static/../../api/v1/regions': [403, 'forbidden'],
      '/docs/static/no-such-asset.js': [404, 'route_not_found'],
    };
    for (const [path, [status, code]] of Object.entries(refusals)) {
      const answer = await rawRequest(t.url, 'GET', path);
      expect({ path, status: answer.status, code: answer.body.error?.code }).toEqual({ path, status, code });
    }
    // Paths the router itself resolves out of /docs land in the API, behind its key.
    expect((await rawRequest(t.url, 'GET', '/docs/../api/v1/regions')).status).toBe(401);
  });
});
