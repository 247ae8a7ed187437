/**
 * Sign-in through an OpenID Connect identity provider, with openid-client (a certified
 * relying party): the authorization code flow with PKCE (S256), state and nonce, and the
 * ID token checked by the library (signature, issuer, audience, nonce, expiry).
 *
 * What the flow must remember between the redirect to the provider and the way back (state,
 * nonce, PKCE verifier, where to return) travels in a short-lived HttpOnly cookie, sealed
 * with AES-256-GCM under a key derived from the install's cursor key: any replica can open
 * it, and the browser can neither read nor change it.
 *
 * The provider's metadata is discovered on first need, not at start-up: a provider that is
 * down does not stop the service (API keys keep working); sign-in answers 503
 * provider_unavailable meanwhile, and the next attempt discovers again.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import * as client from 'openid-client';
import type { OidcConfig } from '../config';
import { ApiError } from '../lib/errors';
import { scalarText } from '../lib/unknown-values';

export const FLOW_COOKIE = 'cloudplane_oidc';
/** How long a person may take on the provider's login page. */
export const FLOW_LIFETIME_MS = 10 * 60_000;
const DISCOVERY_TIMEOUT_SECONDS = 10;
const SCOPE = 'openid email profile';

/** What the callback needs to finish the flow the login started. */
export interface SignInFlow {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
  /** Expiry, ms since the epoch. */
  exp: number;
}

/** Why a sign-in could not finish, as the `sign_in_error` the console is sent back with. */
export type SignInFailure = 'invalid_request' | 'access_denied' | 'email_not_verified' | 'provider_unavailable';

export class SignInError extends Error {
  constructor(
    readonly reason: SignInFailure,
    message: string,
  ) {
    super(message);
  }
}

export const providerUnavailable = (cause: string) =>
  new ApiError(
    503,
    'provider_unavailable',
    `The identity provider cannot be reached (${cause}); sign-in is unavailable for now, API keys keep working. Retry later.`,
  );

export class OidcSignIn {
  private configuration: Promise<client.Configuration> | null = null;
  private readonly sealKey: Buffer;

  constructor(
    private readonly settings: OidcConfig,
    /** `<public URL>/auth/callback`; a function, as the default public URL is known once listening. */
    private readonly redirectUri: () => string,
    cursorKey: Buffer,
    private readonly logger: Logger,
  ) {
    this.sealKey = createHmac('sha256', cursorKey).update('cloudplane oidc flow cookie').digest();
  }

  /** Discovers the provider in the background, so the first sign-in need not wait; a failure is only logged. */
  warmUp(): void {
    this.discover().catch(() => undefined);
  }

