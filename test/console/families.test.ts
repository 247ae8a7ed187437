/**
 * The console's resource pages in a real browser (Debian's Chromium, test/helpers/browser.ts)
 * against the real service: sign in with the printed key through the sign-in page, create a
 * load balancer and watch it turn `running` without a reload, attach a server, stop and start
 * a server, see a 422 next to its field, delete with confirmation, a phone-sized screen, and
 * the create form by keyboard alone. Screenshots of the main pages go to docs/screenshots/.
 */
import type { Page } from 'playwright-core';
import { startConsole, signInWithKey, ConsoleSession, CONSOLE_DIR } from '../helpers/browser';
import { eventually, request, startTestService, TestService, waitForStatus } from '../helpers/service';
import { freePort } from '../helpers/kube-apiserver';
import { OidcProvider, startOidcProvider } from '../helpers/oidc-provider';
import { S3Server, startS3Server } from '../helpers/s3-server';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { familyByName } from '../../src/resources/registry';
import { chooseRegion } from './page-checks';

jest.setTimeout(120_000);

/** Provisioning takes long enough that the page shows `creating` before `running`; a job stays queued long enough to cancel. */
const ENV = { CLOUDPLANE_SIMULATION_API: 'true', CLOUDPLANE_SIM_DELAY_MS: '1500', CLOUDPLANE_SIM_DELAYS: 'job=120000', CLOUDPLANE_BACKEND_DRAIN_SECONDS: '1' };

// The page's own expressions are strings: the tests are compiled without the DOM's types.
/** Marks the document, so that a reload (a new document) would lose the mark. */
async function markDocument(page: Page): Promise<void> {
  await page.evaluate("window.consoleMark = 'same document'");
}
const stillSameDocument = (page: Page) => page.evaluate<boolean>("window.consoleMark === 'same document'");
const focusedId = (page: Page) => page.evaluate<string>("document.activeElement?.id ?? ''");
const focusedText = (page: Page) => page.evaluate<string>("document.activeElement?.textContent ?? ''");

const cspViolations = (c: ConsoleSession) => c.pageErrors.filter((message) => /Content Security Policy/i.test(message));

