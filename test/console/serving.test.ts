/**
 * The service serves the built web console at `/` (src/api/plugins/console.ts): its pages
 * with security headers, hashed assets cached for good and the rest revalidated, only the
 * files the build made (every other path, /api/v1 above all, answers as before), and a
 * clear message instead of a crash when the console was not built.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request, startTestService, tempDataDir, TestService } from '../helpers/service';
import { startChildService } from '../helpers/child-service';

function builtConsole(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-console-'));
  fs.mkdirSync(path.join(dir, 'assets'));
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>Cloudplane</title><script type="module" src="/assets/index-AbC123.js"></script>');
  fs.writeFileSync(path.join(dir, 'assets', 'index-AbC123.js'), 'console.log("console");');
  return dir;
}

describe('the web console at /', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_CONSOLE_DIR: builtConsole() });
  });
  afterAll(async () => t.stop());

  it('serves index.html at / without a key, with a strict Content-Security-Policy and the other security headers', async () => {
    const res = await request(t.url, 'GET', '/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.body).toContain('<title>Cloudplane</title>');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    // The page may change with every build: the browser asks again each time.
    expect(res.headers.get('cache-control')).toBe('no-cache');
  });

  it('caches content-hashed assets for a year, immutable, and only those', async () => {
    const asset = await request(t.url, 'GET', '/assets/index-AbC123.js');
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
    const index = await request(t.url, 'GET', '/index.html');
    expect(index.headers.get('cache-control')).toBe('no-cache');
  });

  it('leaves every other path to the API: /api/v1 unknown paths stay JSON 401/404, and no header of the console leaks onto them', async () => {
    const anonymous = await request(t.url, 'GET', '/api/v1/no-such-thing');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('unauthorized');
    const known = await t.api('GET', '/api/v1/no-such-thing');
    expect(known.status).toBe(404);
    expect(known.body.error.code).toBe('route_not_found');
    expect(known.headers.get('content-type')).toMatch(/^application\/json/);
    expect(known.headers.get('content-security-policy')).toBeNull();
    const missingAsset = await t.api('GET', '/assets/index-Other.js');
    expect(missingAsset.status).toBe(404);
    expect(missingAsset.body.error.code).toBe('route_not_found');
    const regions = await t.api('GET', '/api/v1/regions');
    expect(regions.status).toBe(200);
  });

  it('answers a write to / as the API answers a method a path does not take', async () => {
    const res = await t.api('POST', '/', {});
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toContain('GET');
  });
});

describe('a service built without the console', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_CONSOLE_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-no-console-')) });
  });
  afterAll(async () => t.stop());

  it('answers / with a message saying how to build it, and the API works as usual', async () => {
    const res = await request(t.url, 'GET', '/');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.body).toContain('make build');
    expect((await t.api('GET', '/api/v1/regions')).status).toBe(200);
    expect((await request(t.url, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('the start-up banner of `make run`', () => {
  it("names the console's address, which serves the console", async () => {
    const service = await startChildService({ dataDir: tempDataDir(), key: `cpk_${'a1B2'.repeat(10)}` });
    try {
      expect(service.output()).toContain(`Web console: open ${service.url}/ in a browser`);
      const page = await request(service.url, 'GET', '/');
      expect(page.status).toBe(200);
      expect(page.body).toContain('<div id="app">');
    } finally {
      await service.stop();
    }
  });
});
