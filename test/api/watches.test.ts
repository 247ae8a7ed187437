/**
 * Changes pushed (docs/api.md, "Watching changes"): `GET /{path}?watch=true` and
 * `GET /{path}/{id}?watch=true` stream the team's resources as they are, then every change,
 * as server-sent events; a client that connects again with Last-Event-ID gets what changed
 * meanwhile, or a `reset` and the resources afresh; watches are the caller's team's alone,
 * bounded per team, and end after their timeout. Runs on both stores.
 */
import { startTestService, eventually, request, TestService, waitForStatus } from '../helpers/service';
import { createTeam } from '../../src/accounts/bootstrap';
import { serverSentEvents, type ServerSentEvent } from '../../src/cli/server-sent-events';

jest.setTimeout(60_000);

const LB = { region: 'fra1', algorithm: 'round_robin', protocol: 'http', port: 80, health_check_path: '/health', sticky_sessions: false };

let t: TestService;
beforeAll(async () => {
  // A deleted resource is destroyed (gone from the API) a second after its deletion, not a week.
  t = await startTestService({
    CLOUDPLANE_WATCHES_PER_TEAM: '3',
    CLOUDPLANE_SIM_DELAY_MS: '200',
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
    CLOUDPLANE_DELETED_RETENTION_SECONDS: '1',
    CLOUDPLANE_WATCH_SESSION_CHECK_SECONDS: '1',
  });
});
afterAll(async () => t?.stop());

interface Watch {
  status: number;
  contentType: string | null;
  events: ServerSentEvent[];
  /** The first event (after `after` events) that `matches`, once it has come. */
  next(matches: (event: ServerSentEvent) => boolean, after?: number): Promise<ServerSentEvent>;
  /** Resolves once the stream has ended. */
  ended: Promise<void>;
  close(): void;
}

const opened: Watch[] = [];
afterEach(() => {
  for (const watch of opened.splice(0)) watch.close();
});

