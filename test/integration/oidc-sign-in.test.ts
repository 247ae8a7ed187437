/**
 * Sign-in through a real OpenID Connect provider (the certified oidc-provider package, in
 * a child process on loopback), over real HTTP, through the provider's own login and
 * consent pages: the service is started while the provider is still down (sign-in answers
 * 503 provider_unavailable, API keys keep working), then the provider comes up where the
 * service expects it and discovery is retried. A person whose verified e-mail is a user of
 * two teams signs in, uses the cookie across /api/v1 and switches team; an unknown or
 * unverified e-mail, a tampered state and a missing flow cookie are refused.
 */
import { Writable } from 'node:stream';
import { freePort } from '../helpers/kube-apiserver';
import { eventually, FAST_ENV, request, tempDataDir } from '../helpers/service';
import { clusterEnv, clusterMode } from '../helpers/cluster';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService, RunningService } from '../../src/service';
import { CookieJar, OidcProvider, signInThroughProvider, startOidcProvider } from '../helpers/oidc-provider';

jest.setTimeout(120_000);

const CLIENT = { clientId: 'cloudplane-test', clientSecret: 'a-client-secret-of-the-test-provider' };
const ALICE = 'alice@example.com';

/** The service, logging at trace level into memory, so the test can look for credentials in its log. */
async function startLogged(env: Record<string, string>) {
  const dataDir = tempDataDir();
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const cluster = clusterMode() ? await clusterEnv(dataDir) : {};
  const config = loadConfig({ ...FAST_ENV, CLOUDPLANE_PORT: '0', CLOUDPLANE_DATA_DIR: dataDir, ...cluster, ...env, CLOUDPLANE_LOG_LEVEL: 'trace' });
  const service: RunningService = await startService(config, createLogger('trace', sink));
  const key = service.bootstrap!.token;
  return {
    service,
    url: service.url,
    teamId: service.bootstrap!.teamId,
    api: (method: string, path: string, body?: unknown) => request(service.url, method, path, body, { key }),
    log: () => lines.join(''),
    stop: () => service.stop(),
  };
}

