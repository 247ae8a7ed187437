/**
 * The console's job pages in a real browser (Debian's Chromium, test/helpers/browser.ts)
 * against the real service on its simulated executor: a failed job's page shows its exit
 * code and what it printed (`GET /jobs/{id}/logs`); a scheduled job's page lists its runs,
 * each a link to its own page and output, and pauses and resumes its schedule.
 */
import type { Page } from 'playwright-core';
import { startConsole, ConsoleSession } from '../helpers/browser';
import { eventually } from '../helpers/service';
import { maskedScreenshot } from './page-checks';

jest.setTimeout(180_000);

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
  c = await startConsole();
});
afterAll(async () => c?.close());
afterEach(() => {
  // No page logged an error (a CSP refusal, an uncaught exception) beyond the API's 4xx answers.
  expect(c.pageErrors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([]);
});

describe('console: jobs', () => {
  it('says in the create form what to do with a field, not which API call feeds it', async () => {
    await c.open('/jobs/new');
    const hint = c.page.locator('#field-region-hint');
    await expect(hint.textContent()).resolves.toBe('Where it runs. Only the regions that take new resources are listed; with Default the service chooses.');
    await expect(c.page.getByLabel(/^Region/).getAttribute('aria-describedby')).resolves.toContain('field-region-hint');
    expect(await c.page.content()).not.toContain('GET /api/v1/regions');
  });

  it("shows a failed job's output beside its exit code", async () => {
    const job = await c.service.api('POST', '/api/v1/jobs', {
      name: 'migrate',
      command: "echo 'applying 12 migrations'; echo 'table users is locked'; exit 3",
    });
    expect(job.status).toBe(201);
    await c.open(`/jobs/${job.body.data.id}`);
    await status(c.page, 'failed').waitFor({ timeout: 30_000 });
    const output = c.page.getByRole('region', { name: 'Output' });
    const printed = output.getByLabel(`Output of ${job.body.data.id}`);
    await printed.waitFor();
    await expect(printed.textContent()).resolves.toBe('applying 12 migrations\ntable users is locked\n');
    const logs = await c.service.api('GET', `/api/v1/jobs/${job.body.data.id}/logs`);
    expect(logs.body.data.output).toBe('applying 12 migrations\ntable users is locked\n');
    await c.page.getByRole('paragraph').filter({ hasText: 'the command exited with code 3' }).waitFor();
    await maskedScreenshot(c.page, 'job-failed-output');
    await fitsOnPhone(c.page);
  });

  it("lists a scheduled job's runs with links to their pages, and pauses and resumes its schedule", async () => {
    const job = await c.service.api('POST', '/api/v1/jobs', { name: 'tick', command: 'echo tock', schedule: '* * * * * *', concurrency_policy: 'forbid' });
    expect(job.status).toBe(201);
    const id = job.body.data.id;
    await c.open(`/jobs/${id}`);
    await status(c.page, 'scheduled').waitFor();
    const runs = c.page.getByRole('region', { name: 'Runs' });
    await runs.locator('tbody tr').first().waitFor({ timeout: 30_000 });
    await c.page.getByRole('region', { name: 'Output of the latest run' }).getByRole('link').first().waitFor();
    await expect(c.page.getByRole('button', { name: 'Resume schedule' }).isDisabled()).resolves.toBe(true);

    await c.page.getByRole('button', { name: 'Pause schedule' }).click();
    await status(c.page, 'paused').waitFor();
    await c.page.getByTestId('announcements').getByText('Pause schedule: tick is now paused.').waitFor();
    expect((await c.service.api('GET', `/api/v1/jobs/${id}`)).body.data).toMatchObject({ status: 'paused', next_run_at: null });
    await expect(c.page.getByRole('button', { name: 'Pause schedule' }).isDisabled()).resolves.toBe(true);
    await c.page.getByRole('button', { name: 'Resume schedule' }).click();
    await status(c.page, 'scheduled').waitFor();
    expect((await c.service.api('GET', `/api/v1/jobs/${id}`)).body.data.status).toBe('scheduled');
    await maskedScreenshot(c.page, 'scheduled-job');
    await fitsOnPhone(c.page);

    // A run is a job of its own: its page shows its output.
    // The schedule adds a run every second, so the first row changes under the test: the
    // link is found again by the run's id, wherever the table has moved it since.
    const runId = (await runs.locator('tbody tr a').first().textContent())!.trim();
    await runs.getByRole('link', { name: runId, exact: true }).click();
    await c.page.waitForURL(new RegExp(`#/jobs/${runId}$`));
    await c.page.getByRole('region', { name: 'Output' }).getByLabel(`Output of ${runId}`).waitFor({ timeout: 30_000 });
    await expect(c.page.getByLabel(`Output of ${runId}`).textContent()).resolves.toBe('tock\n');
    await expect(c.page.getByRole('region', { name: 'Runs' }).count()).resolves.toBe(0);
  });
});
