/**
 * The issue's "Done when / Console" list, end to end, in Debian's Chromium against the real
 * service and a real OpenID Connect provider (the certified oidc-provider package on
 * loopback, test/helpers/oidc-provider.ts): sign in through the provider's own login page;
 * create a load balancer and watch it turn running without reloading; attach a server; see
 * a failed delivery and retry it; search the audit log; ask the agent a question; create
 * an API key and see it once; sign out and find the old cookie refused; a cross-site form
 * post without the CSRF token refused. Each step is one test, in order, in one browser.
 */
import type { Page } from 'playwright-core';
import { startConsole, ConsoleSession } from '../helpers/browser';
import { freePort } from '../helpers/kube-apiserver';
import { OidcProvider, startOidcProvider } from '../helpers/oidc-provider';
import { startReceiver, Receiver } from '../helpers/receiver';
import { eventually, waitForStatus, TestService } from '../helpers/service';
import { autoPostedForm, chooseRegion, maskedScreenshot, sessionCookie } from './page-checks';

jest.setTimeout(180_000);

const OWNER = 'owner@example.com';
const CLIENT = { clientId: 'cloudplane-console', clientSecret: 'the-walkthrough-client-secret' };

let c: ConsoleSession;
let t: TestService;
let page: Page;
let provider: OidcProvider;
let receiver: Receiver;
let receiverWorks = false;
let lbId: string;
let serverId: string;
let webhookId: string;
/** The session cookie of the signed-in person, kept to try it again after sign-out. */
let cookie: string;

/** Marks the document, so that a reload (a new document) would lose the mark. */
const markDocument = () => page.evaluate("window.walkthroughMark = 'same document'");
const stillSameDocument = () => page.evaluate<boolean>("window.walkthroughMark === 'same document'");

beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: receiverWorks ? 200 : 500 }));
  // The service must know the provider's address (its issuer) and the provider the
  // service's (its redirect URI): the provider's port first, then the service, then the
  // provider (discovery is lazy).
  const providerPort = await freePort();
  c = await startConsole({
    signIn: false,
    env: {
      CLOUDPLANE_OIDC_ISSUER: `http://127.0.0.1:${providerPort}`,
      CLOUDPLANE_OIDC_CLIENT_ID: CLIENT.clientId,
      CLOUDPLANE_OIDC_CLIENT_SECRET: CLIENT.clientSecret,
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // The whole retry schedule (15 attempts) in a second or so, so that the delivery ends failed.
      CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.0005',
      // Provisioning takes long enough that the page shows `creating` before `running`.
      CLOUDPLANE_SIM_DELAY_MS: '1500',
    },
  });
  t = c.service;
  page = c.page;
  provider = await startOidcProvider({
    port: providerPort,
    ...CLIENT,
    redirectUris: [`${t.url}/auth/callback`],
    accounts: [{ email: OWNER, email_verified: true, name: 'Olivia Owner' }],
  });
  // A server to attach, made through the API: attaching is the console's step.
  const server = await t.api('POST', '/api/v1/servers', { name: 'app-1', region: 'fra1' });
  expect(server.status).toBe(201);
  serverId = server.body.data.id;
  await waitForStatus(t, `/api/v1/servers/${serverId}`, 'running', 30_000);
});

afterAll(async () => {
  await c?.close();
  await provider?.stop();
  await receiver?.close();
});

test("sign in through the provider's own login page", async () => {
  await c.open('/sign-in');
  await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
  // The provider's page, on the provider's origin.
  await page.getByPlaceholder('Enter any login').waitFor({ timeout: 30_000 });
  expect(new URL(page.url()).origin).toBe(provider.issuer);
  await page.getByPlaceholder('Enter any login').fill(OWNER);
  await page.getByPlaceholder('and password').fill('anything');
  await maskedScreenshot(page, 'walkthrough-provider-login');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  // Back on the console, signed in as the provider's account.
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 30_000 });
  expect(new URL(page.url()).origin).toBe(new URL(t.url).origin);
  cookie = await sessionCookie(c.context, t.url);
  const session = await fetch(`${t.url}/api/v1/session`, { headers: { cookie } }).then(
    (r) => r.json() as Promise<{ data: { via: string; user: { email: string }; role: string } }>,
  );
  expect(session.data).toMatchObject({ via: 'oidc', user: { email: OWNER }, role: 'owner' });
});

test('subscribe a webhook to a receiver that fails (for the delivery step)', async () => {
  await c.open('/webhooks');
  await page.getByLabel('Receiver URL').fill(receiver.url);
  await page.getByLabel('Events', { exact: true }).fill('load_balancer.*');
  await page.getByRole('button', { name: 'Create subscription' }).click();
  await page.getByLabel('Signing secret', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'I have saved it' }).click();
  const webhooks = await t.api('GET', '/api/v1/webhooks');
  webhookId = webhooks.body.data.find((w: { url: string }) => w.url === receiver.url).id;
});