/** `cookie`: a console session's, instead of a key. */
async function watch(path: string, options: { key?: string; lastEventId?: string; cookie?: string } = {}): Promise<Watch> {
  const controller = new AbortController();
  const caller: Record<string, string> = options.cookie ? { cookie: options.cookie } : { authorization: `Bearer ${options.key ?? t.key}` };
  const headers: Record<string, string> = { ...caller, accept: 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(`${t.url}/api/v1${path}`, { headers, signal: controller.signal });
  const events: ServerSentEvent[] = [];
  const ended = (async () => {
    if (!response.body || !response.ok) return;
    try {
      for await (const event of serverSentEvents(response.body)) events.push(event);
    } catch {
      // Closed by the test.
    }
  })();
  const opened_: Watch = {
    status: response.status,
    contentType: response.headers.get('content-type'),
    events,
    next: (matches, after = 0) =>
      eventually(async () => events.slice(after).find(matches), 20_000).catch((err: Error) => {
        throw new Error(`${err.message}; events: ${JSON.stringify(events).slice(0, 2000)}`);
      }),
    ended,
    close: () => controller.abort(),
  };
  opened.push(opened_);
  return opened_;
}

const dataOf = (event: ServerSentEvent) => JSON.parse(event.data);
const about = (id: string, type?: string) => (event: ServerSentEvent) => (type === undefined || event.event === type) && event.data.includes(`"${id}"`);

async function createLoadBalancer(name: string, key?: string): Promise<string> {
  const created = await t.api('POST', '/api/v1/load-balancers', { ...LB, name }, key ? { key } : {});
  expect(created.status).toBe(201);
  return created.body.data.id;
}

describe('watching a family', () => {
  it('sends the resources as they are, then each change as it happens: added, modified, deleted', async () => {
    const before = await createLoadBalancer('there-before');
    await waitForStatus(t, `/api/v1/load-balancers/${before}`, 'running', 30_000);
    const w = await watch('/load-balancers?watch=true');
    expect(w.status).toBe(200);
    expect(w.contentType).toMatch(/^text\/event-stream/);
    const synced = await w.next((e) => e.event === 'synced');
    const snapshot = w.events.slice(0, w.events.indexOf(synced));
    expect(snapshot.every((e) => e.event === 'added')).toBe(true);
    expect(snapshot.map((e) => dataOf(e).id)).toContain(before);
    expect(dataOf(snapshot.find(about(before))!)).toMatchObject({ id: before, status: 'running', name: 'there-before' });

    const made = await createLoadBalancer('made-while-watched');
    expect(dataOf(await w.next(about(made, 'added')))).toMatchObject({ id: made, status: 'creating' });
    expect(dataOf(await w.next((e) => about(made, 'modified')(e) && dataOf(e).status === 'running'))).toMatchObject({ id: made, ipv4: expect.any(String) });
    // Every event names its position, to resume from.
    expect(w.events.every((e) => typeof e.id === 'string' && e.id.length > 0)).toBe(true);

    expect((await t.api('DELETE', `/api/v1/load-balancers/${made}`)).status).toBeLessThan(300);
    await w.next((e) => about(made, 'modified')(e) && dataOf(e).status === 'deleted');
    // Gone from the API once destroyed: `deleted`, with the record as it was last.
    const gone = await w.next(about(made, 'deleted'));
    expect(dataOf(gone).id).toBe(made);
  });

  it('shows one team its own resources only, and refuses a page or filter with the watch', async () => {
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Neighbour', ownerName: 'N', ownerEmail: 'n@example.com' });
    const mine = await watch('/load-balancers?watch=true');
    await mine.next((e) => e.event === 'synced');
    const theirs = await createLoadBalancer('neighbours', other.token);
    const ours = await createLoadBalancer('ours');
    await mine.next(about(ours, 'added'));
    await waitForStatus({ api: (m, p, b, o) => t.api(m, p, b, { ...o, key: other.token }) }, `/api/v1/load-balancers/${theirs}`, 'running', 30_000);
    expect(mine.events.some(about(theirs))).toBe(false);

    const refused = await t.api('GET', '/api/v1/load-balancers?watch=true&status=running');
    expect(refused.status).toBe(422);
    expect(refused.body.error.details).toEqual([expect.objectContaining({ field: 'status' })]);
  });

  it('takes a read_only key (a watch is a read), and ends once that key is revoked', async () => {
    const reader = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'watcher', scope: 'read_only' })).body.data;
    const w = await watch('/load-balancers?watch=true', { key: reader.key });
    expect(w.status).toBe(200);
    await w.next((e) => e.event === 'synced');
    expect((await t.api('DELETE', `/api/v1/settings/api-keys/${reader.id}`)).status).toBe(204);
    expect(dataOf(await w.next((e) => e.event === 'closed'))).toEqual({ reason: expect.stringMatching(/revoked/) });
    await w.ended;
  });
});

describe('watching the families whose changes have routes of their own', () => {
  it('streams webhook subscriptions and incidents as it does the others', async () => {
    const hooks = await watch('/webhooks?watch=true');
    expect(hooks.status).toBe(200);
    await hooks.next((e) => e.event === 'synced');
    const hook = await t.api('POST', '/api/v1/webhooks', { url: 'https://receiver.example/hooks', events: ['job.*'] });
    expect(hook.status).toBe(201);
    const added = dataOf(await hooks.next(about(hook.body.data.id, 'added')));
    // The record as GET shows it: the signing secret is in the create's answer alone.
    expect(added).toMatchObject({ id: hook.body.data.id, active: true });
    expect(JSON.stringify(added)).not.toContain(hook.body.data.secret);
    expect((await t.api('PATCH', `/api/v1/webhooks/${hook.body.data.id}`, { active: false })).status).toBe(200);
    await hooks.next((e) => about(hook.body.data.id, 'modified')(e) && dataOf(e).active === false);

    const incidents = await watch('/incidents?watch=true');
    await incidents.next((e) => e.event === 'synced');
    expect((await t.api('POST', '/api/v1/alert-policies', { name: 'watched-jobs', condition: { type: 'job_failed' } })).status).toBe(201);
    expect((await t.api('POST', '/api/v1/jobs', { name: 'watched-broken', command: 'exit 3' })).status).toBe(201);
    const opened = dataOf(await incidents.next((e) => e.event === 'added' && dataOf(e).condition_type === 'job_failed'));
    expect(opened.status).toBe('open');
    const one = await watch(`/incidents/${opened.id}?watch=true`);
    await one.next((e) => e.event === 'synced');
    expect((await t.api('POST', `/api/v1/incidents/${opened.id}/acknowledge`)).status).toBe(200);
    await one.next((e) => about(opened.id, 'modified')(e) && dataOf(e).status === 'acknowledged');
  });
});

