/**
 * The console's webhooks, audit log, agent and settings pages in Debian's Chromium, against
 * the real service (in-process, embedded store) and a real webhook receiver on loopback.
 * Sign-in is the embedded default's: the bootstrap API key exchanged for a session cookie
 * on the console's sign-in page. The run writes the pages' screenshots to docs/screenshots/.
 */
import type { Page } from 'playwright-core';
import { eventually, TestService } from '../helpers/service';
import { publishHistory } from '../helpers/audit-history';
import { startReceiver, Receiver } from '../helpers/receiver';
import { launchBrowser, signInWithKey, startConsole, ConsoleSession } from '../helpers/browser';
import { autoPostedForm, checkOnPhone as checkPageOnPhone, maskedScreenshot, sessionCookie } from './page-checks';

jest.setTimeout(180_000);

let t: TestService;
let receiver: Receiver;
let browser: ConsoleSession;
let page: Page;
/** Whether the receiver answers 200 (fixed) or 500 (broken). */
let receiverWorks = false;

// What test/helpers/receiver.ts answers with a status of 300 or more.
const BROKEN_BODY = 'answer 500';

beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: receiverWorks ? 200 : 500 }));
  browser = await startConsole({
    env: {
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // The whole retry schedule (15 attempts) in a second or so, so that the delivery ends failed.
      CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.0005',
    },
  });
  t = browser.service;
  page = browser.page;
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
});

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
});

