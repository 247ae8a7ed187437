/**
 * Every answer that carries a secret (a full API key, a webhook's signing secret, a
 * session's CSRF token or cookie) is `Cache-Control: no-store`, so no browser, proxy or CDN
 * keeps a copy: found by an attacker's review, none was. Other answers are left alone.
 */
import { ApiResponse, request, startTestService, TestService } from '../helpers/service';

const WEBHOOK_ENV = { CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };

describe('answers that carry a secret', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService(WEBHOOK_ENV);
  });
  afterAll(async () => t.stop());

  const cacheControlOf = (res: ApiResponse) => res.headers.get('cache-control');

  /** The route, its status and its Cache-Control, for one comparison per route. */
  const seen = (route: string, res: ApiResponse) => ({ route, status: res.status, cacheControl: cacheControlOf(res) });

  it('marks each no-store: API keys, a new team, webhook secrets, listeners, sessions and sign-in', async () => {
    const answers: Array<[string, number, ApiResponse]> = [];
    const key = await t.api('POST', '/api/v1/settings/api-keys', { name: 'secret key' });
    answers.push(['POST /api/v1/settings/api-keys', 201, key]);
    answers.push(['POST /api/v1/settings/api-keys/:id/rotate', 201, await t.api('POST', `/api/v1/settings/api-keys/${key.body.data.id}/rotate`)]);
    answers.push(['POST /api/v1/teams', 201, await t.api('POST', '/api/v1/teams', { name: 'Secret team', owner_email: 'owner@secret.example' })]);
    const hook = await t.api('POST', '/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['server.*'] });
    answers.push(['POST /api/v1/webhooks', 201, hook]);
    answers.push(['POST /api/v1/webhooks/:id/rotate-secret', 200, await t.api('POST', `/api/v1/webhooks/${hook.body.data.id}/rotate-secret`)]);
    answers.push(['POST /api/v1/webhooks/listeners', 201, await t.api('POST', '/api/v1/webhooks/listeners', { events: ['server.*'] })]);
    const signIn = await request(t.url, 'POST', '/auth/session', undefined, { key: t.key });
    answers.push(['POST /auth/session', 201, signIn]);
    const cookie = /^(cloudplane_session=[^;]+)/.exec(signIn.headers.getSetCookie().find((c) => c.startsWith('cloudplane_session='))!)![1];
    const session = (method: string, body?: unknown) =>
      request(t.url, method, '/api/v1/session', body, { headers: { cookie, 'x-csrf-token': signIn.body.data.csrf_token } });
    answers.push(['GET /api/v1/session', 200, await session('GET')]);
    // Only a session from the identity provider may switch teams (its 200 carries the token):
    // the route is marked as a whole, so a key's session gets its 403 no-store as well.
    answers.push(['PUT /api/v1/session', 403, await session('PUT', { team_id: t.teamId })]);

    expect(answers.map(([route, , res]) => seen(route, res))).toEqual(answers.map(([route, status]) => ({ route, status, cacheControl: 'no-store' })));
  });

  it('leaves answers without a secret alone', async () => {
    for (const path of ['/api/v1/regions', '/api/v1/settings/api-keys', '/api/v1/webhooks']) {
      const res = await t.api('GET', path);
      expect(seen(path, res)).toEqual({ route: path, status: 200, cacheControl: null });
    }
  });
});
