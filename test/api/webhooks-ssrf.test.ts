import os from 'node:os';
import { lookup } from 'node:dns/promises';
import { startTestService, TestService, eventually } from '../helpers/service';
import { isPublicAddress } from '../../src/lib/ip';

/** The SSRF guard as a tenant meets it: plain http allowed (no TLS here), private targets not. */
const GUARDED_ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.002',
};

describe('webhook SSRF guard', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService(GUARDED_ENV);
  });
  afterAll(async () => t.stop());

  const firstError = async (webhookId: string): Promise<string> =>
    eventually(async () => {
      const [delivery] = (await t.api('GET', `/api/v1/webhooks/${webhookId}/deliveries`)).body.data;
      return delivery?.error ?? null;
    });

  it.each([
    'http://127.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:a9fe:a9fe]/hook',
    'http://[::127.0.0.1]/hook',
    'http://[::10.0.0.1]/hook',
    'http://[2002:7f00:1::1]/hook',
    'http://[64:ff9b::a9fe:a9fe]/hook',
    'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook',
    'http://192.88.99.1/hook',
    'http://[100::1]/hook',
    'http://localhost/hook',
    'http://localhost./hook',
    'http://api.localhost./hook',
  ])('refuses %s when the subscription is made', async (url) => {
    const res = await t.api('POST', '/api/v1/webhooks', { url, events: ['bucket.created'] });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([{ field: 'url', message: 'must not point at a private, loopback or link-local address' }]);
    // The message says what to do instead: the CLI's listener, or the operator's settings.
    expect(res.body.error.message).toContain('cloudplane listen --forward-to');
    expect(res.body.error.message).toContain('CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS');
  });

  it('says the same of a name that resolves to a non-public address as of one that does not resolve, and names no address', async () => {
    // A name the create-time check cannot judge (it is not an address) that resolves to a
    // non-public one at delivery: this machine's own host name, which /etc/hosts maps to loopback.
    const internal = os.hostname();
    const resolved = await lookup(internal);
    expect(isPublicAddress(resolved.address)).toBe(false);
    const hooks: Record<string, string> = {};
    for (const [name, host] of [
      ['internal', internal],
      ['unresolvable', 'no-such-host.invalid'],
    ]) {
      const res = await t.api('POST', '/api/v1/webhooks', { url: `http://${host}:8080/hook`, events: ['bucket.created'] });
      expect(res.status).toBe(201);
      hooks[name] = res.body.data.id;
    }
    expect((await t.api('POST', '/api/v1/object-storage', { name: 'oracle-1', region: 'fra1' })).status).toBe(201);
    const internalError = await firstError(hooks.internal);
    const unresolvableError = await firstError(hooks.unresolvable);
    expect(internalError).toBe(unresolvableError);
    expect(internalError).not.toContain(resolved.address);
    expect(internalError).not.toMatch(/\d+\.\d+\.\d+\.\d+|::|:8080/);
  });
});
