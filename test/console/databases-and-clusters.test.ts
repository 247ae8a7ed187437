/**
 * The console's pages of databases and Kubernetes clusters in a real browser (Debian's
 * Chromium, test/helpers/browser.ts) against the real service on its simulated drivers.
 * Databases: create through the generic form (a list of trusted sources among its fields),
 * the administrator password shown once with a copy button and gone after a reload (and
 * never in storage or the address), the connection details, users (each password shown
 * once), logical databases, trusted sources, and a backup restored into a new database.
 * Clusters: create through the form with a node pool (a list of objects, with a map of
 * labels), the kubeconfig download disabled until running and then saved as
 * `<name>-kubeconfig.yaml` (parsed here: the cluster's server), scale, add and delete a
 * pool, upgrade, and rotate the credential after a confirmation (the old token goes).
 */
import fs from 'node:fs';
import YAML from 'yaml';
import type { Page } from 'playwright-core';
import { startConsole, ConsoleSession } from '../helpers/browser';
import { eventually, waitForStatus } from '../helpers/service';
import { chooseRegion, maskedScreenshot } from './page-checks';

jest.setTimeout(180_000);

/** Provisioning takes long enough that the pages show `creating` before `running`. */
const ENV = { CLOUDPLANE_SIM_DELAY_MS: '1500' };

// The page's own expressions are strings: the tests are compiled without the DOM's types.
const storedByThePage = (page: Page) =>
  page.evaluate<string>('JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie, url: location.href })');
const focusedId = (page: Page) => page.evaluate<string>("document.activeElement?.id ?? ''");
const region = (name: string) => c.page.getByRole('region', { name, exact: true });
const status = (page: Page, state: string) => page.locator('.page-head .status', { hasText: new RegExp(`^${state}$`) });

