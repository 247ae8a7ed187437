/**
 * Checks the console's browser tests share (test/console/pages.test.ts and
 * walkthrough.test.ts): a masked screenshot, the 360 px phone check, the session cookie as
 * a Cookie header, and a page of another origin that auto-posts a form to the API.
 */
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { SCREENSHOT_DIR } from '../helpers/browser';
import { eventually } from '../helpers/service';

/**
 * Chooses a region in a create form. The field is a text input until GET /regions has
 * answered and a select after: choosing at once raced that answer on a busy machine.
 */
export async function chooseRegion(page: Page, region: string): Promise<void> {
  const select = page.locator('select#field-region');
  await select.waitFor();
  await select.selectOption(region);
}

/** docs/screenshots/<name>.png; a secret the page shows once is masked, so that none is committed. */
export async function maskedScreenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true, mask: [page.locator('.once-secret input')] });
}

/**
 * The page as a 360 px wide phone shows it: nothing wider than the screen (tables turn into
 * one card per row), written as docs/screenshots/<name>-phone.png; then back to `restore`.
 */
export async function checkOnPhone(page: Page, name: string, restore = { width: 1280, height: 800 }): Promise<void> {
  await page.setViewportSize({ width: 360, height: 740 });
  try {
    // Evaluated in the page (the tests are compiled without the DOM's types).
    await eventually(async () => (await page.evaluate<number>('document.documentElement.scrollWidth')) <= 360);
    await maskedScreenshot(page, `${name}-phone`);
  } finally {
    await page.setViewportSize(restore);
  }
}

/** The session cookie as a Cookie header, for requests made outside the browser. */
export async function sessionCookie(context: BrowserContext, url: string): Promise<string> {
  const cookie = (await context.cookies(url)).find((c) => c.name === 'cloudplane_session');
  if (!cookie) throw new Error('no session cookie');
  return `${cookie.name}=${cookie.value}`;
}

export interface FormPostAnswer {
  status: number;
  body: string;
}

/**
 * Opens, in a new tab, a page served from `http://<host>:<port>/` that posts a form to
 * `target` as soon as it loads (a top-level navigation, as a forged form would), and
 * returns the service's answer to that POST. 127.0.0.2 is another site than the service's
 * 127.0.0.1; 127.0.0.1 on another port is the same site, another origin.
 */
export async function autoPostedForm(context: BrowserContext, host: string, target: string, fields: Record<string, string>): Promise<FormPostAnswer> {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input name="${name}" value="${value}">`)
    .join('');
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><form method="POST" action="${target}">${inputs}</form><script>document.forms[0].submit()</script>`);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const tab = await context.newPage();
  try {
    const answered = tab.waitForResponse((r) => r.url() === target && r.request().method() === 'POST');
    await tab.goto(`http://${host}:${(server.address() as AddressInfo).port}/`);
    const response = await answered;
    return { status: response.status(), body: await response.text() };
  } finally {
    await tab.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
