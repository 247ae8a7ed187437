/**
 * The console's pages of alert policies and incidents in a real browser (Debian's Chromium,
 * test/helpers/browser.ts) against the real service. A policy is made through the generic
 * form (its condition a group of fields; a 422 naming `condition.resource_id` shown and
 * focused there), changed and deleted; a file share that fails to provision opens an
 * incident, which turns up in the list without a reload and is acknowledged and resolved
 * from its page, each change announced; incidents offer no create and no delete.
 */
import type { Page } from 'playwright-core';
import { startConsole, ConsoleSession } from '../helpers/browser';
import { eventually } from '../helpers/service';
import { maskedScreenshot } from './page-checks';

jest.setTimeout(180_000);

// File shares always fail to provision here, so a resource_failed policy has something to see.
const ENV = { CLOUDPLANE_SIM_FAILURES: 'file_share=1' };

const focusedId = (page: Page) => page.evaluate<string>("document.activeElement?.id ?? ''");
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

describe('console: alert policies and incidents', () => {
  let policyId: string;

  it('creates an alert policy through the form, its condition a group, a 422 shown next to the field it names', async () => {
    await c.open('/alert-policies');
    await c.page.getByText('No alert policies yet.').waitFor();
    await c.page.getByRole('link', { name: 'New alert policy' }).click();
    await c.page.getByLabel('Name').fill('shares failing');
    const condition = c.page.getByRole('group', { name: 'Condition' });
    // Enum values are offered in words; the value sent is the API's.
    await expect(condition.getByLabel('Type').locator('option[value="resource_failed"]').textContent()).resolves.toBe('resource failed');
    await condition.getByLabel('Type').selectOption('resource_failed');
    await condition.getByLabel('Family').selectOption('server');
    // A load balancer's id for a condition on servers: the API names the field, the form focuses it.
    await condition.getByLabel('Resource ID').fill('lb_0123456789abcdef');
    await c.page.getByRole('button', { name: 'Create alert policy' }).click();
    await c.page.locator('#field-condition-resource_id-error').waitFor();
    await expect(focusedId(c.page)).resolves.toBe('field-condition-resource_id');
    await expect(condition.getByLabel('Resource ID').getAttribute('aria-invalid')).resolves.toBe('true');
    expect((await c.service.api('GET', '/api/v1/alert-policies')).body.data).toEqual([]);

    await condition.getByLabel('Resource ID').fill('');
    await condition.getByLabel('Family').selectOption('file_share');
    await c.page.getByRole('button', { name: 'Create alert policy' }).click();
    await c.page.waitForURL(/#\/alert-policies\/alp_/);
    policyId = new URL(c.page.url()).hash.split('/').pop()!;
    await status(c.page, 'ok').waitFor();
    const policy = (await c.service.api('GET', `/api/v1/alert-policies/${policyId}`)).body.data;
    expect(policy).toMatchObject({ name: 'shares failing', enabled: true, condition: { type: 'resource_failed', family: 'file_share' } });
    expect(policy.condition.resource_id).toBeUndefined();
  });

  it('changes the policy from its PATCH form, sending only what changed', async () => {
    await c.page.getByRole('link', { name: 'Change' }).click();
    await c.page.waitForURL(/\/edit$/);
    await expect(c.page.getByLabel('Name').inputValue()).resolves.toBe('shares failing');
    await c.page.getByLabel('Name').fill('file shares failing');
    await c.page.getByRole('button', { name: 'Review changes' }).click();
    await c.page.getByRole('button', { name: 'Save changes' }).click();
    await c.page.waitForURL(new RegExp(`#/alert-policies/${policyId}$`));
    await c.page.getByRole('heading', { name: 'file shares failing' }).waitFor();
    const policy = (await c.service.api('GET', `/api/v1/alert-policies/${policyId}`)).body.data;
    expect(policy).toMatchObject({ name: 'file shares failing', condition: { type: 'resource_failed', family: 'file_share' } });
  });

  it('shows a new incident in the list without a reload; incidents have no create', async () => {
    await c.open('/incidents');
    await c.page.getByText('No incidents yet.').waitFor();
    await expect(c.page.getByRole('link', { name: 'New incident' }).count()).resolves.toBe(0);
    const share = await c.service.api('POST', '/api/v1/file-storage', { name: 'doomed', region: 'fra1' });
    expect(share.status).toBe(201);
    const row = c.page.locator('tbody tr');
    await row.first().waitFor({ timeout: 30_000 });
    await c.page.getByRole('columnheader', { name: 'Title' }).waitFor();
    await expect(row.locator('.status').textContent()).resolves.toBe('open');
    await expect(row.textContent()).resolves.toContain(share.body.data.id);
    await fitsOnPhone(c.page);
    await maskedScreenshot(c.page, 'incidents');
  });

  it('acknowledges and resolves the incident from its page, each change announced; an incident has no delete', async () => {
    await c.page.locator('tbody tr a').first().click();
    await c.page.waitForURL(/#\/incidents\/inc_/);
    const incidentId = new URL(c.page.url()).hash.split('/').pop()!;
    await status(c.page, 'open').waitFor();
    await expect(c.page.getByRole('button', { name: 'Delete' }).count()).resolves.toBe(0);
    await expect(c.page.getByRole('link', { name: 'Change' }).count()).resolves.toBe(0);
    // The policy and the resource it names read as their names, links to their pages.
    const fields = c.page.locator('dl.fields');
    await fields.getByRole('link', { name: 'file shares failing' }).waitFor();
    await expect(fields.getByRole('link', { name: 'file shares failing' }).getAttribute('href')).resolves.toBe(`#/alert-policies/${policyId}`);
    await fields.getByRole('link', { name: 'doomed' }).waitFor();
    // An enum value of the record reads as words.
    await c.page.locator('dl.fields dd', { hasText: /^resource failed$/ }).waitFor();

    await c.page.getByRole('button', { name: 'Acknowledge' }).click();
    await status(c.page, 'acknowledged').waitFor();
    await c.page
      .getByTestId('announcements')
      .getByText(/^Acknowledge: .* is now acknowledged\.$/)
      .waitFor();
    await expect(c.page.getByRole('button', { name: 'Acknowledge' }).isDisabled()).resolves.toBe(true);
    const acknowledged = (await c.service.api('GET', `/api/v1/incidents/${incidentId}`)).body.data;
    expect(acknowledged).toMatchObject({ status: 'acknowledged', policy_id: policyId });
    expect(acknowledged.acknowledged_by).toEqual(expect.any(String));
    await maskedScreenshot(c.page, 'incident-detail');
    await fitsOnPhone(c.page);

    await c.page.getByRole('button', { name: 'Resolve' }).click();
    await status(c.page, 'resolved').waitFor();
    await c.page
      .getByTestId('announcements')
      .getByText(/^Resolve: .* is now resolved\.$/)
      .waitFor();
    expect((await c.service.api('GET', `/api/v1/incidents/${incidentId}`)).body.data.status).toBe('resolved');
    await expect(c.page.getByRole('button', { name: 'Resolve' }).isDisabled()).resolves.toBe(true);
  });

  it('deletes the policy after a confirmation (Escape keeps it)', async () => {
    await c.open(`/alert-policies/${policyId}`);
    await c.page.getByRole('button', { name: 'Delete' }).click();
    const dialog = c.page.getByRole('dialog', { name: 'Delete file shares failing?' });
    await dialog.waitFor();
    await c.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await c.service.api('GET', `/api/v1/alert-policies/${policyId}`)).body.data.status).not.toBe('deleted');
    await c.page.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Delete alert policy' }).click();
    await c.page.waitForURL(/#\/alert-policies$/);
    await c.page.getByText('No alert policies yet.').waitFor();
    expect((await c.service.api('GET', `/api/v1/alert-policies/${policyId}`)).body.data.status).toBe('deleted');
  });
});