/** Nothing is wider than a 360 px phone's screen; then back to the desktop size. */
async function fitsOnPhone(page: Page): Promise<void> {
  await page.setViewportSize({ width: 360, height: 740 });
  try {
    await eventually(async () => (await page.evaluate<number>('document.documentElement.scrollWidth')) <= 360);
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
}

let c: ConsoleSession;
beforeAll(async () => {
  c = await startConsole({ env: ENV });
  await c.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.url });
});
afterAll(async () => c?.close());
afterEach(() => {
  // No page logged an error (a CSP refusal, an uncaught exception) beyond the API's 4xx answers.
  expect(c.pageErrors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([]);
});

describe('console: databases', () => {
  let databaseId: string;
  let password: string;

  it('creates a database through the form, with a trusted source, and shows its password once with a copy button', async () => {
    await c.open('/databases');
    await c.page.getByText('No databases yet.').waitFor();
    await c.page.getByRole('link', { name: 'New database' }).click();
    await c.page.getByLabel('Name').fill('orders');
    await chooseRegion(c.page, 'fra1');
    await c.page.getByLabel('Num nodes').fill('2');
    // A list of objects: one trusted source, added by its button, the focus moving into it.
    const sources = c.page.getByRole('group', { name: 'Trusted sources' });
    await sources.getByRole('button', { name: 'Add trusted source' }).click();
    await expect(focusedId(c.page)).resolves.toBe('field-trusted_sources-0-type');
    const first = sources.getByRole('group', { name: 'Trusted source 1' });
    await first.getByLabel('Type').selectOption('ip_addr');
    await first.getByLabel('Value').fill('10.0.0.0/8');
    await c.page.getByRole('button', { name: 'Create database' }).click();
    await c.page.waitForURL(/#\/databases\/db_/);
    databaseId = new URL(c.page.url()).hash.split('/').pop()!;

    const secret = c.page.getByLabel('Password', { exact: true });
    await secret.waitFor();
    password = await secret.inputValue();
    expect(password).toMatch(/^[A-Za-z0-9]{32}$/);
    await c.page.getByText('You will not see it again.').waitFor();
    await c.page.getByRole('button', { name: 'Copy password' }).click();
    await c.page.getByText('password copied to the clipboard.').waitFor();
    await expect(c.page.evaluate<string>('navigator.clipboard.readText()')).resolves.toBe(password);
    // Kept nowhere but the page's state.
    expect(await storedByThePage(c.page)).not.toContain(password);

    const record = (await c.service.api('GET', `/api/v1/databases/${databaseId}`)).body.data;
    expect({ name: record.name, num_nodes: record.num_nodes, trusted_sources: record.trusted_sources }).toEqual({
      name: 'orders',
      num_nodes: 2,
      trusted_sources: [{ type: 'ip_addr', value: '10.0.0.0/8' }],
    });
    expect(JSON.stringify(record)).not.toContain(password);
  });

  it('shows the connection details once it runs, and the password is gone after a reload', async () => {
    await status(c.page, 'running').waitFor({ timeout: 30_000 });
    const record = await waitForStatus(c.service, `/api/v1/databases/${databaseId}`, 'running');
    const connection = region('Connection');
    for (const value of [record.connection.host, String(record.connection.port), 'dbadmin', 'defaultdb', record.connection.ssl_mode, record.connection.uri])
      await connection.getByText(value, { exact: true }).first().waitFor();
    await connection.getByText('Standby nodes: 1 of 1 following the primary').waitFor();

    await c.page.reload();
    await c.page.getByRole('heading', { name: 'orders', level: 1 }).waitFor();
    await connection.getByText(record.connection.uri, { exact: true }).waitFor();
    await expect(c.page.getByLabel('Password', { exact: true }).count()).resolves.toBe(0);
    expect(await c.page.content()).not.toContain(password);
    expect(await storedByThePage(c.page)).not.toContain(password);
    await fitsOnPhone(c.page);
  });

  it('resets the administrator password after a confirmation, showing the new one once', async () => {
    await c.page.getByRole('button', { name: 'Reset administrator password' }).click();
    const dialog = c.page.getByRole('dialog', { name: 'Reset the administrator password of orders?' });
    await dialog.getByRole('button', { name: 'Reset password' }).click();
    const secret = c.page.getByLabel('Administrator password', { exact: true });
    await secret.waitFor();
    const next = await secret.inputValue();
    expect(next).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(next).not.toBe(password);
    await c.page.getByRole('button', { name: 'I have saved it' }).click();
    await secret.waitFor({ state: 'detached' });
    expect(await c.page.content()).not.toContain(next);
  });

  it('adds a user, its password shown once, resets it and removes the user', async () => {
    const users = region('Users');
    await users.getByLabel('User name').fill('Not-Valid');
    await users.getByRole('button', { name: 'Add user' }).click();
    await c.page.locator('#db-user-name-error').waitFor();
    await expect(users.getByLabel('User name').getAttribute('aria-invalid')).resolves.toBe('true');

    await users.getByLabel('User name').fill('app');
    await users.getByRole('button', { name: 'Add user' }).click();
    const secret = users.getByLabel('User password', { exact: true });
    await secret.waitFor();
    const first = await secret.inputValue();
    expect(first).toMatch(/^[A-Za-z0-9]{32}$/);
    await users.getByRole('row', { name: /app/ }).waitFor();
    const listed = (await c.service.api('GET', `/api/v1/databases/${databaseId}/users`)).body.data;
    expect(listed).toEqual([
      { name: 'dbadmin', role: 'primary' },
      { name: 'app', role: 'normal' },
    ]);

    await users.getByRole('button', { name: 'Reset password of app' }).click();
    await users.getByRole('button', { name: 'Yes, reset the password of app' }).click();
    await eventually(async () => (await secret.inputValue().catch(() => first)) !== first);
    expect(await secret.inputValue()).toMatch(/^[A-Za-z0-9]{32}$/);

    await users.getByRole('button', { name: 'Remove user app' }).click();
    await users.getByRole('button', { name: 'Yes, remove app' }).click();
    await users.getByRole('row', { name: /app/ }).waitFor({ state: 'detached' });
    expect((await c.service.api('GET', `/api/v1/databases/${databaseId}/users`)).body.data).toEqual([{ name: 'dbadmin', role: 'primary' }]);
    // Another page: the password shown is dropped with the page.
    await c.open('/databases');
    await c.page.getByRole('link', { name: 'orders' }).click();
    await region('Users').waitFor();
    await expect(c.page.getByLabel('User password', { exact: true }).count()).resolves.toBe(0);
  });

  it('adds and removes a logical database', async () => {
    const dbs = region('Logical databases');
    await dbs.getByLabel('Database name').fill('reports');
    await dbs.getByRole('button', { name: 'Add logical database' }).click();
    await dbs.getByText('reports', { exact: true }).waitFor();
    expect((await c.service.api('GET', `/api/v1/databases/${databaseId}/dbs`)).body.data).toEqual([{ name: 'defaultdb' }, { name: 'reports' }]);
    // defaultdb cannot be removed: no button is offered.
    await expect(dbs.getByRole('button', { name: 'Remove logical database defaultdb' }).count()).resolves.toBe(0);
    await dbs.getByRole('button', { name: 'Remove logical database reports' }).click();
    await dbs.getByRole('button', { name: 'Yes, remove reports and everything in it' }).click();
    await dbs.getByText('reports', { exact: true }).waitFor({ state: 'detached' });
    expect((await c.service.api('GET', `/api/v1/databases/${databaseId}/dbs`)).body.data).toEqual([{ name: 'defaultdb' }]);
  });

  it('edits the trusted sources: a bad block is refused next to its field, a good one added, one removed', async () => {
    const trusted = region('Trusted sources');
    await trusted.locator('code', { hasText: '10.0.0.0/8' }).waitFor();
    await trusted.getByLabel('Address or block').fill('10.0.0.1/8');
    await trusted.getByRole('button', { name: 'Add source' }).click();
    await c.page.locator('#trusted-error').waitFor();
    await expect(trusted.getByLabel('Address or block').getAttribute('aria-invalid')).resolves.toBe('true');
    await trusted.getByLabel('Address or block').fill('203.0.113.7');
    await trusted.getByRole('button', { name: 'Add source' }).click();
    await trusted.locator('code', { hasText: '203.0.113.7' }).waitFor();
    await trusted.getByRole('button', { name: 'Remove 10.0.0.0/8' }).click();
    await trusted.locator('code', { hasText: '10.0.0.0/8' }).waitFor({ state: 'detached' });
    expect((await c.service.api('GET', `/api/v1/databases/${databaseId}`)).body.data.trusted_sources).toEqual([{ type: 'ip_addr', value: '203.0.113.7' }]);
  });

  it("changes the database from its PATCH form, a list field starting from the record's items", async () => {
    await c.page.getByRole('link', { name: 'Change' }).click();
    await c.page.waitForURL(/\/edit$/);
    const sources = c.page.getByRole('group', { name: 'Trusted sources' });
    await expect(sources.getByRole('group', { name: 'Trusted source 1' }).getByLabel('Value').inputValue()).resolves.toBe('203.0.113.7');
    await c.page.getByLabel('Storage GB').fill('20');
    await sources.getByRole('button', { name: 'Add trusted source' }).click();
    const second = sources.getByRole('group', { name: 'Trusted source 2' });
    await second.getByLabel('Type').selectOption('ip_addr');
    await second.getByLabel('Value').fill('198.51.100.0/24');
    await c.page.getByRole('button', { name: 'Review changes' }).click();
    await c.page.getByRole('button', { name: 'Save changes' }).click();
    await c.page.waitForURL(new RegExp(`#/databases/${databaseId}$`));
    await eventually(async () => (await c.service.api('GET', `/api/v1/databases/${databaseId}`)).body.data.storage_gb === 20);
    const record = (await c.service.api('GET', `/api/v1/databases/${databaseId}`)).body.data;
    expect({ size: record.size, trusted_sources: record.trusted_sources }).toEqual({
      size: 'db-s-1vcpu-1gb',
      trusted_sources: [
        { type: 'ip_addr', value: '203.0.113.7' },
        { type: 'ip_addr', value: '198.51.100.0/24' },
      ],
    });
    await status(c.page, 'running').waitFor({ timeout: 30_000 });
  });

  it('takes a backup and restores it into a new database, whose password is shown once on its page', async () => {
    const backups = region('Backups');
    await backups.getByRole('button', { name: 'Take a backup now' }).click();
    await backups.locator('.status[data-status="completed"]').waitFor({ timeout: 30_000 });
    await maskedScreenshot(c.page, 'database-detail');
    await backups.getByRole('button', { name: /^Restore into a new database/ }).click();
    await backups.getByLabel('New database name').fill('orders-copy');
    await backups.getByRole('button', { name: 'Restore', exact: true }).click();
    await c.page.waitForURL((url) => /#\/databases\/db_/.test(url.hash) && !url.hash.endsWith(databaseId));
    await c.page.getByRole('heading', { name: 'orders-copy', level: 1 }).waitFor();
    const secret = c.page.getByLabel('Password', { exact: true });
    expect(await secret.inputValue()).toMatch(/^[A-Za-z0-9]{32}$/);
    const copy = (await c.service.api('GET', '/api/v1/databases')).body.data.find((d: { name: string }) => d.name === 'orders-copy');
    expect(copy.backup_restore.backup_id).toMatch(/^bkp_/);
  });
});

describe('console: Kubernetes clusters', () => {
  let clusterId: string;
  let firstToken: string;

  const nodePools = () => region('Node pools');

  async function downloadKubeconfig(): Promise<{ name: string; yaml: string }> {
    const [download] = await Promise.all([c.page.waitForEvent('download'), c.page.getByRole('button', { name: 'Download kubeconfig' }).click()]);
    const file = await download.path();
    return { name: download.suggestedFilename(), yaml: fs.readFileSync(file, 'utf8') };
  }

  it('creates a cluster with a node pool and its labels through the form', async () => {
    await c.open('/kubernetes-clusters/new');
    await c.page.locator('#field-name').fill('prod');
    await chooseRegion(c.page, 'fra1');
    await c.page.locator('#field-version').selectOption('1.33');
    // The list needs one pool: the form starts with it, and it cannot be removed.
    const pool = c.page.getByRole('group', { name: 'Node pool 1' });
    await expect(c.page.getByRole('button', { name: 'Remove node pool 1' }).isDisabled()).resolves.toBe(true);
    await pool.getByLabel('Name').fill('workers');
    await pool.getByLabel('Size').selectOption('s-2vcpu-4gb');
    await pool.getByLabel('Count').fill('0');
    await pool.getByRole('button', { name: 'Add label' }).click();
    await expect(focusedId(c.page)).resolves.toBe('field-node_pools-0-labels-0-key');
    await c.page.keyboard.type('tier');
    await pool.getByLabel('Label 1 value').fill('web');
    await c.page.getByRole('button', { name: 'Create Kubernetes cluster' }).click();
    // The API's 422 names node_pools[0].count: shown next to that field, which is focused.
    await c.page.locator('#field-node_pools-0-count-error').waitFor();
    await expect(focusedId(c.page)).resolves.toBe('field-node_pools-0-count');
    await pool.getByLabel('Count').fill('2');
    await c.page.getByRole('button', { name: 'Create Kubernetes cluster' }).click();
    await c.page.waitForURL(/#\/kubernetes-clusters\/k8s_/);
    clusterId = new URL(c.page.url()).hash.split('/').pop()!;
    const record = (await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}`)).body.data;
    expect(record.node_pools.map((p: { name: string; size: string; count: number; labels: object }) => [p.name, p.size, p.count, p.labels])).toEqual([
      ['workers', 's-2vcpu-4gb', 2, { tier: 'web' }],
    ]);
  });

  it('offers the kubeconfig only once the cluster runs, then saves it as <name>-kubeconfig.yaml with the cluster server', async () => {
    const button = c.page.getByRole('button', { name: 'Download kubeconfig' });
    if ((await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}`)).body.data.status === 'creating') {
      await expect(button.isDisabled()).resolves.toBe(true);
      await c.page.getByText('The kubeconfig can be downloaded once the cluster is running.').waitFor();
    }
    await status(c.page, 'running').waitFor({ timeout: 30_000 });
    await expect(button.isEnabled()).resolves.toBe(true);
    const record = (await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}`)).body.data;
    await region('Access').getByText(record.endpoint).waitFor();
    await nodePools()
      .getByRole('row', { name: /workers/ })
      .getByText('2 of 2 ready')
      .waitFor();

    const { name, yaml } = await downloadKubeconfig();
    expect(name).toBe('prod-kubeconfig.yaml');
    const kubeconfig = YAML.parse(yaml);
    expect(kubeconfig.kind).toBe('Config');
    expect(kubeconfig.clusters[0].cluster.server).toBe(record.endpoint);
    firstToken = kubeconfig.users[0].user.token;
    expect(firstToken).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(await c.page.content()).not.toContain(firstToken);
    expect(await storedByThePage(c.page)).not.toContain(firstToken);
    await fitsOnPhone(c.page);
  });

  it('scales a pool, adds one and deletes it', async () => {
    await nodePools().getByLabel('Nodes in workers').fill('3');
    await nodePools().getByRole('button', { name: 'Scale workers' }).click();
    await nodePools()
      .getByRole('row', { name: /workers/ })
      .getByText('3 of 3 ready')
      .waitFor({ timeout: 30_000 });
    expect((await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}/node-pools/workers`)).body.data.count).toBe(3);

    const form = nodePools().locator('form').last();
    await form.getByLabel('Name').fill('batch');
    await form.getByLabel('Size').selectOption('s-1vcpu-2gb');
    await form.getByLabel('Count').fill('1');
    await nodePools().getByRole('button', { name: 'Add node pool' }).click();
    await nodePools().getByRole('row', { name: /batch/ }).getByText('1 of 1 ready').waitFor({ timeout: 30_000 });
    await nodePools().getByRole('button', { name: 'Delete node pool batch' }).click();
    await nodePools().getByRole('button', { name: 'Yes, delete batch' }).click();
    await nodePools().getByRole('row', { name: /batch/ }).waitFor({ state: 'detached' });
    const pools = (await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}/node-pools`)).body.data;
    expect(pools.map((p: { name: string }) => p.name)).toEqual(['workers']);
    // The last pool cannot be deleted: its button is disabled, and says why.
    const last = nodePools().getByRole('button', { name: 'Delete node pool workers' });
    await expect(last.isDisabled()).resolves.toBe(true);
    await expect(last.getAttribute('aria-describedby')).resolves.toBe('last-pool-hint');
    await nodePools().getByText('A cluster keeps at least one node pool').waitFor();
  });

  it('upgrades to a newer version', async () => {
    const access = region('Access');
    await access.getByLabel('Upgrade to').selectOption('1.34');
    await access.getByRole('button', { name: 'Upgrade', exact: true }).click();
    await eventually(async () => (await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}`)).body.data.version === '1.34', 30_000);
    await status(c.page, 'running').waitFor({ timeout: 30_000 });
    await access.getByText('Kubernetes 1.34 is the newest version offered.').waitFor();
    await maskedScreenshot(c.page, 'kubernetes-cluster-detail');
  });

  it('rotates the credential after a confirmation: the kubeconfig then holds a new token', async () => {
    const dialog = c.page.getByRole('dialog', { name: 'Rotate the credential of prod?' });
    // Escape keeps the credential.
    await c.page.getByRole('button', { name: 'Rotate credential' }).click();
    await dialog.waitFor();
    await c.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    const before = (await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}`)).body.data.updated_at;
    await c.page.getByRole('button', { name: 'Rotate credential' }).click();
    await dialog.getByRole('button', { name: 'Rotate credential' }).click();
    await c.page
      .getByTestId('announcements')
      .getByText(/prod has a new credential/)
      .waitFor();
    expect((await c.service.api('GET', `/api/v1/kubernetes-clusters/${clusterId}`)).body.data.updated_at).not.toBe(before);
    await eventually(
      async () => {
        const { yaml } = await downloadKubeconfig();
        return YAML.parse(yaml).users[0].user.token !== firstToken;
      },
      30_000,
      500,
    );
  });
});