describe('console: resource families in a browser', () => {
  let c: ConsoleSession;
  let serverId: string;

  beforeAll(async () => {
    c = await startConsole({ env: ENV });
    const server = await c.service.api('POST', '/api/v1/servers', { name: 'app-1', region: 'fra1' });
    expect(server.status).toBe(201);
    serverId = server.body.data.id;
    await waitForStatus(c.service, `/api/v1/servers/${serverId}`, 'running');
  });
  afterAll(async () => c?.close());

  it('signs in with the printed key: the header shows the team and the user, and no key is kept in the browser', async () => {
    const header = c.page.locator('header.top');
    await expect(header.textContent()).resolves.toContain('My team');
    await expect(header.textContent()).resolves.toContain('Owner');
    const stored = await c.page.evaluate<string>(
      'JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie, url: location.href })',
    );
    expect(stored).not.toContain(c.service.key);
    // The session cookie is HttpOnly: the page's script cannot read it.
    const cookies = await c.context.cookies();
    const session = cookies.find((cookie) => cookie.name === 'cloudplane_session');
    expect(session?.httpOnly).toBe(true);
    expect(session?.value).not.toContain(c.service.key);
    // Every family is in the navigation.
    for (const title of ['Load balancers', 'VPN gateways', 'Servers', 'Buckets', 'File shares', 'Jobs']) {
      await expect(c.page.getByRole('navigation').getByRole('link', { name: title }).count()).resolves.toBe(1);
    }
  });

  it('shows the API 422 next to the field it names, and focuses that field', async () => {
    await c.open('/load-balancers/new');
    await c.page.getByLabel('Name').fill('web-1');
    await chooseRegion(c.page, 'fra1');
    await c.page.getByLabel('Port', { exact: false }).fill('0');
    await c.page.getByRole('button', { name: 'Create load balancer' }).click();
    const port = c.page.locator('#field-port');
    await c.page.locator('#field-port-error').waitFor();
    await expect(c.page.locator('#field-port-error').textContent()).resolves.toBe('must be >= 1');
    await expect(port.getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(port.getAttribute('aria-describedby')).resolves.toContain('field-port-error');
    await expect(focusedId(c.page)).resolves.toBe('field-port');
    // Nothing was created.
    const list = await c.service.api('GET', '/api/v1/load-balancers');
    expect(list.body.data).toHaveLength(0);
    await c.screenshot('load-balancer-create-validation');
  });

  it('creates a load balancer and shows it turn running without a reload, announced in the live region', async () => {
    await c.page.getByLabel('Port', { exact: false }).fill('8080');
    await markDocument(c.page);
    await c.page.getByRole('button', { name: 'Create load balancer' }).click();
    await c.page.waitForURL(/#\/load-balancers\/lb_/);
    await expect(c.page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('web-1');
    await c.page.locator('.page-head .status', { hasText: 'running' }).waitFor({ timeout: 30_000 });
    expect(await stillSameDocument(c.page)).toBe(true);
    await c.page.getByTestId('announcements').getByText('web-1 is now running.').waitFor();
    const lbs = await c.service.api('GET', '/api/v1/load-balancers');
    expect(lbs.body.data.map((lb: { name: string; port: number }) => [lb.name, lb.port])).toEqual([['web-1', 8080]]);
  });

  it('the list shows the load balancer live too', async () => {
    await c.page.getByRole('link', { name: '← Load balancers' }).click();
    const row = c.page.getByRole('row', { name: /web-1/ });
    await row.getByText('running').waitFor();
    await c.screenshot('load-balancers');
  });

  it('attaches a server to the load balancer and shows the backend turn healthy', async () => {
    await c.page.getByRole('link', { name: 'web-1' }).click();
    await c.page.getByLabel('Server').selectOption(serverId);
    await markDocument(c.page);
    await c.page.getByRole('button', { name: 'Attach', exact: true }).click();
    const backend = c.page.getByRole('region', { name: 'Backends' }).getByRole('row', { name: new RegExp(serverId) });
    await backend.getByText('healthy').waitFor({ timeout: 30_000 });
    // The backend reads as its server's name (a link to it), not only its id.
    await backend.getByRole('link', { name: 'app-1' }).waitFor();
    await c.page.getByTestId('announcements').getByText('Attached server app-1 to web-1.').waitFor();
    expect(await stillSameDocument(c.page)).toBe(true);
    const lb = (await c.service.api('GET', '/api/v1/load-balancers')).body.data[0];
    expect(lb.backends.map((b: { server_id: string; port: number }) => [b.server_id, b.port])).toEqual([[serverId, 8080]]);
    await c.screenshot('load-balancer-detail');
  });

  it('detaches the server again', async () => {
    const lb = (await c.service.api('GET', '/api/v1/load-balancers')).body.data[0];
    await c.page.getByRole('button', { name: 'Detach app-1' }).click();
    await eventually(async () => (await c.service.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.data.backends.length === 0, 30_000);
    await c.page.getByRole('region', { name: 'Backends' }).getByText('No backends yet.').waitFor({ timeout: 30_000 });
  });

  it('stops and starts a server, the buttons following its state', async () => {
    await c.open(`/servers/${serverId}`);
    const stop = c.page.getByRole('button', { name: 'Stop' });
    const start = c.page.getByRole('button', { name: 'Start' });
    await stop.waitFor();
    await expect(start.isDisabled()).resolves.toBe(true);
    await stop.click();
    await c.page.locator('.page-head .status', { hasText: /^stopped$/ }).waitFor({ timeout: 30_000 });
    await expect(stop.isDisabled()).resolves.toBe(true);
    expect((await c.service.api('GET', `/api/v1/servers/${serverId}`)).body.data.status).toBe('stopped');
    // The list filtered by status, from the API's own filter.
    await c.page.getByRole('link', { name: '← Servers' }).click();
    await c.page.getByLabel('Status').selectOption('running');
    await c.page.getByText('No servers are running.').waitFor();
    await c.page.getByLabel('Status').selectOption('stopped');
    await c.page.getByRole('row', { name: /app-1/ }).waitFor();
    await c.page.getByRole('link', { name: 'app-1' }).click();
    await start.click();
    await c.page.locator('.page-head .status', { hasText: /^running$/ }).waitFor({ timeout: 30_000 });
    expect((await c.service.api('GET', `/api/v1/servers/${serverId}`)).body.data.status).toBe('running');
    await c.page.getByTestId('announcements').getByText('app-1 is now running.').waitFor();
  });

  it('shows why a server is ready, and asks for a reconcile pass that the page shows handled', async () => {
    await c.open(`/servers/${serverId}`);
    const readiness = c.page.getByRole('region', { name: 'Readiness' });
    await readiness.getByRole('row', { name: /^Ready True Running/ }).waitFor();
    await readiness.getByRole('row', { name: /^Synced True ReconcileSuccess/ }).waitFor();
    await markDocument(c.page);
    await readiness.getByRole('button', { name: 'Reconcile now' }).click();
    // The pass's handling comes by the page's watch, without a reload.
    await readiness.getByText(/Last asked for pass handled:/).waitFor({ timeout: 20_000 });
    expect(await stillSameDocument(c.page)).toBe(true);
    expect((await c.service.api('GET', `/api/v1/servers/${serverId}`)).body.data.last_handled_reconcile_at).not.toBeNull();
    // A second ask within 10 s is refused, and the page says why.
    await readiness.getByRole('button', { name: 'Reconcile now' }).click();
    await readiness
      .getByRole('alert')
      .getByText(/less than 10 s ago/)
      .waitFor();
  });

  it('offers no reconcile pass for a failed resource, and says why', async () => {
    const fault = await c.service.api('POST', '/api/v1/simulation/faults', { family: 'bucket', operation: 'provision', error: 'the region is full' });
    expect(fault.status).toBe(201);
    const bucket = await c.service.api('POST', '/api/v1/object-storage', { name: 'refused', region: 'fra1' });
    await waitForStatus(c.service, `/api/v1/object-storage/${bucket.body.data.id}`, 'failed');
    await c.open(`/object-storage/${bucket.body.data.id}`);
    const readiness = c.page.getByRole('region', { name: 'Readiness' });
    await readiness.getByRole('row', { name: /^Stalled True/ }).waitFor();
    await readiness.getByText(/stays failed: change its configuration or make it again/).waitFor();
    await expect(readiness.getByRole('button', { name: 'Reconcile now' }).count()).resolves.toBe(0);
  });

  it('attaches and detaches a file share to a server', async () => {
    const share = await c.service.api('POST', '/api/v1/file-storage', { name: 'shared', region: 'fra1' });
    await waitForStatus(c.service, `/api/v1/file-storage/${share.body.data.id}`, 'available');
    await c.open(`/file-storage/${share.body.data.id}`);
    await c.page.getByLabel('Server').selectOption(serverId);
    await c.page.getByRole('button', { name: 'Attach', exact: true }).click();
    const mounted = c.page.getByRole('region', { name: 'Mounted on' });
    await mounted.getByRole('link', { name: 'app-1' }).waitFor();
    const server = (await c.service.api('GET', `/api/v1/servers/${serverId}`)).body.data;
    expect(server.mounts.map((m: { file_share_id: string }) => m.file_share_id)).toEqual([share.body.data.id]);
    await waitForStatus(c.service, `/api/v1/servers/${serverId}`, 'running');
    await mounted.getByRole('button', { name: 'Detach from app-1' }).click();
    await mounted.getByText('Not attached to any server.').waitFor();
    expect((await c.service.api('GET', `/api/v1/servers/${serverId}`)).body.data.mounts).toEqual([]);
  });

  it('changes a file share from its PATCH form: a shrink is refused next to its field, a growth is saved', async () => {
    const share = (await c.service.api('GET', '/api/v1/file-storage')).body.data[0];
    await c.page.getByRole('link', { name: 'Change' }).click();
    await c.page.waitForURL(/\/edit$/);
    const size = c.page.getByLabel('Size GB');
    await expect(size.inputValue()).resolves.toBe('100');
    await expect(c.page.getByLabel('Name').inputValue()).resolves.toBe('shared');
    await size.fill('50');
    // The change is judged by a dry run first: refused next to its field, nothing saved.
    await c.page.getByRole('button', { name: 'Review changes' }).click();
    await c.page.locator('#field-size_gb-error').waitFor();
    await expect(size.getAttribute('aria-invalid')).resolves.toBe('true');
    expect((await c.service.api('GET', `/api/v1/file-storage/${share.id}`)).body.data.size_gb).toBe(100);
    await size.fill('200');
    await c.page.getByRole('button', { name: 'Review changes' }).click();
    const review = c.page.getByRole('region', { name: 'Review changes' });
    await review.getByRole('row', { name: 'Size GB 100 200' }).waitFor();
    expect((await c.service.api('GET', `/api/v1/file-storage/${share.id}`)).body.data.size_gb).toBe(100);
    await review.getByRole('button', { name: 'Save changes' }).click();
    await c.page.waitForURL(new RegExp(`#/file-storage/${share.id}$`));
    await eventually(async () => (await c.service.api('GET', `/api/v1/file-storage/${share.id}`)).body.data.size_gb === 200);
    // Only the changed field was sent: the name is as it was.
    expect((await c.service.api('GET', `/api/v1/file-storage/${share.id}`)).body.data.name).toBe('shared');
  });

  it("saves a change over the service's own status write, and never over another person's change", async () => {
    const share = (await c.service.api('GET', '/api/v1/file-storage')).body.data[0];
    const url = `/api/v1/file-storage/${share.id}`;
    await c.open(`/file-storage/${share.id}/edit`);
    const size = c.page.getByLabel('Size GB');
    await expect(size.inputValue()).resolves.toBe('200');
    // The service writes the share's status while the form is open: a new version, the form's fields as they were.
    const before = (await c.service.api('GET', url)).headers.get('etag');
    await c.service.service.ctx.writer.mutateStatus(familyByName('file_share'), c.service.teamId, share.id, () => ({}), 'system');
    expect((await c.service.api('GET', url)).headers.get('etag')).not.toBe(before);
    await size.fill('300');
    await c.page.getByRole('button', { name: 'Review changes' }).click();
    await c.page.getByRole('button', { name: 'Save changes' }).click();
    await c.page.waitForURL(new RegExp(`#/file-storage/${share.id}$`));
    expect((await c.service.api('GET', url)).body.data.size_gb).toBe(300);

    // Someone else changes the size while the form is open: the form's save is refused, and says so.
    await c.open(`/file-storage/${share.id}/edit`);
    await expect(size.inputValue()).resolves.toBe('300');
    expect((await c.service.api('PATCH', url, { size_gb: 400 })).status).toBe(200);
    await size.fill('500');
    await c.page.getByRole('button', { name: 'Review changes' }).click();
    await c.page.getByRole('alert').filter({ hasText: 'Someone else changed this file share' }).waitFor();
    expect(await c.page.getByRole('alert').textContent()).toContain('Size GB');
    expect((await c.service.api('GET', url)).body.data.size_gb).toBe(400);
    await c.page.getByRole('button', { name: 'Load the current values' }).click();
    await eventually(async () => (await size.inputValue()) === '400');
  });

  it('creates a VPN gateway without ever showing its pre-shared key, and shows the tunnel status', async () => {
    const psk = 'correct-horse-battery-staple-42';
    await c.open('/vpn-gateways/new');
    await c.page.getByLabel('Name').fill('office');
    await chooseRegion(c.page, 'fra1');
    await c.page.getByLabel('Tunnel type').fill('ipsec');
    await c.page.getByLabel('Remote network CIDR').fill('192.168.10.0/24');
    await c.page.getByLabel('Remote peer IP').fill('8.8.4.4');
    const secret = c.page.getByLabel('Pre shared key');
    await expect(secret.getAttribute('type')).resolves.toBe('password');
    await secret.fill(psk);
    await c.page.getByRole('button', { name: 'Create VPN gateway' }).click();
    await c.page.waitForURL(/#\/vpn-gateways\/vpn_/);
    await c.page.getByRole('region', { name: 'Tunnel' }).getByText('Tunnel status').waitFor();
    await c.page.locator('.page-head .status', { hasText: 'active' }).waitFor({ timeout: 30_000 });
    expect(await c.page.content()).not.toContain(psk);
    await c.screenshot('vpn-gateway-detail');
  });

  it('replaces the pre-shared key: a short one is refused next to its field, and no key is ever in the page', async () => {
    const gateway = (await c.service.api('GET', '/api/v1/vpn-gateways')).body.data[0];
    const field = c.page.getByLabel('New pre-shared key');
    await expect(field.getAttribute('type')).resolves.toBe('password');
    await field.fill('too-short');
    await c.page.getByRole('button', { name: 'Replace key' }).click();
    await c.page.locator('#new-psk-error').waitFor();
    await expect(field.getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(field.inputValue()).resolves.toBe('');
    const updatedBefore = (await c.service.api('GET', `/api/v1/vpn-gateways/${gateway.id}`)).body.data.updated_at;
    const next = 'another-long-enough-shared-secret-7';
    await field.fill(next);
    await c.page.getByRole('button', { name: 'Replace key' }).click();
    await c.page.getByText('The pre-shared key was replaced.', { exact: true }).waitFor();
    expect((await c.service.api('GET', `/api/v1/vpn-gateways/${gateway.id}`)).body.data.updated_at).not.toBe(updatedBefore);
    const page = await c.page.content();
    expect(page).not.toContain(next);
    expect(page).not.toContain('too-short');
  });

  it('deletes the load balancer after a confirmation', async () => {
    const lb = (await c.service.api('GET', '/api/v1/load-balancers')).body.data[0];
    await c.open(`/load-balancers/${lb.id}`);
    await c.page.getByRole('button', { name: 'Delete' }).click();
    const dialog = c.page.getByRole('dialog', { name: 'Delete web-1?' });
    await dialog.waitFor();
    // Escape keeps it.
    await c.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await c.service.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.data.status).toBe('running');
    await c.page.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Delete load balancer' }).click();
    await c.page.waitForURL(/#\/load-balancers$/);
    await c.page.getByText('No load balancers yet.').waitFor();
    expect((await c.service.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.data.status).toBe('deleted');
  });

  it('cancels a queued job; a job has no delete button', async () => {
    await c.open('/jobs/new');
    await c.page.getByLabel('Name').fill('nightly');
    await c.page.getByLabel('Command').fill('echo hello');
    await c.page.getByRole('button', { name: 'Create job' }).click();
    await c.page.waitForURL(/#\/jobs\/job_/);
    await c.page.locator('.page-head .status', { hasText: 'queued' }).waitFor();
    await expect(c.page.getByRole('button', { name: 'Delete' }).count()).resolves.toBe(0);
    await expect(c.page.getByRole('link', { name: 'Change' }).count()).resolves.toBe(0);
    await c.page.getByRole('button', { name: 'Cancel job' }).click();
    await c.page.locator('.page-head .status', { hasText: 'cancelled' }).waitFor();
    const job = (await c.service.api('GET', '/api/v1/jobs')).body.data[0];
    expect({ name: job.name, status: job.status }).toEqual({ name: 'nightly', status: 'cancelled' });
    await c.page.getByRole('paragraph').filter({ hasText: 'Cancelled on request.' }).waitFor();
  });

  it('loaded no resource the Content-Security-Policy refused', () => {
    expect(cspViolations(c)).toEqual([]);
  });

  it('offers a read_only session no create, change, action or delete', async () => {
    const key = await c.service.api('POST', '/api/v1/settings/api-keys', { name: 'reader', scope: 'read_only' });
    expect(key.status).toBe(201);
    const context = await c.browser.newContext();
    try {
      const page = await context.newPage();
      await signInWithKey(page, c.url, key.body.data.key);
      await page.goto(`${c.url}/#/servers/${serverId}`);
      await page.getByRole('heading', { name: 'app-1', level: 1 }).waitFor();
      await page.locator('.page-head .status').waitFor();
      for (const name of ['Stop', 'Start', 'Reboot', 'Delete']) await expect(page.getByRole('button', { name }).count()).resolves.toBe(0);
      await expect(page.getByRole('link', { name: 'Change' }).count()).resolves.toBe(0);
      await page.goto(`${c.url}/#/servers`);
      await page.getByRole('link', { name: 'app-1' }).waitFor();
      await expect(page.getByRole('link', { name: 'New server' }).count()).resolves.toBe(0);
    } finally {
      await context.close();
    }
  });

  it('signs out: back to the sign-in page, and the old cookie is refused', async () => {
    const cookie = (await c.context.cookies()).find((k) => k.name === 'cloudplane_session')!;
    const before = await request(c.url, 'GET', '/api/v1/session', undefined, { headers: { cookie: `cloudplane_session=${cookie.value}` } });
    expect(before.status).toBe(200);
    await c.page.getByRole('button', { name: 'Sign out' }).click();
    await c.page.getByLabel('API key').waitFor();
    const after = await request(c.url, 'GET', '/api/v1/session', undefined, { headers: { cookie: `cloudplane_session=${cookie.value}` } });
    expect(after.status).toBe(401);
    // A page of the console now leads to sign-in, and back to that page after it.
    await c.open('/servers');
    await c.page.waitForURL(/#\/sign-in\?return=%2Fservers$/);
    await c.page.getByLabel('API key').fill(c.service.key);
    await c.page.getByRole('button', { name: 'Sign in' }).click();
    await c.page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
  });
});

describe('console: a bucket on a real S3 endpoint', () => {
  let s3: S3Server;
  let c: ConsoleSession;
  beforeAll(async () => {
    s3 = await startS3Server();
    c = await startConsole({ env: { ...ENV, ...s3.env, CLOUDPLANE_S3_BUCKET_PREFIX: 'cpc' } });
  });
  afterAll(async () => {
    await c?.close();
    await s3?.stop();
  });

  it('refuses to delete a bucket that holds objects, showing why, and deletes it with them when asked', async () => {
    const created = await c.service.api('POST', '/api/v1/object-storage', { name: 'photos', region: 'fra1' });
    const bucket = await waitForStatus(c.service, `/api/v1/object-storage/${created.body.data.id}`, 'available', 30_000);
    const client = s3.client();
    try {
      await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'cat.jpg', Body: 'meow' }));
    } finally {
      client.destroy();
    }
    await c.open(`/object-storage/${bucket.id}`);
    await c.page.getByRole('button', { name: 'Delete' }).click();
    const dialog = c.page.getByRole('dialog', { name: 'Delete photos?' });
    await dialog.getByRole('button', { name: 'Delete bucket' }).click();
    await c.page
      .getByRole('alert')
      .filter({ hasText: /objects/i })
      .waitFor();
    expect((await c.service.api('GET', `/api/v1/object-storage/${bucket.id}`)).body.data.status).toBe('available');
    await c.page.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByLabel('Also delete the objects it holds').check();
    await dialog.getByRole('button', { name: 'Delete bucket' }).click();
    await c.page.waitForURL(/#\/object-storage$/);
    expect((await c.service.api('GET', `/api/v1/object-storage/${bucket.id}`)).body.data.status).toBe('deleted');
  });
});

describe('console: sign-in through an identity provider', () => {
  let service: TestService;
  let provider: OidcProvider;
  let c: ConsoleSession;

  beforeAll(async () => {
    // The provider's port is known before the service starts (its issuer), the service's
    // before the provider starts (its redirect URI).
    const port = await freePort();
    const client = { clientId: 'cloudplane-console', clientSecret: 'a-client-secret-of-the-console-test' };
    service = await startTestService({
      ...ENV,
      CLOUDPLANE_CONSOLE_DIR: CONSOLE_DIR,
      CLOUDPLANE_OIDC_ISSUER: `http://127.0.0.1:${port}`,
      CLOUDPLANE_OIDC_CLIENT_ID: client.clientId,
      CLOUDPLANE_OIDC_CLIENT_SECRET: client.clientSecret,
    });
    provider = await startOidcProvider({
      port,
      ...client,
      redirectUris: [`${service.url}/auth/callback`],
      accounts: [
        { email: 'owner@example.com', email_verified: true, name: 'Owner' },
        { email: 'stranger@example.com', email_verified: true },
      ],
    });
    // The same person owns a second team, which holds nothing yet.
    expect((await service.api('POST', '/api/v1/teams', { name: 'Second team', owner_email: 'owner@example.com' })).status).toBe(201);
    expect((await service.api('POST', '/api/v1/load-balancers', { name: 'first-team-lb', region: 'fra1' })).status).toBe(201);
    c = await startConsole({ service, signIn: false });
  });
  afterAll(async () => {
    await c?.close();
    await service?.stop();
    await provider?.stop();
  });

  /** Through the provider's own login and consent pages, as `email`. */
  async function providerLogin(page: Page, email: string): Promise<void> {
    await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
    await page.waitForURL((url) => url.origin === provider.issuer);
    await page.getByPlaceholder('Enter any login').fill(email);
    await page.getByPlaceholder('and password').fill('anything');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  it('tells a person the provider knows but no team does why they are not signed in', async () => {
    const context = await c.browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${service.url}/#/servers`);
      await providerLogin(page, 'stranger@example.com');
      await page.getByRole('alert').filter({ hasText: 'no team of this installation has an active member with your e-mail address' }).waitFor();
      await page.getByRole('link', { name: 'Sign in with your identity provider' }).waitFor();
      expect((await context.cookies()).find((k) => k.name === 'cloudplane_session')).toBeUndefined();
      // Said once: the reason is gone from the address.
      expect(new URL(page.url()).search).toBe('');
    } finally {
      await context.close();
    }
  });

  it("offers only the provider, signs in on the provider's own login page, and lands on the page asked for", async () => {
    await c.open('/servers');
    await c.page.waitForURL(/#\/sign-in/);
    const link = c.page.getByRole('link', { name: 'Sign in with your identity provider' });
    await link.waitFor();
    await expect(c.page.getByLabel('API key').count()).resolves.toBe(0);
    await providerLogin(c.page, 'owner@example.com');
    await c.page.waitForURL(`${service.url}/#/servers`);
    await c.page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    await expect(c.page.locator('header.top').textContent()).resolves.toContain('My team');
    const cookie = (await c.context.cookies()).find((k) => k.name === 'cloudplane_session');
    expect(cookie?.httpOnly).toBe(true);
  });

  it('switches to the other team of the same person from the header', async () => {
    await c.open('/load-balancers');
    await c.page.getByRole('link', { name: 'first-team-lb' }).waitFor();
    const team = c.page.getByLabel('Team');
    await expect(team.locator('option').allTextContents()).resolves.toEqual(expect.arrayContaining(['My team', 'Second team']));
    await team.selectOption({ label: 'Second team' });
    await c.page.getByText('No load balancers yet.').waitFor();
    const cookie = (await c.context.cookies()).find((k) => k.name === 'cloudplane_session')!;
    const session = await request(c.url, 'GET', '/api/v1/session', undefined, { headers: { cookie: `cloudplane_session=${cookie.value}` } });
    expect(session.body.data.team.name).toBe('Second team');
  });
});

describe('console: a phone-sized screen and the keyboard', () => {
  let c: ConsoleSession;
  beforeAll(async () => {
    c = await startConsole({ env: ENV, viewport: { width: 360, height: 740 } });
    const lb = await c.service.api('POST', '/api/v1/load-balancers', { name: 'edge', region: 'fra1' });
    expect(lb.status).toBe(201);
  });
  afterAll(async () => c?.close());

  it('fits the list page in 360 px, with the navigation behind a menu button', async () => {
    await c.open('/load-balancers');
    await c.page.getByRole('row', { name: /edge/ }).getByText('running').waitFor({ timeout: 30_000 });
    const overflow = await c.page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    const menu = c.page.getByRole('button', { name: 'Menu' });
    const nav = c.page.getByRole('navigation');
    await expect(nav.isVisible()).resolves.toBe(false);
    await expect(menu.getAttribute('aria-expanded')).resolves.toBe('false');
    await c.screenshot('load-balancers-phone');
    await menu.click();
    await expect(menu.getAttribute('aria-expanded')).resolves.toBe('true');
    await nav.getByRole('link', { name: 'Servers' }).click();
    await c.page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    // The menu closes once a page is chosen.
    await expect(nav.isVisible()).resolves.toBe(false);
  });

  it('shows 100 at a time, and more on asking', async () => {
    for (let i = 0; i < 105; i++) expect((await c.service.api('POST', '/api/v1/object-storage', { name: `bucket-${i}`, region: 'fra1' })).status).toBe(201);
    await c.open('/object-storage');
    await c.page.getByText('100 buckets, newest first; there are more.').waitFor();
    await expect(c.page.locator('tbody tr').count()).resolves.toBe(100);
    await c.page.getByRole('button', { name: 'Show more' }).click();
    await c.page.getByText('105 buckets.').waitFor();
    await expect(c.page.locator('tbody tr').count()).resolves.toBe(105);
    await expect(c.page.getByRole('button', { name: 'Show more' }).count()).resolves.toBe(0);
    await c.page.getByRole('link', { name: 'bucket-0', exact: true }).waitFor();
  });

  it('fills and sends the create form with the keyboard alone, every field labelled', async () => {
    await c.open('/servers/new');
    await c.page.getByLabel('Name').waitFor();
    const unlabelled = await c.page.evaluate<string[]>(
      "[...document.querySelectorAll('main form :is(input, select, textarea)')].filter((el) => el.labels.length === 0).map((el) => el.id)",
    );
    const fields = await c.page.locator('main form :is(input, select, textarea)').count();
    expect(fields).toBeGreaterThanOrEqual(4);
    expect(unlabelled).toEqual([]);
    const tabTo = async (id: string) => {
      for (let i = 0; i < 30 && (await focusedId(c.page)) !== id; i++) await c.page.keyboard.press('Tab');
      expect(await focusedId(c.page)).toBe(id);
    };
    await tabTo('field-name');
    await c.page.keyboard.type('kb-server');
    await tabTo('field-region');
    await c.page.keyboard.press('ArrowDown');
    expect(await c.page.locator('#field-region').inputValue()).not.toBe('');
    await tabTo('field-plan');
    await c.page.keyboard.press('ArrowDown');
    for (let i = 0; i < 10 && (await focusedText(c.page)) !== 'Create server'; i++) await c.page.keyboard.press('Tab');
    expect(await focusedText(c.page)).toBe('Create server');
    await c.page.keyboard.press('Enter');
    await c.page.waitForURL(/#\/servers\/svr_/);
    const created = (await c.service.api('GET', '/api/v1/servers')).body.data.find((s: { name: string }) => s.name === 'kb-server');
    expect(created).toBeDefined();
    expect(created.plan).toBe('s-1vcpu-1gb');
    await c.screenshot('server-detail-phone');
  });
});
