/**
 * A console page for every family of the API: the OpenAPI document's paths, grouped by
 * their first segment after /api/v1, each either a family the console shows from
 * `x-cloudplane-families` (its list, detail, create and change pages, console/src/routes.ts
 * and lib/families.ts), a page of its own listed here, or a family listed here with the
 * reason it has no page. A family the API gains without either fails this test. Every page
 * is opened in Debian's Chromium against the real service and must show its heading, no
 * error, and log nothing. Lists show each resource's id beside its name, short and copyable.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startConsole, ConsoleSession, signInWithKey } from '../helpers/browser';
import { eventually, waitForStatus } from '../helpers/service';

jest.setTimeout(180_000);

/** API families with a page of their own (not generic family pages): the console paths that show them. */
const PAGES: Record<string, string[]> = {
  webhooks: ['/webhooks'],
  // The team's deliveries across subscriptions: the failed ones, with retry.
  'webhook-deliveries': ['/webhooks/failed'],
  settings: ['/settings/profile', '/settings/team', '/settings/api-keys'],
  teams: ['/teams'],
  agent: ['/agent'],
  'audit-log': ['/audit-log'],
  usage: ['/usage'],
};

/** API families with no page, and why. */
const NO_PAGE: Record<string, string> = {
  regions: "read by the create forms, which offer the regions that take new resources as the region field's choices",
  'event-types': 'the catalogue of event types, read by the webhook form to suggest what to subscribe to',
  mcp: 'the Model Context Protocol endpoint, for agents and tools, not people',
  session: "who is signed in: the header's team and user, and Sign out",
};

const ROUTES_SOURCE = fs.readFileSync(path.join(__dirname, '..', '..', 'console', 'src', 'routes.ts'), 'utf8');
/** The fixed patterns of console/src/routes.ts (`/webhooks/:id`, ...). */
const FIXED_PATTERNS = [...ROUTES_SOURCE.matchAll(/pattern: '([^']+)'/g)].map((m) => m[1]);
const patternMatches = (pattern: string, consolePath: string) => new RegExp(`^${pattern.replace(/:[a-z_]+/g, '[^/]+')}$`).test(consolePath);

interface PublishedFamily {
  path: string;
  title: string;
  console?: boolean;
}

let c: ConsoleSession;
let families: Map<string, string[]>;
let published: PublishedFamily[];

beforeAll(async () => {
  c = await startConsole();
  await c.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.url });
  const doc = (await c.service.api('GET', '/api/v1/openapi.json')).body;
  families = new Map();
  for (const apiPath of Object.keys(doc.paths)) {
    const family = apiPath.split('/')[3];
    families.set(family, [...(families.get(family) ?? []), apiPath]);
  }
  published = doc['x-cloudplane-families'];
  // The sign-in page's first look for a session was answered 401, as it should be.
  c.pageErrors.length = 0;
});
afterAll(async () => c?.close());
afterEach(() => {
  // No page logged anything: no refused script or style, no uncaught exception, no failed request.
  const logged = c.pageErrors.splice(0);
  expect(logged).toEqual([]);
});

/** The console families' first path segments: their pages are made from the OpenAPI document (routes.ts, for each family). */
const consoleFamilies = () => new Map(published.filter((f) => f.console).map((f) => [f.path.split('/')[0], f]));

/** Opens a page and waits until it has loaded: its heading shown, no "Loading…", no error. */
async function opensCleanly(consolePath: string): Promise<string> {
  await c.open(consolePath);
  const heading = c.page.locator('main h1').first();
  await heading.waitFor();
  await eventually(async () => (await c.page.locator('main').getByText('Loading…').count()) === 0);
  const title = (await heading.textContent())?.trim() ?? '';
  expect({ consolePath, title }).not.toEqual({ consolePath, title: 'Page not found' });
  // An alert region may stand empty, ready for a message; none says anything.
  const alerts = (await c.page.locator('main [role="alert"]').allTextContents()).map((text) => text.trim()).filter(Boolean);
  expect({ consolePath, alerts }).toEqual({ consolePath, alerts: [] });
  return title;
}