afterEach(() => {
  // No page of these tests logged an error (a CSP refusal, an uncaught exception).
  expect(browser.pageErrors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([]);
});

const go = (consolePath: string) => browser.open(consolePath);
const screenshot = (_page: Page, name: string) => maskedScreenshot(page, name);
const checkOnPhone = (name: string) => checkPageOnPhone(page, name);

async function createLoadBalancer(name: string): Promise<string> {
  const res = await t.api('POST', '/api/v1/load-balancers', { name, region: 'fra1' });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

describe('webhooks', () => {
  test('the list shows a subscription made elsewhere, pushed by its watch rather than polled', async () => {
    const asked: string[] = [];
    const record = (request: { url(): string }) => asked.push(request.url());
    page.on('request', record);
    try {
      await go('/webhooks');
      await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      const made = await t.api('POST', '/api/v1/webhooks', { url: 'https://pushed.example/hooks', events: ['server.*'] });
      expect(made.status).toBe(201);
      await page.getByRole('link', { name: 'https://pushed.example/hooks' }).waitFor({ timeout: 20_000 });
      expect(asked.some((url) => url.includes('/api/v1/webhooks?watch=true'))).toBe(true);
      expect((await t.api('DELETE', `/api/v1/webhooks/${made.body.data.id}`)).status).toBe(200);
    } finally {
      page.off('request', record);
    }
  });

  test('a failed delivery shows its attempt n/15 and error; after the receiver is fixed, retry delivers it', async () => {
    await go('/webhooks');
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();

    // The API's validation message reaches the form.
    await page.getByLabel('Receiver URL').fill('ftp://example.com/hook');
    await page.getByLabel('Events', { exact: true }).fill('load_balancer.*');
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page.locator('#wh-url-error').waitFor();
    expect(await page.locator('#wh-url-error').textContent()).toMatch(/http/i);
    expect(await page.getByLabel('Receiver URL').getAttribute('aria-invalid')).toBe('true');

    await page.getByLabel('Receiver URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Create subscription' }).click();
    // The signing secret, once.
    const secretField = page.getByLabel('Signing secret', { exact: true });
    await secretField.waitFor();
    expect(await secretField.inputValue()).toMatch(/^whsec_/);
    const webhooks = await t.api('GET', '/api/v1/webhooks');
    const webhook = webhooks.body.data.find((w: { url: string }) => w.url === receiver.url);
    expect(webhook).toBeDefined();
    await page.getByRole('button', { name: 'I have saved it' }).click();
    expect(await secretField.count()).toBe(0);

    const lbId = await createLoadBalancer('hooked-lb');
    // Every attempt of the creation event's delivery fails, up to the 15th.
    const failed = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${webhook.id}/deliveries?status=failed`);
      return res.body.data.find((d: { event_type: string }) => d.event_type === 'load_balancer.created');
    }, 60_000);
    expect(failed.attempt).toBe('15/15');
    expect(receiver.received.length).toBeGreaterThanOrEqual(15);

    // The list counts the subscription's failed deliveries and links to its history.
    await go('/webhooks');
    const failedLink = page.getByRole('link', { name: /failed$/ }).first();
    await failedLink.waitFor({ timeout: 30_000 });
    await screenshot(page, 'webhooks');
    await failedLink.click();

    const row = page.locator(`tr[data-delivery-id="${failed.id}"]`);
    await row.waitFor();
    expect(await row.locator('[data-label="Status"]').textContent()).toContain('failed');
    expect(await row.locator('[data-label="Attempt"]').textContent()).toContain('15/15');
    expect(await row.locator('[data-label="Error"]').textContent()).toContain(`receiver answered status 500: ${BROKEN_BODY}`);
    expect(await row.locator('[data-label="Next retry"]').textContent()).toContain('none');
    // Failed only: the filter leaves out the deliveries that did not fail.
    await page.getByLabel('Show').selectOption('failed');
    await eventually(async () => (await page.locator('tr[data-delivery-id]').count()) > 0 && (await page.locator('tr.succeeded, tr.pending').count()) === 0);
    await screenshot(page, 'webhook-deliveries');
    await checkOnPhone('webhook-deliveries');

    receiverWorks = true;
    const before = receiver.received.length;
    await row.getByRole('button', { name: `Retry delivery ${failed.id} (load_balancer.created)` }).click();
    // The outcome is announced in the page's live region, and the row shows it without a reload.
    await page
      .getByRole('status')
      .filter({ hasText: `Delivery ${failed.id} succeeded on attempt 16/15.` })
      .waitFor({ timeout: 30_000 });
    await page.getByLabel('Show').selectOption('');
    await eventually(async () => (await row.locator('[data-label="Status"]').textContent())?.includes('succeeded'));
    const retried = await t.api('GET', `/api/v1/webhooks/${webhook.id}/deliveries/${failed.id}`);
    expect(retried.body.data).toMatchObject({ status: 'succeeded', attempt: '16/15', response_status: 200, error: null });
    // The receiver got the same delivery id, with the load balancer's event.
    const delivered = receiver.received.slice(before).find((r) => r.headers['x-service-delivery'] === failed.id);
    expect(delivered).toBeDefined();
    expect(JSON.parse(delivered!.body).data.id).toBe(lbId);
  });
});

describe('webhooks: a delivery waiting for its next attempt', () => {
  test('shows pending, attempt 1/15, when the next attempt is due, and the error', async () => {
    // A receiver that asks for a long pause (Retry-After, scaled like the schedule: 80000 s is 40 s here).
    const busy = await startReceiver(() => ({ status: 503, headers: { 'retry-after': '80000' } }));
    try {
      const made = await t.api('POST', '/api/v1/webhooks', { url: busy.url, events: ['server.created'] });
      expect(made.status).toBe(201);
      expect((await t.api('POST', '/api/v1/servers', { name: 'waiting-1', region: 'fra1' })).status).toBe(201);
      const pending = await eventually(async () => {
        const res = await t.api('GET', `/api/v1/webhooks/${made.body.data.id}/deliveries`);
        const delivery = res.body.data[0];
        return delivery?.attempt === '1/15' && delivery.next_retry_at ? delivery : null;
      }, 30_000);
      // The subscription's health is written after the delivery's record (seen in CI: the
      // page read it in between and said healthy); the page shows what the API says.
      await eventually(async () => (await t.api('GET', `/api/v1/webhooks/${made.body.data.id}`)).body.data.endpoint_health?.status === 'failing', 30_000);
      await go(`/webhooks/${made.body.data.id}`);
      const row = page.locator(`tr[data-delivery-id="${pending.id}"]`);
      await row.waitFor();
      expect(await row.locator('[data-label="Status"]').textContent()).toContain('pending');
      expect(await row.locator('[data-label="Attempt"]').textContent()).toContain('1/15');
      expect(await row.locator('[data-label="Next retry"] time').getAttribute('datetime')).toBe(pending.next_retry_at);
      expect(await row.locator('[data-label="Next retry"]').textContent()).toMatch(/\(in \d+ s\)/);
      expect(await row.locator('[data-label="Error"]').textContent()).toContain('receiver answered status 503');
      // The subscription shows its endpoint failing now, long before a delivery runs out of attempts.
      const health = page.locator('[data-endpoint-health]');
      expect(await health.getAttribute('data-endpoint-health')).toBe('failing');
      expect(await health.textContent()).toMatch(/1 failed attempt in a row; disabled after \d+ more/);
      expect(await page.locator('.health-details').textContent()).toContain('receiver answered status 503');
      await go('/webhooks');
      const listed = page.locator(`tr:has(a:text-is("${busy.url}")) [data-endpoint-health]`);
      await listed.waitFor();
      expect(await listed.getAttribute('data-endpoint-health')).toBe('failing');
    } finally {
      await busy.close();
    }
  });
});

describe('audit log', () => {
  test("a search by type and text finds the load balancer's events; a bad filter shows the API's message", async () => {
    const lbId = await createLoadBalancer('audited-lb');
    await eventually(async () => (await t.api('GET', `/api/v1/load-balancers/${lbId}`)).body.data.status === 'running', 30_000);
    await go('/audit-log');
    await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    await page.getByLabel('Event type').fill('load_balancer.*');
    await page.getByLabel('Text').fill('audited-lb');
    await page.getByRole('button', { name: 'Search' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /events? found/ })
      .waitFor();
    const table = page.getByRole('table', { name: 'Events' });
    await eventually(async () => (await table.getByText('load_balancer.running').count()) === 1);
    expect(await table.getByText('load_balancer.created').count()).toBe(1);
    expect(await table.getByRole('button', { name: lbId }).count()).toBe(2);
    // Who acted, by name: the key and its owner for the creation, the service for the state it reached.
    const created = (await t.api('GET', `/api/v1/audit-log?resource_id=${lbId}&type=load_balancer.created`)).body.data[0];
    expect(created.actor_name).not.toBe(created.actor);
    await table.getByRole('button', { name: created.actor_name }).waitFor();
    expect(await table.getByRole('button', { name: 'system', exact: true }).count()).toBe(1);
    await screenshot(page, 'audit-log');
    await checkOnPhone('audit-log');

    // The resource's own history, from its id.
    await table.getByRole('button', { name: lbId }).first().click();
    await eventually(async () => (await page.getByLabel('Resource id').inputValue()) === lbId);
    // Everything one actor did, from their name.
    await table.getByRole('button', { name: created.actor_name }).first().click();
    await eventually(async () => (await page.getByLabel('Actor').inputValue()) === created.actor);

    await page.getByLabel('Event type').fill('not a type');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('#audit-type-error').waitFor();
    expect(await page.getByLabel('Event type').getAttribute('aria-invalid')).toBe('true');
  });

  test('a text search that matches nothing in the newest events goes on when asked, and finds an older one', async () => {
    // More events than ten pages look at (2,000 each), the only match the oldest, two hours ago.
    await publishHistory(t.service.ctx.bus, t.teamId, 21_000, 'needle-in-history', Date.now() - 7_200_000);
    await eventually(async () => (await t.api('GET', '/api/v1/audit-log?q=needle-in-history&order=asc')).body.data.length === 1, 30_000);
    await go('/audit-log');
    await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    // The filters of the test before stay in the form: start from none.
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Text').fill('needle-in-history');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No match yet in the part of the history searched.').waitFor();
    await page.getByRole('button', { name: 'Search further' }).click();
    const table = page.getByRole('table', { name: 'Events' });
    await table.getByText('usage.recorded').waitFor();
    expect(await table.getByText('usage.recorded').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Search further' }).count()).toBe(0);
  });
});

describe('agent', () => {
  test('start a thread, ask a question and read the answer', async () => {
    await go('/agent');
    await page.getByLabel('Title (optional)').fill('Capacity questions');
    await page.getByRole('button', { name: 'Start thread' }).click();
    await page.getByRole('heading', { name: 'Capacity questions', level: 1 }).waitFor();
    const question = 'Which load balancers are not running?';
    await page.getByLabel('Your question').fill(question);
    await page.getByLabel('Your question').press('Control+Enter');
    await page.getByRole('status').filter({ hasText: 'The agent answered.' }).waitFor({ timeout: 30_000 });
    const log = page.getByRole('log', { name: 'Messages' });
    const agentMessage = log.getByRole('article', { name: /^Agent at / });
    await agentMessage.waitFor();
    // The page shows exactly what the API stored as the answer.
    const threads = await t.api('GET', '/api/v1/agent/threads');
    const thread = threads.body.data.find((th: { title: string }) => th.title === 'Capacity questions');
    const messages = await t.api('GET', `/api/v1/agent/threads/${thread.id}/messages`);
    expect(messages.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(messages.body.data[0].content).toBe(question);
    expect(await agentMessage.locator('.content').textContent()).toBe(messages.body.data[1].content);
    expect(messages.body.data[1].content).toMatch(/load balancer/i);
    await screenshot(page, 'agent');
    await checkOnPhone('agent');
  });
});

describe('settings', () => {
  test('an API key is shown once with a copy button, works, and is gone after a reload', async () => {
    await go('/settings/api-keys');
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('deploys');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const keyField = page.getByLabel('API key', { exact: true });
    await keyField.waitFor();
    const key = await keyField.inputValue();
    expect(key).toMatch(/^cpk_[0-9A-Za-z]{40}$/);

    await page.getByRole('button', { name: 'Copy API key' }).click();
    await page.getByRole('status').filter({ hasText: 'API key copied to the clipboard.' }).waitFor();
    // Evaluated in the page (the tests are compiled without the DOM's types).
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
    await screenshot(page, 'api-keys');
    await checkOnPhone('api-keys');

    // Never in storage or the address.
    const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + location.href + document.cookie');
    expect(stored).not.toContain(key);

    // The key works, as curl would use it.
    const regions = await fetch(`${t.url}/api/v1/regions`, { headers: { authorization: `Bearer ${key}` } });
    expect(regions.status).toBe(200);

    await page.reload();
    await page.getByRole('cell', { name: 'deploys', exact: true }).waitFor();
    expect(await page.getByLabel('API key', { exact: true }).count()).toBe(0);
    expect(await page.content()).not.toContain(key);
    // Leaving the page drops it too: make one, go elsewhere, come back.
    await page.getByLabel('Name').fill('temporary');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const second = await page.getByLabel('API key', { exact: true }).inputValue();
    await go('/settings/profile');
    await page.getByRole('heading', { name: 'Profile', level: 1 }).waitFor();
    await go('/settings/api-keys');
    await page.getByRole('cell', { name: 'temporary', exact: true }).waitFor();
    expect(await page.content()).not.toContain(second);

    // Rotate: a new key, shown once; the old one is refused from then on.
    const keys = await t.api('GET', '/api/v1/settings/api-keys');
    const deploys = keys.body.data.find((k: { name: string }) => k.name === 'deploys');
    await page.getByRole('button', { name: `Rotate API key deploys (${deploys.prefix})` }).click();
    await page.getByRole('button', { name: 'Yes, rotate deploys' }).click();
    await page.getByRole('status').filter({ hasText: 'API key deploys rotated' }).waitFor();
    const rotated = await page.getByLabel('API key', { exact: true }).inputValue();
    expect(rotated).not.toBe(key);
    expect((await fetch(`${t.url}/api/v1/regions`, { headers: { authorization: `Bearer ${rotated}` } })).status).toBe(200);
    expect((await fetch(`${t.url}/api/v1/regions`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);

    // Revoke the temporary one.
    const temporary = keys.body.data.find((k: { name: string }) => k.name === 'temporary');
    await page.getByRole('button', { name: `Revoke API key temporary (${temporary.prefix})` }).click();
    await page.getByRole('button', { name: 'Yes, revoke temporary' }).click();
    await page.getByRole('status').filter({ hasText: 'API key temporary' }).waitFor();
    expect((await fetch(`${t.url}/api/v1/regions`, { headers: { authorization: `Bearer ${second}` } })).status).toBe(401);
  });

  test('profile and team: a change shows in the header at once', async () => {
    await go('/settings/profile');
    await page.getByLabel('Name').fill('Olivia Owner');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByRole('status').filter({ hasText: 'Profile saved.' }).waitFor();
    await page.locator('header.top').getByText('Olivia Owner').waitFor();
    expect((await t.api('GET', '/api/v1/settings/profile')).body.data.name).toBe('Olivia Owner');
    // The API's validation message under its field.
    await page.getByLabel('E-mail').fill('nobody');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.locator('#profile-email-error').waitFor();

    await go('/settings/team');
    await page.getByLabel('Team name').fill('Platform team');
    await page.getByRole('button', { name: 'Save team name' }).click();
    await page.getByRole('status').filter({ hasText: 'Team name saved.' }).waitFor();
    await page.locator('header.top').getByText('Platform team').waitFor();
  });

  test("members: invite (with the API's validation message), change the role, remove", async () => {
    await go('/settings/team');
    await page.getByRole('heading', { name: 'Invite a member' }).waitFor();
    await page.getByLabel('E-mail').fill('not-an-address');
    await page.getByRole('button', { name: 'Invite member' }).click();
    await page.locator('#invite-email-error').waitFor();
    expect(await page.locator('#invite-email-error').textContent()).toContain('email');

    await page.getByLabel('E-mail').fill('dana@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Invite member' }).click();
    await page.getByRole('cell', { name: 'dana@example.com', exact: true }).waitFor();
    await page.getByLabel('Role of dana@example.com', { exact: true }).selectOption('admin');
    await page.getByRole('button', { name: 'Change role of dana@example.com' }).click();
    await page.getByRole('status').filter({ hasText: 'is now admin' }).waitFor();
    await screenshot(page, 'members');
    const member = (await t.api('GET', '/api/v1/settings/team/members')).body.data.find((m: { email: string }) => m.email === 'dana@example.com');
    expect(member.role).toBe('admin');

    await page.getByRole('button', { name: 'Remove dana@example.com' }).click();
    await page.getByRole('button', { name: 'Yes, remove dana@example.com' }).click();
    await page.getByRole('status').filter({ hasText: 'removed from the team' }).waitFor();
    expect((await t.api('GET', `/api/v1/settings/team/members/${member.id}`)).status).toBe(404);
  });
});

describe('a read-only session', () => {
  test('reads every page but is offered no write: no create, retry, delete, ask or key forms', async () => {
    const made = await t.api('POST', '/api/v1/settings/api-keys', { name: 'auditor', scope: 'read_only' });
    expect(made.status).toBe(201);
    const other = await launchBrowser();
    try {
      const reader = await (await other.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      await signInWithKey(reader, t.url, made.body.data.key);
      const open = async (consolePath: string, heading: string) => {
        await reader.goto(`${t.url}/#${consolePath}`);
        await reader.getByRole('heading', { name: heading, level: 1 }).waitFor();
      };
      await open('/webhooks', 'Webhooks');
      const webhook = (await t.api('GET', '/api/v1/webhooks')).body.data[0];
      await reader.getByRole('link', { name: webhook.url }).waitFor();
      expect(await reader.getByRole('button', { name: 'Create subscription' }).count()).toBe(0);
      expect(await reader.getByRole('button', { name: /^Delete/ }).count()).toBe(0);
      await reader.getByRole('link', { name: webhook.url }).click();
      await reader.locator('tr[data-delivery-id]').first().waitFor();
      expect(await reader.getByRole('button', { name: /Retry|Pause|Rotate|Delete/ }).count()).toBe(0);
      await open('/agent', 'Agent');
      await reader.getByRole('link', { name: 'Capacity questions' }).click();
      await reader.getByText('Asking writes to the thread').waitFor();
      expect(await reader.getByRole('button', { name: 'Ask' }).count()).toBe(0);
      await open('/settings/api-keys', 'API keys');
      await reader.getByRole('cell', { name: 'auditor', exact: true }).waitFor();
      expect(await reader.getByRole('button', { name: /Create API key|Rotate|Revoke/ }).count()).toBe(0);
      await open('/settings/team', 'Team and members');
      await reader.getByText('Managing members needs an owner or admin').waitFor();
      expect(await reader.getByRole('button', { name: /Invite member|Remove|Change role/ }).count()).toBe(0);
    } finally {
      await other.close();
    }
  });
});