  /** Where to send the browser, and the flow to keep in its cookie. */
  async begin(returnTo: string): Promise<{ url: string; flow: SignInFlow }> {
    const configuration = await this.discoverOrRefuse();
    const flow: SignInFlow = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      returnTo,
      exp: Date.now() + FLOW_LIFETIME_MS,
    };
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri(),
      scope: SCOPE,
      code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    return { url: url.href, flow };
  }

  /**
   * Exchanges the code of the provider's redirect (the callback's query string) for a
   * checked ID token; returns its verified e-mail. The callback URL is rebuilt on the
   * configured redirect URI, never on the request's Host.
   */
  async finish(query: string, flow: SignInFlow): Promise<string> {
    const callbackUrl = new URL(this.redirectUri());
    callbackUrl.search = query;
    if (flow.exp <= Date.now()) throw new SignInError('invalid_request', 'the sign-in took too long; start again');
    const providerError = callbackUrl.searchParams.get('error');
    if (providerError) throw new SignInError('access_denied', `the identity provider answered ${providerError}`);
    const configuration = await this.discover().catch((err: unknown) => {
      throw new SignInError('provider_unavailable', describe(err));
    });
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      // A provider that cannot be reached is not the person's fault; anything else (state, code, token) is a refused sign-in.
      if (isUnreachable(err)) throw new SignInError('provider_unavailable', describe(err));
      throw new SignInError('invalid_request', describe(err));
    }
    const idToken = tokens.claims();
    if (!idToken) throw new SignInError('invalid_request', 'the provider gave no ID token');
    // Providers that keep the ID token minimal (as OpenID Connect allows) give the e-mail at the UserInfo endpoint, for the same subject.
    const claims = typeof idToken.email === 'string' ? idToken : await this.userInfo(configuration, tokens.access_token, idToken.sub);
    if (typeof claims.email !== 'string')
      throw new SignInError('email_not_verified', 'the identity provider gave no e-mail (is the email scope allowed for this client?)');
    if (claims.email_verified !== true) throw new SignInError('email_not_verified', 'the identity provider has not verified the e-mail');
    return claims.email;
  }

  private async userInfo(configuration: client.Configuration, accessToken: string, subject: string): Promise<{ email?: unknown; email_verified?: unknown }> {
    try {
      return await client.fetchUserInfo(configuration, accessToken, subject);
    } catch (err) {
      if (isUnreachable(err)) throw new SignInError('provider_unavailable', describe(err));
      throw new SignInError('invalid_request', describe(err));
    }
  }

  /** The flow, sealed for its cookie. */
  seal(flow: SignInFlow): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(flow), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  /** The flow a cookie holds, or null when it was not sealed here, was changed, or is not a flow. */
  open(sealed: string | undefined): SignInFlow | null {
    if (!sealed) return null;
    try {
      const raw = Buffer.from(sealed, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', this.sealKey, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      const flow: unknown = JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'));
      return isSignInFlow(flow) ? flow : null;
    } catch {
      return null;
    }
  }

  private async discoverOrRefuse(): Promise<client.Configuration> {
    try {
      return await this.discover();
    } catch (err) {
      throw providerUnavailable(describe(err));
    }
  }

  /** The provider's configuration: one discovery at a time, kept once it worked, tried again on the next need after a failure. */
  private discover(): Promise<client.Configuration> {
    if (this.configuration) return this.configuration;
    const { issuer, clientId, clientSecret } = this.settings;
    // http:// is accepted for a loopback issuer only (config.ts), as in tests and local trials.
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- openid-client's one way to allow http://, deprecated only to stand out
    const execute = issuer.startsWith('http:') ? [client.allowInsecureRequests] : [];
    const attempt = client.discovery(new URL(issuer), clientId, undefined, client.ClientSecretBasic(clientSecret), {
      execute,
      timeout: DISCOVERY_TIMEOUT_SECONDS,
    });
    this.configuration = attempt;
    attempt.then(
      () => {
        this.logger.info({ issuer }, 'identity provider discovered');
      },
      (err: unknown) => {
        if (this.configuration === attempt) this.configuration = null;
        this.logger.warn({ issuer, err: describe(err) }, 'the identity provider cannot be discovered; sign-in answers 503 until it can');
      },
    );
    return attempt;
  }
}

/** The error and its causes, which say what actually failed (openid-client's own message can be "something went wrong"). */
function describe(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; typeof e === 'object' && e !== null && parts.length < 4; e = 'cause' in e ? e.cause : undefined) {
    const message = 'message' in e ? e.message : undefined;
    const code = 'code' in e ? scalarText(e.code) : undefined;
    if (typeof message === 'string' && message) parts.push(code ? `${message} (${code})` : message);
  }
  return parts.join(': ') || String(err);
}

function isUnreachable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const cause = 'cause' in err ? err.cause : undefined;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? cause.code : undefined;
  return (
    (err instanceof TypeError && err.message === 'fetch failed') ||
    (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EAI_AGAIN|UND_ERR)/.test(code)) ||
    ('name' in err && (err.name === 'TimeoutError' || err.name === 'AbortError'))
  );
}

/** A sign-in flow as seal() wrote it: every field there, with its type. */
function isSignInFlow(value: unknown): value is SignInFlow {
  return (
    typeof value === 'object' &&
    value !== null &&
    'state' in value &&
    typeof value.state === 'string' &&
    'nonce' in value &&
    typeof value.nonce === 'string' &&
    'verifier' in value &&
    typeof value.verifier === 'string' &&
    'returnTo' in value &&
    typeof value.returnTo === 'string' &&
    'exp' in value &&
    typeof value.exp === 'number'
  );
}

/** `returnTo` when it is a path of this origin, else `/`: the callback must not send a person elsewhere. */
export function sameOriginPath(returnTo: unknown): string {
  if (typeof returnTo !== 'string' || returnTo.length > 2048 || !returnTo.startsWith('/')) return '/';
  const base = 'http://return.invalid';
  let url: URL;
  try {
    url = new URL(returnTo, base);
  } catch {
    return '/';
  }
  return url.origin === base ? `${url.pathname}${url.search}${url.hash}` : '/';
}
