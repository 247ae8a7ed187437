/**
 * A real OpenID Connect provider for tests (test/fixtures/oidc-provider.mjs: the certified
 * `oidc-provider` package in a child process on a loopback port), and a way through its
 * own login and consent pages over plain HTTP, so API tests complete the whole flow
 * without a browser: `signInThroughProvider` follows every redirect with a cookie jar and
 * submits the provider's forms as a person would.
 *
 * In a browser (the console's Playwright test), start the provider the same way and point
 * the service at it (CLOUDPLANE_OIDC_ISSUER = provider.issuer, CLOUDPLANE_OIDC_CLIENT_ID /
 * _SECRET = provider.clientId / clientSecret, the provider's redirectUris =
 * [`<service URL>/auth/callback`]). The provider's login page (devInteractions) has a text
 * field with placeholder "Enter any login" (type the account's e-mail), a password field
 * "and password" (anything), a "Sign-in" button, then a consent page with a "Continue"
 * button; after it the browser is back on the console, signed in.
 */
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { spawnTracked } from './processes';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'oidc-provider.mjs');

export interface OidcAccount {
  email: string;
  email_verified: boolean;
  name?: string;
}

export interface OidcProviderOptions {
  /** The service's `<public URL>/auth/callback`. */
  redirectUris: string[];
  accounts: OidcAccount[];
  /** A fixed port (to bring a provider up where a service expects it); default any free one. */
  port?: number;
  clientId?: string;
  clientSecret?: string;
}

export interface OidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The environment that points a service at this provider. */
  serviceEnv: Record<string, string>;
  stop(): Promise<void>;
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const clientId = options.clientId ?? 'cloudplane-console';
  const clientSecret = options.clientSecret ?? `secret-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const settings = { port: options.port ?? 0, clientId, clientSecret, redirectUris: options.redirectUris, accounts: options.accounts };
  const child = spawnTracked(process.execPath, [FIXTURE], {
    env: { ...process.env, OIDC_FIXTURE: JSON.stringify(settings) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const issuer = await issuerOf(child);
  return {
    issuer,
    clientId,
    clientSecret,
    serviceEnv: { CLOUDPLANE_OIDC_ISSUER: issuer, CLOUDPLANE_OIDC_CLIENT_ID: clientId, CLOUDPLANE_OIDC_CLIENT_SECRET: clientSecret },
    stop: () => stopChild(child),
  };
}

function issuerOf(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (chunk) => (err += String(chunk)));
    child.stdout!.on('data', (chunk) => {
      out += String(chunk);
      const line = out.split('\n').find((l) => l.startsWith('{"issuer"'));
      if (line) resolve((JSON.parse(line) as { issuer: string }).issuer);
    });
    child.once('exit', (code) => reject(new Error(`the OpenID provider fixture exited (${code}) before listening: ${err.slice(-2000)}`)));
    child.once('error', reject);
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Cookies by host name, as a browser keeps them (not by port); paths and attributes are not needed here. */
export class CookieJar {
  private readonly byHost = new Map<string, Map<string, string>>();

  header(url: string): string {
    const cookies = this.byHost.get(new URL(url).hostname) ?? new Map<string, string>();
    return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  get(url: string, name: string): string | undefined {
    return this.byHost.get(new URL(url).hostname)?.get(name);
  }

  set(url: string, name: string, value: string): void {
    const host = new URL(url).hostname;
    if (!this.byHost.has(host)) this.byHost.set(host, new Map());
    this.byHost.get(host)!.set(name, value);
  }

  store(url: string, response: Response): void {
    const host = new URL(url).hostname;
    if (!this.byHost.has(host)) this.byHost.set(host, new Map());
    const cookies = this.byHost.get(host)!;
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      const expired = attributes.some((a) => /^max-age=0$/i.test(a) || (/^expires=/i.test(a) && Date.parse(a.slice(8)) <= Date.now()));
      if (expired || value === '') cookies.delete(name);
      else cookies.set(name, value);
    }
  }
}

export interface SignInResult {
  /** The last answer: the service's callback redirect, or whatever stopped the flow earlier (a 503 from /auth/login). */
  response: Response;
  /** Where that answer redirects, if it does. */
  location: string | null;
  jar: CookieJar;
  /** The session cookie's value, when the sign-in gave one. */
  session?: string;
}

export interface SignInOptions {
  returnTo?: string;
  jar?: CookieJar;
  /** Changes the provider's redirect back to the service before it is followed (to tamper with state or code). */
  alterCallback?: (callback: URL) => URL;
}

/**
 * Signs `login` (an account's e-mail) in through the service's /auth/login, the provider's
 * login and consent pages, and back to the service's /auth/callback, over plain HTTP.
 */
export async function signInThroughProvider(serviceUrl: string, login: string, options: SignInOptions = {}): Promise<SignInResult> {
  const jar = options.jar ?? new CookieJar();
  const service = new URL(serviceUrl);
  let url = `${serviceUrl}/auth/login${options.returnTo !== undefined ? `?return_to=${encodeURIComponent(options.returnTo)}` : ''}`;
  let form: string | undefined;
  for (let step = 0; step < 20; step++) {
    const target = new URL(url);
    const isCallback = target.origin === service.origin && target.pathname === '/auth/callback';
    if (isCallback && options.alterCallback) url = options.alterCallback(target).href;
    const response = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST',
      body: form,
      redirect: 'manual',
      headers: { cookie: jar.header(url), ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
    });
    jar.store(url, response);
    form = undefined;
    const location = response.headers.get('location');
    if (isCallback || (response.status >= 400 && target.origin === service.origin)) {
      await response.body?.cancel();
      return { response, location, jar, session: jar.get(serviceUrl, 'cloudplane_session') };
    }
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      url = new URL(location, url).href;
      continue;
    }
    const page = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
    const prompt = /name="prompt" value="([a-z]+)"/.exec(page)?.[1];
    if (response.status !== 200 || !action || !prompt)
      throw new Error(`the provider answered ${response.status} at ${url} without a form to fill: ${page.slice(0, 500)}`);
    form = new URLSearchParams(prompt === 'login' ? { prompt, login, password: 'any password' } : { prompt }).toString();
    url = new URL(action.replace(/&amp;/g, '&'), url).href;
  }
  throw new Error('the sign-in did not come back to the service within 20 steps');
}
