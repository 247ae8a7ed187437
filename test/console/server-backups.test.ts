/**
 * A server's backups on its page, in a real browser (Debian's Chromium,
 * test/helpers/browser.ts) against the real service on its simulated drivers: one taken by
 * hand, restored onto the server after a confirmation (Escape keeps the disk as it is; the
 * server goes `restoring` and back to `running`, the backup's last restore `succeeded`),
 * and deleted after a confirmation in its row. The same panel as a database's backups
 * (panels/Backups.svelte), which restore into a new database instead.
 */
import type { Page } from 'playwright-core';
import { startConsole, ConsoleSession } from '../helpers/browser';
import { eventually, waitForStatus } from '../helpers/service';
import { maskedScreenshot } from './page-checks';

jest.setTimeout(180_000);

/** The restore itself is held by a simulation fault (below), so the page is seen `restoring`. */
const ENV = { CLOUDPLANE_SIM_DELAY_MS: '1500', CLOUDPLANE_SIMULATION_API: 'true' };

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
});
afterAll(async () => c?.close());
afterEach(() => {
  // No page logged an error (a CSP refusal, an uncaught exception) beyond the API's 4xx answers.
  expect(c.pageErrors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([]);
});

describe("console: a server's backups", () => {
  let serverId: string;

  it('takes a backup by hand and restores it onto the server after a confirmation', async () => {
    const server = await c.service.api('POST', '/api/v1/servers', { name: 'app-1', region: 'fra1' });
    expect(server.status).toBe(201);
    serverId = server.body.data.id;
    await waitForStatus(c.service, `/api/v1/servers/${serverId}`, 'running', 30_000);
    await c.open(`/servers/${serverId}`);
    const backups = c.page.getByRole('region', { name: 'Backups', exact: true });
    await backups.getByText('No backups yet.').waitFor();
    await backups.getByRole('button', { name: 'Take a backup now' }).click();
    await c.page
      .getByTestId('announcements')
      .getByText(/^Backup app-1-.* of app-1 started\.$/)
      .waitFor();
    await backups.locator('.status[data-status="completed"]').waitFor({ timeout: 30_000 });
    await backups.getByText('never restored').waitFor();
    const [backup] = (await c.service.api('GET', `/api/v1/servers/${serverId}/backups`)).body.data;
    expect(backup).toMatchObject({ status: 'completed', trigger: 'manual', server_id: serverId });

    // Escape keeps the disk as it is.
    await backups.getByRole('button', { name: /^Restore onto this server/ }).click();
    const dialog = c.page.getByRole('dialog', { name: `Restore ${backup.name} onto app-1?` });
    await dialog.waitFor();
    await c.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await c.service.api('GET', `/api/v1/servers/${serverId}/backups/${backup.id}`)).body.data.restore_status).toBeNull();

    // The restore is held long enough for the page to be read while it runs, however busy the machine.
    const slowRestore = await c.service.api('POST', '/api/v1/simulation/faults', { family: 'backup', operation: 'restore', delay_ms: 8000 });
    expect(slowRestore.status).toBe(201);
    await backups.getByRole('button', { name: /^Restore onto this server/ }).click();
    await dialog.getByRole('button', { name: 'Restore onto app-1' }).click();
    await status(c.page, 'restoring').waitFor();
    await c.page.getByTestId('announcements').getByText(`Restoring ${backup.name} onto app-1.`).waitFor();
    // While it restores, no other restore is offered.
    await backups.getByRole('button', { name: /^Restore onto this server/, disabled: true }).waitFor();
    await status(c.page, 'running').waitFor({ timeout: 30_000 });
    await backups.getByText('succeeded').waitFor({ timeout: 15_000 });
    expect((await c.service.api('GET', `/api/v1/servers/${serverId}/backups/${backup.id}`)).body.data.restore_status).toBe('succeeded');
    await maskedScreenshot(c.page, 'server-backups');
    await fitsOnPhone(c.page);
  });

  it('deletes a backup after a confirmation in its row', async () => {
    const backups = c.page.getByRole('region', { name: 'Backups', exact: true });
    const [backup] = (await c.service.api('GET', `/api/v1/servers/${serverId}/backups`)).body.data;
    await backups.getByRole('button', { name: `Delete backup ${backup.name}`, exact: true }).click();
    await backups.getByRole('button', { name: 'Keep it' }).click();
    expect((await c.service.api('GET', `/api/v1/servers/${serverId}/backups/${backup.id}`)).body.data.status).toBe('completed');
    await backups.getByRole('button', { name: `Delete backup ${backup.name}`, exact: true }).click();
    await backups.getByRole('button', { name: `Delete backup ${backup.name} for good` }).click();
    await c.page.getByTestId('announcements').getByText(`Deleted backup ${backup.name}.`).waitFor();
    await backups.getByText('No backups yet.').waitFor({ timeout: 15_000 });
  });
});