describe("a console session's watch", () => {
  /** A console session made from `key`: its cookie and CSRF token. */
  async function signIn(key: string): Promise<{ cookie: string; csrf: string }> {
    const res = await request(t.url, 'POST', '/auth/session', undefined, { key });
    expect(res.status).toBe(201);
    const token = /^cloudplane_session=([^;]+)/.exec(res.headers.getSetCookie().find((c) => c.startsWith('cloudplane_session='))!)![1];
    return { cookie: `cloudplane_session=${token}`, csrf: res.body.data.csrf_token };
  }

  it('ends when the session signs out, and the watches of another session go on', async () => {
    const leaving = await signIn(t.key);
    const staying = await signIn(t.key);
    const w = await watch('/load-balancers?watch=true', { cookie: leaving.cookie });
    const other = await watch('/load-balancers?watch=true', { cookie: staying.cookie });
    expect([w.status, other.status]).toEqual([200, 200]);
    await w.next((e) => e.event === 'synced');
    await other.next((e) => e.event === 'synced');
    const out = await request(t.url, 'DELETE', '/api/v1/session', undefined, { key: null, headers: { cookie: leaving.cookie, 'x-csrf-token': leaving.csrf } });
    expect(out.status).toBe(204);
    expect(dataOf(await w.next((e) => e.event === 'closed'))).toEqual({ reason: expect.stringMatching(/session .*ended/) });
    await w.ended;
    const made = await createLoadBalancer('after-sign-out');
    await other.next(about(made, 'added'));
    expect(other.events.some((e) => e.event === 'closed')).toBe(false);
  });

  it('ends once the API key the session was made from is revoked, found by its periodic check', async () => {
    const key = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'console-key', scope: 'read_only' })).body.data;
    const session = await signIn(key.key);
    const w = await watch('/load-balancers?watch=true', { cookie: session.cookie });
    await w.next((e) => e.event === 'synced');
    expect((await t.api('DELETE', `/api/v1/settings/api-keys/${key.id}`)).status).toBe(204);
    expect(dataOf(await w.next((e) => e.event === 'closed'))).toEqual({ reason: expect.stringMatching(/session .*ended/) });
    await w.ended;
  });
});

describe('watching one resource', () => {
  it('sends that resource alone, until its timeout ends the stream with `closed`', async () => {
    const id = await createLoadBalancer('watched-alone');
    const other = await createLoadBalancer('not-watched');
    const w = await watch(`/load-balancers/${id}?watch=true&timeout_seconds=2`);
    expect(w.status).toBe(200);
    await w.next((e) => e.event === 'synced');
    await w.next((e) => about(id, 'modified')(e) && dataOf(e).status === 'running');
    expect(w.events.some(about(other))).toBe(false);
    const closed = await w.next((e) => e.event === 'closed');
    expect(dataOf(closed).reason).toMatch(/timeout/);
    await w.ended;
  });

  it('answers 404 for a resource the team does not have, as a GET does', async () => {
    expect((await t.api('GET', '/api/v1/load-balancers/lb_doesnotexist0000000?watch=true')).status).toBe(404);
  });
});

