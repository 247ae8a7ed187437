/**
 * The web console in a real browser: the real service (in-process, test/helpers/service.ts)
 * serving the built console (dist/console, made by `make build`), and Debian's Chromium
 * driven headless by playwright-core. `startConsole` signs in with the service's printed
 * (bootstrap) API key through the sign-in page, as a person would after `make run`.
 * `screenshot` writes docs/screenshots/<name>.png, for the docs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, Browser, BrowserContext, Page } from 'playwright-core';
import { startTestService, TestService } from './service';
import { packageRoot } from '../../src/lib/package-root';

export const CHROMIUM = process.env.CLOUDPLANE_TEST_CHROMIUM || '/usr/bin/chromium';
/** The repository, from test/helpers (jest) or dist/test/helpers (a built benchmark) alike. */
const REPO = packageRoot(__dirname);
export const CONSOLE_DIR = path.join(REPO, 'dist', 'console');
export const SCREENSHOT_DIR = path.join(REPO, 'docs', 'screenshots');

export interface ConsoleOptions {
  /** Environment of the service (added to the tests' fast defaults). */
  env?: Record<string, string>;
  /** The browser window; a phone is { width: 360, height: 740 }. */
  viewport?: { width: number; height: number };
  /** Sign in with the bootstrap key through the sign-in page (default true). */
  signIn?: boolean;
  /** A running service to use instead of starting one (e.g. one with an identity provider). */
  service?: TestService;
}

export interface ConsoleSession {
  service: TestService;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** The console's address: the service's `/`. */
  url: string;
  /** Opens a console path (`/load-balancers`) in the page. */
  open: (consolePath: string) => Promise<void>;
  /** Writes the page as docs/screenshots/<name>.png. */
  screenshot: (name: string) => Promise<string>;
  /** Messages the page logged as errors (a CSP refusal, an uncaught exception). */
  pageErrors: string[];
  close: () => Promise<void>;
}

function requireBuiltConsole(): void {
  if (!fs.existsSync(path.join(CONSOLE_DIR, 'index.html'))) {
    throw new Error(`The web console is not built (no ${CONSOLE_DIR}/index.html): run \`make build\` first.`);
  }
}

/** Chromium headless; Playwright ends it with the jest worker if a test does not. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Tests run as root in containers, where Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}

/** Signs in on the console's sign-in page with an API key, and waits for the console's frame. */
export async function signInWithKey(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/#/sign-in`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

export async function startConsole(options: ConsoleOptions = {}): Promise<ConsoleSession> {
  requireBuiltConsole();
  // The test's own polls (waitForStatus, every 25 ms) share the key's rate limit with the page
  // it drives: past the limit the page's reads were refused (a create form without its
  // regions, seen in CI). The limit is not what the console tests test; a file that does sets it.
  const service =
    options.service ?? (await startTestService({ CLOUDPLANE_CONSOLE_DIR: CONSOLE_DIR, CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000', ...options.env }));
  const ownsService = !options.service;
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 } });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    if (options.signIn !== false) await signInWithKey(page, service.url, service.key);
    const session: ConsoleSession = {
      service,
      browser,
      context,
      page,
      url: service.url,
      pageErrors,
      open: async (consolePath) => {
        await page.goto(`${service.url}/#${consolePath}`);
      },
      screenshot: (name) => screenshot(page, name),
      close: async () => {
        await browser?.close();
        if (ownsService) await service.stop();
      },
    };
    return session;
  } catch (error) {
    await browser?.close();
    if (ownsService) await service.stop();
    throw error;
  }
}