test('create a load balancer and watch it turn running without reloading', async () => {
  await c.open('/load-balancers/new');
  await page.getByLabel('Name').fill('walk-lb');
  await chooseRegion(page, 'fra1');
  await markDocument();
  await page.getByRole('button', { name: 'Create load balancer' }).click();
  await page.waitForURL(/#\/load-balancers\/lb_/);
  lbId = /#\/load-balancers\/(lb_[0-9a-z]+)/.exec(page.url())![1];
  await page.locator('.page-head .status', { hasText: 'creating' }).waitFor();
  await page.locator('.page-head .status', { hasText: 'running' }).waitFor({ timeout: 30_000 });
  expect(await stillSameDocument()).toBe(true);
  expect((await t.api('GET', `/api/v1/load-balancers/${lbId}`)).body.data.status).toBe('running');
});

test('attach a server', async () => {
  await page.getByLabel('Server').selectOption(serverId);
  await page.getByRole('button', { name: 'Attach', exact: true }).click();
  const backend = page.getByRole('region', { name: 'Backends' }).getByRole('row', { name: new RegExp(serverId) });
  // Exact: "unhealthy", which a new backend shows first, contains "healthy".
  await backend.getByText('healthy', { exact: true }).waitFor({ timeout: 30_000 });
  const lb = (await t.api('GET', `/api/v1/load-balancers/${lbId}`)).body.data;
  expect(lb.backends.map((b: { server_id: string; status: string }) => [b.server_id, b.status])).toEqual([[serverId, 'healthy']]);
});

test('see a failed delivery and retry it', async () => {
  // The load balancer's creation event, tried 15 times against the failing receiver.
  const failed = await eventually(async () => {
    const res = await t.api('GET', `/api/v1/webhooks/${webhookId}/deliveries?status=failed`);
    return res.body.data.find((d: { event_type: string }) => d.event_type === 'load_balancer.created');
  }, 60_000);
  await c.open('/webhooks/failed');
  const row = page.locator(`tr[data-delivery-id="${failed.id}"]`);
  await row.waitFor({ timeout: 30_000 });
  expect(await row.locator('[data-label="Attempt"]').textContent()).toContain('15/15');
  expect(await row.locator('[data-label="Error"]').textContent()).toContain('receiver answered status 500');
  receiverWorks = true;
  await row.getByRole('button', { name: `Retry delivery ${failed.id} (load_balancer.created)` }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `Delivery ${failed.id} succeeded on attempt 16/15.` })
    .waitFor({ timeout: 30_000 });
  expect((await t.api('GET', `/api/v1/webhooks/${webhookId}/deliveries/${failed.id}`)).body.data.status).toBe('succeeded');
  expect(receiver.received.some((r) => r.headers['x-service-delivery'] === failed.id && JSON.parse(r.body).data.id === lbId)).toBe(true);
});

test('search the audit log', async () => {
  await c.open('/audit-log');
  await page.getByLabel('Resource id').fill(lbId);
  await page.getByRole('button', { name: 'Search' }).click();
  const table = page.getByRole('table', { name: 'Events' });
  await table.getByText('load_balancer.backend_attached').waitFor({ timeout: 30_000 });
  for (const type of ['load_balancer.created', 'load_balancer.running']) expect(await table.getByText(type, { exact: true }).count()).toBe(1);
});

test('ask the agent a question', async () => {
  await c.open('/agent');
  await page.getByRole('button', { name: 'Start thread' }).click();
  await page.getByLabel('Your question').fill(`history of ${lbId}`);
  await page.getByRole('button', { name: 'Ask' }).click();
  await page.getByRole('status').filter({ hasText: 'The agent answered.' }).waitFor({ timeout: 30_000 });
  const answer = page.getByRole('log', { name: 'Messages' }).getByRole('article', { name: /^Agent at / });
  // The resource's history, from the audit log: its attach is in it.
  expect(await answer.textContent()).toContain('load_balancer.backend_attached');
});

test('create an API key and see it once', async () => {
  await c.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
  await c.open('/settings/api-keys');
  await page.getByLabel('Name').fill('walkthrough');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const field = page.getByLabel('API key', { exact: true });
  const key = await field.inputValue();
  expect(key).toMatch(/^cpk_[0-9A-Za-z]{40}$/);
  await page.getByRole('button', { name: 'Copy API key' }).click();
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
  expect((await fetch(`${t.url}/api/v1/regions`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
  await page.reload();
  await page.getByRole('cell', { name: 'walkthrough', exact: true }).waitFor();
  expect(await field.count()).toBe(0);
  expect(await page.content()).not.toContain(key);
});

test('a cross-site form post without the CSRF token is refused', async () => {
  const target = `${t.url}/api/v1/load-balancers`;
  const fields = { name: 'forged-lb', region: 'fra1' };
  // Another site: the SameSite=Lax cookie stays home.
  expect((await autoPostedForm(c.context, '127.0.0.2', target, fields)).status).toBe(401);
  // The same site on another port: the cookie goes along, the token cannot.
  expect((await autoPostedForm(c.context, '127.0.0.1', target, fields)).status).toBe(403);
  // And the cookie sent without the token from outside a browser.
  const forged = await fetch(target, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify(fields) });
  expect(forged.status).toBe(403);
  const lbs = (await t.api('GET', '/api/v1/load-balancers')).body.data;
  expect(lbs.map((lb: { name: string }) => lb.name)).toEqual(['walk-lb']);
});

test('sign out, and find the old cookie refused', async () => {
  expect((await fetch(`${t.url}/api/v1/session`, { headers: { cookie } })).status).toBe(200);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in to Cloudplane' }).waitFor();
  const after = await fetch(`${t.url}/api/v1/session`, { headers: { cookie } });
  expect(after.status).toBe(401);
  expect((await t.api('GET', '/api/v1/load-balancers', undefined, { key: null, headers: { cookie } })).status).toBe(401);
});