describe('console: a page for every route family of the API', () => {
  it('places every family of the OpenAPI document: a console family, a page of its own, or a reason for none', () => {
    const generic = consoleFamilies();
    expect(generic.size).toBeGreaterThan(5);
    const unplaced = [...families.keys()].filter((family) => !generic.has(family) && !PAGES[family] && !NO_PAGE[family]);
    expect(unplaced).toEqual([]);
    // Each listed once, and no entry is left from a family the API no longer has.
    for (const family of [...Object.keys(PAGES), ...Object.keys(NO_PAGE)]) {
      expect({ family, known: families.has(family) }).toEqual({ family, known: true });
      expect({ family, generic: generic.has(family) }).toEqual({ family, generic: false });
    }
    expect(Object.keys(PAGES).filter((family) => NO_PAGE[family])).toEqual([]);
    for (const reason of Object.values(NO_PAGE)) expect(reason.length).toBeGreaterThan(20);
  });

  it('has a route in console/src/routes.ts for every page', () => {
    // The console families' four pages are made for each family the API describes.
    for (const pattern of ['`/${family.path}`', '`/${family.path}/new`', '`/${family.path}/:id`', '`/${family.path}/:id/edit`']) {
      expect(ROUTES_SOURCE).toContain(`pattern: ${pattern}`);
    }
    for (const [family, paths] of Object.entries(PAGES)) {
      for (const consolePath of paths) {
        expect({ family, consolePath, routed: FIXED_PATTERNS.some((p) => patternMatches(p, consolePath)) }).toEqual({ family, consolePath, routed: true });
      }
    }
  });

  it("opens each console family's list in Chromium, from the navigation", async () => {
    for (const [family, published] of consoleFamilies()) {
      await c.open('/overview');
      await c.page.getByRole('navigation').getByRole('link', { name: published.title, exact: true }).click();
      await c.page.waitForURL(new RegExp(`#/${family}$`));
      await expect(opensCleanly(`/${published.path}`)).resolves.toBe(published.title);
    }
  });

  it('opens every page of its own in Chromium', async () => {
    for (const [family, paths] of Object.entries(PAGES)) {
      for (const consolePath of paths) {
        const title = await opensCleanly(consolePath);
        expect({ family, consolePath, title: title.length > 0 }).toEqual({ family, consolePath, title: true });
      }
    }
  });

  it("lists the installation's teams to its admin, and opens one", async () => {
    const team = (await c.service.api('GET', '/api/v1/settings/team')).body.data;
    await opensCleanly('/teams');
    const row = c.page.getByRole('row', { name: new RegExp(team.name) });
    await row.getByRole('link', { name: team.name }).click();
    await c.page.waitForURL(new RegExp(`#/teams/${team.id}$`));
    await expect(opensCleanly(`/teams/${team.id}`)).resolves.toBe(team.name);
    await expect(c.page.locator('dl.fields').textContent()).resolves.toContain(team.owner_id);
  });

  it('links the teams page for an installation admin only, as the session says', async () => {
    await c.open('/overview');
    const nav = c.page.getByRole('navigation', { name: 'Console' });
    await nav.getByRole('link', { name: 'Teams' }).waitFor();
    expect((await c.service.api('GET', '/api/v1/session')).body.data.installation_admin).toBe(true);

    // The owner of another team is no installation admin: no link, and the API agrees.
    const other = await c.service.api('POST', '/api/v1/teams', { name: 'Elsewhere', owner_email: 'owner@elsewhere.example' });
    const otherKey: string = other.body.data.api_key.key;
    expect((await c.service.api('GET', '/api/v1/session', undefined, { key: otherKey })).body.data.installation_admin).toBe(false);
    const context = await c.browser.newContext();
    try {
      const page = await context.newPage();
      await signInWithKey(page, c.url, otherKey);
      const theirNav = page.getByRole('navigation', { name: 'Console' });
      await theirNav.getByRole('link', { name: 'API keys' }).waitFor();
      expect(await theirNav.getByRole('link', { name: 'Teams' }).count()).toBe(0);
    } finally {
      await context.close();
    }
  });
});

describe('console: ids in lists', () => {
  it('shows each resource id beside its name, short and monospace, and copies the whole id', async () => {
    const lb = (await c.service.api('POST', '/api/v1/load-balancers', { name: 'web-1', region: 'fra1' })).body.data;
    await c.open('/load-balancers');
    const row = c.page.getByRole('row', { name: /web-1/ });
    const code = row.locator('code[data-id]');
    await code.waitFor();
    await expect(code.textContent()).resolves.toBe(`${lb.id.slice(0, lb.id.indexOf('_') + 9)}…`);
    await expect(code.getAttribute('title')).resolves.toBe(lb.id);
    // Evaluated in the page (the tests are compiled without the DOM's types).
    await expect(c.page.evaluate(`getComputedStyle(document.querySelector('main code[data-id="${lb.id}"]')).fontFamily`)).resolves.toMatch(/monospace/);
    await row.getByRole('button', { name: 'Copy the id of web-1' }).click();
    await c.page.getByTestId('announcements').getByText(`Copied the id of web-1, ${lb.id}.`).waitFor();
    await expect(c.page.evaluate('navigator.clipboard.readText()')).resolves.toBe(lb.id);

    // The other lists: every row carries its id.
    await c.service.api('POST', '/api/v1/webhooks', { url: 'https://example.com/hook', events: ['server.created'] });
    await c.service.api('POST', '/api/v1/agent/threads', { title: 'ids' });
    const key = (await c.service.api('GET', '/api/v1/settings/api-keys')).body.data[0];
    const me = (await c.service.api('GET', '/api/v1/settings/profile')).body.data;
    const webhook = (await c.service.api('GET', '/api/v1/webhooks')).body.data[0];
    const thread = (await c.service.api('GET', '/api/v1/agent/threads')).body.data[0];
    const team = (await c.service.api('GET', '/api/v1/settings/team')).body.data;
    // A detail page's lists too: a server's backups.
    const server = (await c.service.api('POST', '/api/v1/servers', { name: 'app-1', region: 'fra1' })).body.data;
    await waitForStatus(c.service, `/api/v1/servers/${server.id}`, 'running', 30_000);
    const backup = (await c.service.api('POST', `/api/v1/servers/${server.id}/backups`, {})).body.data;
    for (const [consolePath, id] of [
      [`/servers/${server.id}`, backup.id],
      ['/webhooks', webhook.id],
      ['/agent', thread.id],
      ['/settings/api-keys', key.id],
      ['/settings/team', me.id],
      ['/teams', team.id],
    ]) {
      await c.open(consolePath);
      await expect(c.page.locator(`main code[data-id="${id}"]`).getAttribute('title')).resolves.toBe(id);
    }
  });
});
