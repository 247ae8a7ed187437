/**
 * A subscription now has a reconciler (it takes in kubectl-made ones and settles kubectl
 * edits), while a PATCH still settles its own change. The event of a PATCH must name the
 * caller who made it, never `system`, however the two meet.
 */
import { eventually, startTestService, TestService } from '../helpers/service';

const PATCHES = 12;

describe('webhook.updated after a PATCH', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  });
  afterAll(async () => t.stop());

  it('names the caller on every one, with the reconciler running', async () => {
    const created = await t.api('POST', '/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['server.*'] });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    for (let i = 1; i <= PATCHES; i++) expect((await t.api('PATCH', `/api/v1/webhooks/${id}`, { rate_limit_per_minute: 100 + i })).status).toBe(200);
    const updates = await eventually(async () => {
      const events = (await t.api('GET', `/api/v1/audit-log?resource_id=${id}&type=webhook.updated&limit=100`)).body.data;
      return events.length === PATCHES ? events : null;
    });
    const creator = (await t.api('GET', `/api/v1/audit-log?resource_id=${id}&type=webhook.created`)).body.data[0].actor;
    expect(creator).toMatch(/^key_/);
    expect(updates.map((e: { actor: string }) => e.actor)).toEqual(Array(PATCHES).fill(creator));
  });
});