describe('session', () => {
  test('a form posted from another site is refused: Lax keeps the cookie off it, and the service refuses the cookie without the CSRF token', async () => {
    const cookie = await sessionCookie(browser.context, t.url);
    const session = (await fetch(`${t.url}/api/v1/session`, { headers: { cookie } }).then((r) => r.json())) as { data: { csrf_token: string } };
    const csrf = session.data.csrf_token as string;
    // A page that posts a form to the API as soon as it loads, from another site (the
    // browser leaves the SameSite=Lax cookie off a cross-site POST), and from the same site
    // on another port (the cookie goes along; the CSRF token cannot).
    const target = `${t.url}/api/v1/load-balancers`;
    const fields = { name: 'csrf-lb', region: 'fra1' };
    const crossSite = await autoPostedForm(browser.context, '127.0.0.2', target, fields);
    expect(crossSite.status).toBe(401);
    const sameSite = await autoPostedForm(browser.context, '127.0.0.1', target, fields);
    // Refused for want of the token, before the body is read.
    expect(sameSite.status).toBe(403);
    expect(JSON.parse(sameSite.body).error.message).toMatch(/X-CSRF-Token/);

    // The service's own check, without a browser: the cookie alone is refused, with the token accepted.
    const body = JSON.stringify({ name: 'csrf-lb', region: 'fra1' });
    const withoutToken = await fetch(`${t.url}/api/v1/load-balancers`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body });
    expect(withoutToken.status).toBe(403);
    const lbs = await t.api('GET', '/api/v1/load-balancers');
    expect(lbs.body.data.filter((lb: { name: string }) => lb.name === 'csrf-lb')).toEqual([]);
    const withToken = await fetch(`${t.url}/api/v1/load-balancers`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', 'x-csrf-token': csrf },
      body,
    });
    expect(withToken.status).toBe(201);
  });

  test('sign out: the old cookie is refused', async () => {
    const cookie = await sessionCookie(browser.context, t.url);
    expect((await fetch(`${t.url}/api/v1/session`, { headers: { cookie } })).status).toBe(200);
    await go('/webhooks');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Cloudplane' }).waitFor();
    const after = await fetch(`${t.url}/api/v1/session`, { headers: { cookie } });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
  });
});