describe('sign-in through an OpenID Connect provider', () => {
  let t: Awaited<ReturnType<typeof startLogged>>;
  const codes: string[] = [];
  const cookies: string[] = [];
  let provider: OidcProvider | undefined;
  let providerPort: number;
  let secondTeam: string;

  beforeAll(async () => {
    providerPort = await freePort();
    t = await startLogged({
      CLOUDPLANE_OIDC_ISSUER: `http://127.0.0.1:${providerPort}`,
      CLOUDPLANE_OIDC_CLIENT_ID: CLIENT.clientId,
      CLOUDPLANE_OIDC_CLIENT_SECRET: CLIENT.clientSecret,
    });
    // Alice: a member of the first team, and the owner of a second one.
    expect((await t.api('POST', '/api/v1/settings/team/members', { email: ALICE, role: 'member', name: 'Alice' })).status).toBe(201);
    const team = await t.api('POST', '/api/v1/teams', { name: 'Alice team', owner_email: ALICE });
    expect(team.status).toBe(201);
    secondTeam = team.body.data.id;
    expect((await t.api('POST', '/api/v1/settings/team/members', { email: 'unverified@example.com', role: 'member' })).status).toBe(201);
  });
  afterAll(async () => {
    await t?.stop();
    await provider?.stop();
  });

  const signedIn = (session: string, jar?: CookieJar) => (method: string, path: string, body?: unknown, csrf?: string) =>
    request(t.url, method, path, body, {
      key: null,
      headers: { cookie: jar ? jar.header(t.url) : `cloudplane_session=${session}`, ...(csrf ? { 'x-csrf-token': csrf } : {}) },
    });

  it('while the provider is down, answers sign-in with 503 provider_unavailable and keeps serving API keys', async () => {
    const config = await request(t.url, 'GET', '/auth/config');
    expect(config.body.data).toEqual({ oidc: true, api_key_sign_in: false });
    const login = await request(t.url, 'GET', '/auth/login?return_to=/');
    expect({ status: login.status, code: login.body.error?.code }).toEqual({ status: 503, code: 'provider_unavailable' });
    expect((await t.api('GET', '/api/v1/regions')).status).toBe(200);
    // With a provider configured, a key is not exchanged for a session.
    const exchange = await t.api('POST', '/auth/session');
    expect({ status: exchange.status, code: exchange.body.error?.code }).toEqual({ status: 404, code: 'route_not_found' });
  });

  it("signs a person in through the provider's own pages once it is up, and the cookie works across /api/v1", async () => {
    provider = await startOidcProvider({
      port: providerPort,
      ...CLIENT,
      redirectUris: [`${t.url}/auth/callback`],
      accounts: [
        { email: ALICE, email_verified: true, name: 'Alice' },
        { email: 'stranger@example.com', email_verified: true },
        { email: 'unverified@example.com', email_verified: false },
      ],
    });
    // Discovery is tried again on the next sign-in.
    const login = await eventually(
      async () => {
        const res = await fetch(`${t.url}/auth/login`, { redirect: 'manual' });
        return res.status === 302 ? res : null;
      },
      30_000,
      500,
    );
    // The authorization code flow with PKCE S256, state and nonce, back to <public URL>/auth/callback.
    const authorize = new URL(login.headers.get('location')!);
    expect(authorize.origin).toBe(provider.issuer);
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: CLIENT.clientId,
      redirect_uri: `${t.url}/auth/callback`,
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      state: expect.any(String),
      nonce: expect.any(String),
    });
    const flowCookie = login.headers.getSetCookie().find((c) => c.startsWith('cloudplane_oidc='))!;
    expect(flowCookie.split(';').map((a) => a.trim().toLowerCase())).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/auth/callback']));
    // The browser holds the flow sealed: neither the state nor the PKCE verifier is readable in it.
    expect(flowCookie).not.toContain(authorize.searchParams.get('state')!);

    const result = await signInThroughProvider(t.url, ALICE, {
      returnTo: '/#/load-balancers',
      alterCallback: (callback) => {
        codes.push(callback.searchParams.get('code')!);
        return callback;
      },
    });
    expect(result.response.status).toBe(302);
    expect(result.location).toBe('/#/load-balancers');
    expect(result.session).toMatch(/^cps_/);
    cookies.push(result.session!);
    const setCookie = result.response.headers.getSetCookie().find((c) => c.startsWith('cloudplane_session='))!;
    expect(setCookie.toLowerCase()).toEqual(expect.stringContaining('httponly'));
    expect(setCookie.toLowerCase()).toEqual(expect.stringContaining('samesite=lax'));
    // The flow cookie is spent.
    expect(result.jar.get(t.url, 'cloudplane_oidc')).toBeUndefined();

    const as = signedIn(result.session!);
    const session = await as('GET', '/api/v1/session');
    expect(session.status).toBe(200);
    expect(session.body.data).toMatchObject({ via: 'oidc', user: { email: ALICE }, team: { id: t.teamId }, role: 'member', scope: 'read_write' });
    const lb = await as('POST', '/api/v1/load-balancers', { name: 'alice-lb', region: 'fra1' }, session.body.data.csrf_token);
    expect(lb.status).toBe(201);
    expect((await t.api('GET', `/api/v1/load-balancers/${lb.body.data.id}`)).status).toBe(200);
  });

  it('lets a person in two teams switch to the other, with their role there', async () => {
    const { session } = await signInThroughProvider(t.url, ALICE);
    const as = signedIn(session!);
    const view = (await as('GET', '/api/v1/session')).body.data;
    expect(view.teams.map((team: { id: string; role: string }) => [team.id, team.role]).sort()).toEqual(
      [
        [t.teamId, 'member'],
        [secondTeam, 'owner'],
      ].sort(),
    );

    const refused = await as('PUT', '/api/v1/session', { team_id: secondTeam });
    expect(refused.status).toBe(403);
    const switched = await as('PUT', '/api/v1/session', { team_id: secondTeam }, view.csrf_token);
    expect(switched.status).toBe(200);
    expect(switched.body.data).toMatchObject({ team: { id: secondTeam, name: 'Alice team' }, role: 'owner', via: 'oidc' });
    // The same cookie now acts in the second team, with the same CSRF token.
    const lb = await as('POST', '/api/v1/load-balancers', { name: 'second-team-lb', region: 'fra1' }, view.csrf_token);
    expect(lb.status).toBe(201);
    expect((await t.api('GET', `/api/v1/load-balancers/${lb.body.data.id}`)).status).toBe(404);
    expect((await as('GET', `/api/v1/load-balancers/${lb.body.data.id}`)).status).toBe(200);

    const elsewhere = await as('PUT', '/api/v1/session', { team_id: 'team_notalicesteam0' }, view.csrf_token);
    expect({ status: elsewhere.status, code: elsewhere.body.error?.code }).toEqual({ status: 404, code: 'team_not_found' });
    expect((await as('DELETE', '/api/v1/session', undefined, view.csrf_token)).status).toBe(204);
    expect((await as('GET', '/api/v1/session')).status).toBe(401);
  });

  it('refuses an e-mail no team knows, and one the provider has not verified', async () => {
    const stranger = await signInThroughProvider(t.url, 'stranger@example.com');
    expect(stranger.location).toBe('/?sign_in_error=no_account');
    expect(stranger.session).toBeUndefined();
    const unverified = await signInThroughProvider(t.url, 'unverified@example.com');
    expect(unverified.location).toBe('/?sign_in_error=email_not_verified');
    expect(unverified.session).toBeUndefined();
  });

  it('refuses a tampered state, a changed or missing flow cookie, and sends return_to only to a path of its own', async () => {
    const tampered = await signInThroughProvider(t.url, ALICE, {
      alterCallback: (callback) => {
        callback.searchParams.set('state', `${callback.searchParams.get('state')}x`);
        return callback;
      },
    });
    expect(tampered.location).toBe('/?sign_in_error=invalid_request');
    expect(tampered.session).toBeUndefined();

    // A flow cookie the service did not seal.
    const forgedJar = new CookieJar();
    const forged = await signInThroughProvider(t.url, ALICE, {
      alterCallback: (callback) => {
        const jarValue = forgedJar.get(t.url, 'cloudplane_oidc')!;
        forgedJar.set(t.url, 'cloudplane_oidc', `${jarValue.slice(0, -4)}AAAA`);
        return callback;
      },
      jar: forgedJar,
    });
    expect(forged.location).toBe('/?sign_in_error=invalid_request');
    expect(forged.session).toBeUndefined();

    const noFlow = await fetch(`${t.url}/auth/callback?code=abc&state=def`, { redirect: 'manual' });
    expect(noFlow.status).toBe(302);
    expect(noFlow.headers.get('location')).toBe('/?sign_in_error=invalid_request');

    for (const returnTo of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      const away = await signInThroughProvider(t.url, ALICE, { returnTo });
      expect({ returnTo, location: away.location }).toEqual({ returnTo, location: '/' });
    }
  });

  it("keeps the provider's one-time code, the session cookie and the client secret out of the log", async () => {
    expect(codes.length).toBe(1);
    const log = t.log();
    expect(log).toContain('/auth/callback?');
    expect(log).toContain('code=%5Bredacted%5D');
    for (const [label, value] of [
      ['authorization code', codes[0]],
      ['session cookie', cookies[0]],
      ['client secret', CLIENT.clientSecret],
    ]) {
      expect({ label, found: log.includes(value) }).toEqual({ label, found: false });
    }
  });
});