describe('resuming with Last-Event-ID', () => {
  it('sends what changed while away, each resource once as it is now, and no reset', async () => {
    const kept = await createLoadBalancer('kept');
    const removed = await createLoadBalancer('removed');
    await waitForStatus(t, `/api/v1/load-balancers/${kept}`, 'running', 30_000);
    await waitForStatus(t, `/api/v1/load-balancers/${removed}`, 'running', 30_000);
    const first = await watch('/load-balancers?watch=true');
    const synced = await first.next((e) => e.event === 'synced');
    first.close();

    // While away: one changed, one deleted and destroyed, one made.
    expect((await t.api('PATCH', `/api/v1/load-balancers/${kept}`, { health_check_path: '/changed' })).status).toBe(200);
    expect((await t.api('DELETE', `/api/v1/load-balancers/${removed}`)).status).toBeLessThan(300);
    await eventually(async () => (await t.api('GET', `/api/v1/load-balancers/${removed}`)).status === 404, 30_000);
    const made = await createLoadBalancer('made-while-away');

    const again = await watch('/load-balancers?watch=true', { lastEventId: synced.id });
    await again.next((e) => e.event === 'synced');
    expect(again.events.some((e) => e.event === 'reset')).toBe(false);
    expect(dataOf(await again.next(about(kept, 'modified')))).toMatchObject({ health_check_path: '/changed' });
    await again.next(about(removed, 'deleted'));
    await again.next(about(made));
    // Only what changed: not every resource of the team again.
    const synced2 = again.events.findIndex((e) => e.event === 'synced');
    expect(new Set(again.events.slice(0, synced2).map((e) => dataOf(e).id))).toEqual(new Set([kept, removed, made]));
  });

  it('says reset and sends the resources afresh when the position is not known here', async () => {
    const id = await createLoadBalancer('after-a-restart');
    const w = await watch('/load-balancers?watch=true', { lastEventId: 'another-replica.42' });
    const reset = await w.next((e) => e.event === 'reset');
    expect(w.events.indexOf(reset)).toBe(0);
    await w.next(about(id, 'added'));
    await w.next((e) => e.event === 'synced');
  });
});

describe('bounds', () => {
  it('holds at most CLOUDPLANE_WATCHES_PER_TEAM watches of a team at once: 429 too_many_watches, and room again once one ends', async () => {
    // The watches the tests before closed are let go by the service a moment after they close.
    const held = await eventually(async () => {
      const tried = await Promise.all([1, 2, 3].map(() => watch('/load-balancers?watch=true')));
      if (tried.every((w) => w.status === 200)) return tried;
      for (const w of tried) w.close();
      return null;
    }, 10_000);
    for (const w of held) await w.next((e) => e.event === 'synced');
    const refused = await t.api('GET', '/api/v1/load-balancers?watch=true');
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('too_many_watches');
    // What an operator sees of it: the watches held, and the refusal counted.
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^cloudplane_watches_open 3$/m);
    expect(metrics).toMatch(/^cloudplane_watches_refused_total\{reason="team_limit"\} [1-9]\d*$/m);
    held[0].close();
    await eventually(async () => {
      const w = await watch('/servers?watch=true');
      if (w.status === 200) return true;
      w.close();
      return false;
    }, 10_000);
  });

  it('documents the watch in the OpenAPI document: the query, and text/event-stream beside the JSON', async () => {
    const doc = (await t.api('GET', '/api/v1/openapi.json')).body;
    const list = doc.paths['/api/v1/load-balancers'].get;
    expect(list.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['watch', 'timeout_seconds']));
    expect(Object.keys(list.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
    const one = doc.paths['/api/v1/load-balancers/{id}'].get;
    expect(Object.keys(one.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
  });
});
