/**
 * The usage and overview pages in a real browser (Debian's Chromium,
 * test/helpers/browser.ts) against the real service: the month's usage of a metric drawn
 * day by day against the team's limits (Chart.js on a canvas, under the service's
 * Content-Security-Policy), in words and in a table that agree with `GET /usage`; and the
 * team's resources by state, drawn and counted, following a change live.
 */
import type { Page } from 'playwright-core';
import { startConsole, ConsoleSession } from '../helpers/browser';
import { eventually, waitForStatus } from '../helpers/service';
import { maskedScreenshot } from './page-checks';

jest.setTimeout(180_000);

// File shares always fail to provision here, so the overview has a failed resource to show.
const ENV = { CLOUDPLANE_SIM_FAILURES: 'file_share=1' };

/** Nothing is wider than a 360 px phone's screen; then back to the desktop size. */
async function fitsOnPhone(page: Page): Promise<void> {
  await page.setViewportSize({ width: 360, height: 740 });
  try {
    await eventually(async () => (await page.evaluate<number>('document.documentElement.scrollWidth')) <= 360);
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
}

/** How many pixels of the page's chart are drawn (not transparent): a chart was drawn, not an empty canvas. */
const drawnPixels = (page: Page) =>
  page.evaluate<number>(
    "(() => { const c = document.querySelector('.chart canvas'); if (!c || !c.width) return 0; const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; })()",
  );

let c: ConsoleSession;
beforeAll(async () => {
  c = await startConsole({ env: ENV });
});
afterAll(async () => c?.close());
afterEach(() => {
  // No page logged an error (a CSP refusal of a script or style, an uncaught exception) beyond the API's 4xx answers.
  expect(c.pageErrors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([]);
});

describe('console: usage and overview', () => {
  it("draws the month's API requests against the team's limits, in words and a table that agree with the API", async () => {
    const put = await c.service.api('PUT', '/api/v1/usage/limits', { limits: { api_requests: { soft: 5, hard: 1_000_000 } } });
    expect(put.status).toBe(200);
    // Past the soft threshold before the page reads it: requests are counted in memory until a
    // flush (CLOUDPLANE_USAGE_FLUSH_SECONDS, src/usage/counters.ts), so the sign-in's few may
    // not be in the month's count yet.
    await eventually(async () => (await c.service.api('GET', '/api/v1/usage')).body.data.api_requests.quantity > 5, 60_000);
    await c.open('/usage');
    await c.page.getByRole('heading', { name: /^Resource-hours, all families in / }).waitFor();
    await c.page.getByLabel('Metric').selectOption('api_requests');
    await c.page.getByRole('heading', { name: /^API requests in / }).waitFor();
    const standing = c.page.getByTestId('usage-standing');
    await expect(standing.textContent()).resolves.toMatch(/^[\d,]+ requests: past the soft threshold of 5, under the hard limit of 1,000,000\.$/);
    await c.page
      .getByTestId('announcements')
      .getByText(/^API requests: [\d,]+ requests: past the soft threshold of 5/)
      .waitFor();
    const chart = c.page.getByRole('img', { name: /^API requests in .*, added up day by day: .* past the soft threshold of 5/ });
    await chart.waitFor();
    await eventually(async () => (await drawnPixels(c.page)) > 1000);

    // The table's last day holds the month's total, which the API answers for the month (a little less: the page's own requests came after).
    await c.page.getByText('The numbers, day by day').click();
    const rows = c.page.getByRole('region', { name: 'Usage by day' }).locator('tbody tr');
    const last = await rows.last().locator('td').nth(2).textContent();
    const shown = Number(last!.replace(/[^\d]/g, ''));
    const month = (await c.service.api('GET', '/api/v1/usage')).body.data.api_requests.quantity;
    expect(shown).toBeGreaterThan(5);
    expect(shown).toBeLessThanOrEqual(month);
    expect(await rows.count()).toBe(new Date().getUTCDate());
    await maskedScreenshot(c.page, 'usage');
    await fitsOnPhone(c.page);
  });

  it("changes one metric's limits from the page, keeping the others", async () => {
    await c.service.api('PUT', '/api/v1/usage/limits', { limits: { api_requests: { soft: 5, hard: 1_000_000 }, resource_hours: { soft: null, hard: 900 } } });
    await c.open('/usage');
    await c.page.getByLabel('Metric').selectOption('api_requests');
    await c.page.getByRole('button', { name: 'Change the limits of API requests' }).click();
    const form = c.page.getByRole('form', { name: 'Limits of API requests' });
    await expect(form.getByLabel(/^Soft threshold/).inputValue()).resolves.toBe('5');
    await form.getByLabel(/^Soft threshold/).fill('1000000000');
    await form.getByLabel(/^Hard limit/).fill('');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await c.page
      .getByTestId('usage-standing')
      .getByText(/^[\d,]+ requests, under its soft threshold 1,000,000,000\.$/)
      .waitFor();
    const saved = (await c.service.api('GET', '/api/v1/usage/limits')).body.data.limits;
    expect(saved.api_requests).toMatchObject({ soft: 1_000_000_000, hard: null });
    expect(saved.resource_hours).toMatchObject({ soft: null, hard: 900 });

    // A soft threshold above the hard limit is the API's 422, shown beside the form, which stays open.
    await c.page.getByRole('button', { name: 'Change the limits of API requests' }).click();
    await form.getByLabel(/^Hard limit/).fill('10');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await form.getByRole('alert').waitFor();
    expect((await c.service.api('GET', '/api/v1/usage/limits')).body.data.limits.api_requests).toMatchObject({ soft: 1_000_000_000, hard: null });
  });

  it("shows the team's resources by state, and follows a change live", async () => {
    const server = await c.service.api('POST', '/api/v1/servers', { name: 'app-1', region: 'fra1' });
    await waitForStatus(c.service, `/api/v1/servers/${server.body.data.id}`, 'running', 30_000);
    await c.open('/overview');
    const servers = c.page.locator('tr[data-family="servers"]');
    await servers.waitFor();
    await expect(servers.locator('td').nth(1).textContent()).resolves.toBe('1');
    await expect(servers.locator('td').nth(2).textContent()).resolves.toBe('1 running');
    await c.page.getByRole('img', { name: /^Resources by state: .*Servers 1 \(1 running\)/ }).waitFor();
    await eventually(async () => (await drawnPixels(c.page)) > 1000);

    // A file share that fails turns up without a reload, announced.
    await c.service.api('POST', '/api/v1/file-storage', { name: 'doomed', region: 'fra1' });
    const shares = c.page.locator('tr[data-family="file-storage"]');
    await shares.getByText('1 failed').waitFor({ timeout: 40_000 });
    await c.page.getByTestId('announcements').getByText('File shares: 1 (1 failed).').waitFor();
    await shares.getByRole('link', { name: 'File shares' }).waitFor();
    await maskedScreenshot(c.page, 'overview');
    await fitsOnPhone(c.page);
  });
});
