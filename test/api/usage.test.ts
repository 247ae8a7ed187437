/**
 * Usage metering (docs/api.md, Usage): resource-hours per family and plan, webhook
 * deliveries and API requests, on the real service and store; thresholds that emit
 * usage.threshold_reached and usage.overage to a real receiver; and a restart that keeps
 * what was metered.
 */
import { eventually, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';
import { eventsOf, receiversOfThisFile } from '../helpers/receiver';
import { intervalsOfRecord } from '../../src/usage/records';

const ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  CLOUDPLANE_USAGE_FLUSH_SECONDS: '0.2',
};
const HOUR_MS = 3_600_000;
const receiver = receiversOfThisFile();
const q = (since: number | string, until: number | string) =>
  `/api/v1/usage?since=${encodeURIComponent(new Date(since).toISOString())}&until=${encodeURIComponent(new Date(until).toISOString())}`;

describe('usage', () => {
  let t: TestService;
  let started: number;
  let lb: { id: string; createdAt: number; runningSeen: number; deletedAt: number };
  let server: { id: string; plan: string };
  let hookId: string;

  beforeAll(async () => {
    t = await startTestService(ENV);
    started = Date.now();
    const hook = await t.api('POST', '/api/v1/webhooks', { url: (await receiver()).url, events: ['load_balancer.*'] });
    expect(hook.status).toBe(201);
    hookId = hook.body.data.id;

    const createdAt = Date.now();
    const made = await t.api('POST', '/api/v1/load-balancers', { name: 'metered', region: 'fra1' });
    expect(made.status).toBe(201);
    await waitForStatus(t, `/api/v1/load-balancers/${made.body.data.id}`, 'running');
    // Running for a measurable while: until the report shows its hours growing.
    await eventually(async () => ((await t.api('GET', '/api/v1/usage')).body.data.resources.find((r: any) => r.family === 'load_balancer')?.quantity ?? 0) > 0);
    const runningSeen = Date.now();
    // Running on past that moment by more than the report's rounding (a millionth of an
    // hour, 3.6 ms): otherwise, on a fast machine, the hours up to runningSeen and all of
    // them rounded to the same figure.
    const hoursUpToSeen = (runningSeen - createdAt) / HOUR_MS;
    await eventually(
      async () =>
        ((await t.api('GET', '/api/v1/usage')).body.data.resources.find((r: any) => r.family === 'load_balancer')?.quantity ?? 0) > hoursUpToSeen + 2e-6,
    );
    expect((await t.api('DELETE', `/api/v1/load-balancers/${made.body.data.id}`)).status).toBe(200);
    await waitForStatus(t, `/api/v1/load-balancers/${made.body.data.id}`, 'deleted');
    lb = { id: made.body.data.id, createdAt, runningSeen, deletedAt: Date.now() };

    const svr = await t.api('POST', '/api/v1/servers', { name: 'metered-svr', region: 'fra1', plan: 's-2vcpu-4gb' });
    expect(svr.status).toBe(201);
    server = { id: svr.body.data.id, plan: svr.body.data.plan };
    await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running');
  });
  afterAll(async () => t.stop());

  const loadBalancerRow = async (path: string) => (await t.api('GET', path)).body.data.resources.find((r: any) => r.family === 'load_balancer');

  it('meters a load balancer from running to deleted: hours above zero, within the wall time', async () => {
    // The interval is closed by the deleted event, which the recorder reads from the bus.
    const row = await eventually(async () => {
      const first = await loadBalancerRow(q(started - 1000, Date.now() + HOUR_MS));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const second = await loadBalancerRow(q(started - 1000, Date.now() + HOUR_MS));
      return first && second && first.quantity === second.quantity && second;
    });
    expect(row).toMatchObject({ family: 'load_balancer', plan: 'standard', unit: 'hours', resources: 1 });
    expect(row.quantity).toBeGreaterThan(0);
    expect(row.quantity).toBeLessThanOrEqual((lb.deletedAt - lb.createdAt) / HOUR_MS + 1e-6);
    const whole = (await t.api('GET', '/api/v1/usage')).body.data;
    expect(whole.resource_hours.unit).toBe('hours');
    expect(whole.resource_hours.quantity).toBeGreaterThanOrEqual(row.quantity);
  });

  it('reports a server under its plan, counting while it runs', async () => {
    const rowOf = async () => (await t.api('GET', '/api/v1/usage')).body.data.resources.find((r: any) => r.family === 'server');
    const first = await eventually(async () => {
      const row = await rowOf();
      return row?.quantity > 0 && row;
    });
    expect(first).toMatchObject({ family: 'server', plan: server.plan, unit: 'hours', resources: 1 });
    expect(server.plan).toBe('s-2vcpu-4gb');
    // Open: it grows up to now.
    await eventually(async () => (await rowOf()).quantity > first.quantity);
  });

  it("counts a file share's hours under each size it had", async () => {
    const share = (await t.api('POST', '/api/v1/file-storage', { name: 'metered-share', region: 'fra1', size_gb: 100 })).body.data.id;
    await waitForStatus(t, `/api/v1/file-storage/${share}`, 'available');
    const sizes = async () => {
      const rows = (await t.api('GET', '/api/v1/usage')).body.data.resources.filter((r: any) => r.family === 'file_share');
      return Object.fromEntries(rows.map((r: any) => [r.plan, r.quantity])) as Record<string, number>;
    };
    await eventually(async () => (await sizes())['100gb'] > 0);
    expect((await t.api('PATCH', `/api/v1/file-storage/${share}`, { size_gb: 200 })).status).toBe(200);
    await eventually(async () => (await sizes())['200gb'] > 0);
    // The first size's hours stopped at the resize; the second's grow.
    const first = await sizes();
    await eventually(async () => (await sizes())['200gb'] > first['200gb']);
    expect((await sizes())['100gb']).toBe(first['100gb']);
  });

  it('clips the hours to since and until', async () => {
    const whole = await loadBalancerRow(q(started - 1000, Date.now() + HOUR_MS));
    // Up to a moment the load balancer was running: part of its hours, not all.
    const part = await loadBalancerRow(q(started - 1000, lb.runningSeen));
    expect(part.quantity).toBeGreaterThan(0);
    expect(part.quantity).toBeLessThan(whole.quantity);
    expect(part.quantity).toBeLessThanOrEqual((lb.runningSeen - lb.createdAt) / HOUR_MS + 1e-6);
    // After its deletion, and before the test: nothing.
    expect(await loadBalancerRow(q(lb.deletedAt + 1, Date.now() + HOUR_MS))).toBeUndefined();
    const before = (await t.api('GET', q(started - 3 * HOUR_MS, started - 2 * HOUR_MS))).body.data;
    expect(before).toMatchObject({ resources: [], resource_hours: { quantity: 0 }, api_requests: { quantity: 0 }, webhook_deliveries: { quantity: 0 } });
  });

  it('counts every authenticated API request of the team', async () => {
    const before = (await t.api('GET', '/api/v1/usage')).body.data.api_requests;
    expect(before).toMatchObject({ unit: 'requests' });
    for (let i = 0; i < 5; i++) expect((await t.api('GET', '/api/v1/regions')).status).toBe(200);
    // A request refused for its input is still a request; one without a valid key is no team's.
    expect((await t.api('GET', '/api/v1/load-balancers?limit=500')).status).toBe(422);
    expect((await t.api('GET', '/api/v1/regions', undefined, { key: 'cpk_notakeyatallnotakeyatallnotakeyatall' })).status).toBe(401);
    const after = (await t.api('GET', '/api/v1/usage')).body.data.api_requests;
    // The five, the refused one, and the first usage read (counted once answered).
    expect(after.quantity - before.quantity).toBe(7);
  });

  it("still counts a past day's requests once this process has flushed them and let them go", async () => {
    const { counters } = t.service.ctx.usage;
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    for (let i = 0; i < 3; i++) counters.countRequest(t.teamId, twoDaysAgo);
    const window = q(twoDaysAgo.getTime() - HOUR_MS, twoDaysAgo.getTime() + HOUR_MS);
    expect((await t.api('GET', window)).body.data.api_requests.quantity).toBe(3);
    // The flush writes the day and drops it from memory: the record answers from then on.
    await counters.flush();
    expect(counters.own(t.teamId).has(twoDaysAgo.toISOString().slice(0, 10))).toBe(false);
    expect((await t.api('GET', window)).body.data.api_requests.quantity).toBe(3);
  });

  it('counts webhook deliveries: one per event and subscription', async () => {
    const deliveries = async () => {
      const res = await t.api('GET', '/api/v1/webhook-deliveries?limit=100');
      expect(res.body.meta.next_cursor ?? null).toBeNull();
      return res.body.data.length as number;
    };
    expect(await eventually(async () => (await deliveries()) >= 3)).toBe(true);
    const made = await deliveries();
    const metered = (await t.api('GET', '/api/v1/usage')).body.data.webhook_deliveries;
    expect(metered).toEqual({ quantity: made, unit: 'deliveries' });
    const ofHook = (await t.api('GET', `/api/v1/webhooks/${hookId}/deliveries?limit=100`)).body.data;
    expect(ofHook.map((d: any) => d.event_type).sort()).toEqual(['load_balancer.created', 'load_balancer.deleted', 'load_balancer.running']);
  });

  it('refuses a bad window with 422 validation_failed', async () => {
    const refused = async (path: string, field?: string) => {
      const res = await t.api('GET', path);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      if (field) expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
    };
    await refused('/api/v1/usage?since=yesterday');
    await refused('/api/v1/usage?until=2026-13-40T00:00:00Z');
    await refused('/api/v1/usage?since=2026-01-01T00:00:00Z&until=2025-12-01T00:00:00Z', 'until');
    await refused('/api/v1/usage?since=2026-01-01T00:00:00Z&until=2026-01-01T00:00:00Z', 'until');
    await refused('/api/v1/usage?since=2020-01-01T00:00:00Z&until=2026-01-01T00:00:00Z', 'since');
    await refused('/api/v1/usage?window=month');
    // Defaults: the current calendar month (UTC) up to now.
    const res = await t.api('GET', '/api/v1/usage');
    expect(res.status).toBe(200);
    const now = new Date();
    expect(res.body.data.since).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(Date.parse(res.body.data.until)).toBeLessThanOrEqual(Date.now());
  });

  it('lets a viewer read usage and limits, and only an admin change limits', async () => {
    const invited = await t.api('POST', '/api/v1/settings/team/members', { email: 'viewer@usage.example', role: 'viewer' });
    expect(invited.status).toBe(201);
    const key = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'viewer', user_id: invited.body.data.id })).body.data.key;
    expect((await t.api('GET', '/api/v1/usage', undefined, { key })).status).toBe(200);
    expect((await t.api('GET', '/api/v1/usage/limits', undefined, { key })).status).toBe(200);
    const put = await t.api('PUT', '/api/v1/usage/limits', { limits: { api_requests: { soft: 1 } } }, { key });
    expect(put.status).toBe(403);
    expect(put.body.error.code).toBe('forbidden');
    expect((await t.api('GET', '/api/v1/usage/limits')).body.data.limits).toEqual({});
  });

  it('refuses limits on unknown metrics, and soft above hard', async () => {
    const unknown = await t.api('PUT', '/api/v1/usage/limits', { limits: { cpu_seconds: { soft: 1 } } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('validation_failed');
    const inverted = await t.api('PUT', '/api/v1/usage/limits', { limits: { api_requests: { soft: 10, hard: 5 } } });
    expect(inverted.status).toBe(422);
    expect(inverted.body.error.details).toEqual([{ field: 'limits.api_requests.soft', message: expect.stringMatching(/hard/) }]);
    expect((await t.api('PUT', '/api/v1/usage/limits', { limits: { api_requests: { hard: -1 } } })).status).toBe(422);
  });

  it('emits usage.threshold_reached and usage.overage to a subscriber, once per period', async () => {
    const alerts = await receiver();
    expect((await t.api('POST', '/api/v1/webhooks', { url: alerts.url, events: ['usage.*'] })).status).toBe(201);
    const used = (await t.api('GET', '/api/v1/usage')).body.data.api_requests.quantity;
    const limits = {
      // Soft is reached by the requests made so far; hard is passed by ten more.
      api_requests: { soft: used, hard: used + 10 },
      // A small fraction of an hour: the running server passes it within a second.
      server_hours: { soft: 0.0001 },
    };
    const put = await t.api('PUT', '/api/v1/usage/limits', { limits });
    expect(put.status).toBe(200);
    expect(put.body.data.limits).toEqual({
      api_requests: { ...limits.api_requests, unit: 'requests' },
      server_hours: { soft: 0.0001, hard: null, unit: 'hours' },
    });
    expect((await t.api('GET', '/api/v1/usage/limits')).body.data).toEqual(put.body.data);

    const received = (type: string, metric: string) => eventsOf(alerts).filter((e) => e.type === type && e.data.metric === metric);
    await eventually(
      async () => received('usage.threshold_reached', 'api_requests').length > 0 && received('usage.threshold_reached', 'server_hours').length > 0,
      20_000,
    );
    expect(received('usage.overage', 'api_requests')).toEqual([]);
    for (let i = 0; i < 10; i++) await t.api('GET', '/api/v1/regions');
    await eventually(async () => received('usage.overage', 'api_requests').length > 0, 20_000);

    const [soft] = received('usage.threshold_reached', 'api_requests');
    expect(soft).toMatchObject({ team_id: t.teamId, actor: 'system', data: { metric: 'api_requests', unit: 'requests', threshold: used } });
    expect(soft.data.quantity).toBeGreaterThanOrEqual(used);
    const [overage] = received('usage.overage', 'api_requests');
    expect(overage.data).toMatchObject({ metric: 'api_requests', unit: 'requests', threshold: used + 10 });
    expect(overage.data.quantity).toBeGreaterThan(used + 10);
    expect(Date.parse(overage.data.period_end)).toBeGreaterThan(Date.now());
    const [hours] = received('usage.threshold_reached', 'server_hours');
    expect(hours.data).toMatchObject({ unit: 'hours', threshold: 0.0001 });

    // Later checks see the same thresholds crossed and emit nothing more: a new threshold's
    // event arriving shows that several checks ran since.
    expect((await t.api('PUT', '/api/v1/usage/limits', { limits: { ...limits, webhook_deliveries: { soft: 1 } } })).status).toBe(200);
    await eventually(async () => received('usage.threshold_reached', 'webhook_deliveries').length > 0, 20_000);
    expect(received('usage.threshold_reached', 'api_requests')).toHaveLength(1);
    expect(received('usage.overage', 'api_requests')).toHaveLength(1);
    expect(received('usage.threshold_reached', 'server_hours')).toHaveLength(1);
    // Each is in the audit log as well, with the catalog's category.
    const audited = (await t.api('GET', '/api/v1/audit-log?type=usage.*&limit=100')).body.data;
    expect(audited.map((e: any) => e.id).sort()).toEqual(
      eventsOf(alerts)
        .map((e) => e.id)
        .sort(),
    );
  });
});

describe('usage across a restart', () => {
  it('keeps the intervals and the counts a stopped service recorded', async () => {
    const dataDir = tempDataDir();
    const key = 'cpk_usageRestartKey0123456789abcdefghijklmnop';
    const env = { ...ENV, CLOUDPLANE_BOOTSTRAP_API_KEY: key };
    let t = await startTestService(env, dataDir);
    const id = (await t.api('POST', '/api/v1/load-balancers', { name: 'survivor', region: 'fra1' })).body.data.id;
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running');
    await eventually(async () => ((await t.api('GET', '/api/v1/usage')).body.data.resources[0]?.quantity ?? 0) > 0);
    await t.api('DELETE', `/api/v1/load-balancers/${id}`);
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'deleted');
    const closed = async (svc: TestService) => {
      const first = (await svc.api('GET', '/api/v1/usage')).body.data.resources[0];
      await new Promise((resolve) => setTimeout(resolve, 300));
      const second = (await svc.api('GET', '/api/v1/usage')).body.data.resources[0];
      return first && second && first.quantity === second.quantity && second;
    };
    const before = await eventually(() => closed(t));
    const requests = (await t.api('GET', '/api/v1/usage')).body.data.api_requests.quantity;
    await t.stop();

    t = await startTestService(env, dataDir);
    try {
      const after = (await t.api('GET', '/api/v1/usage')).body.data;
      expect(after.resources).toEqual([before]);
      // Those of the last run (with the usage read above, counted as it answered), and this read.
      expect(after.api_requests.quantity).toBe(requests + 1);
    } finally {
      await t.stop();
    }
  });
});

describe('usage retention', () => {
  it('keeps an interval while it is open, and deletes it once it ended longer ago than the retention', async () => {
    const t = await startTestService({ ...ENV, CLOUDPLANE_USAGE_RETENTION_DAYS: String(1 / 86_400) });
    try {
      const rows = async () => (await t.api('GET', '/api/v1/usage')).body.data.resources as Array<{ family: string; quantity: number }>;
      // The team's meter records (usage/records.ts), by the resources they hold.
      const intervals = async () =>
        (await t.service.ctx.store.records.list('usage-'))
          .filter((s) => s.team === t.teamId)
          .flatMap((s) => intervalsOfRecord(s.name, s.data))
          .map((interval) => interval.resource_id);
      const id = (await t.api('POST', '/api/v1/load-balancers', { name: 'brief', region: 'fra1' })).body.data.id;
      await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running');
      // Open for longer than the retention: an open interval is never swept.
      await eventually(async () => ((await rows())[0]?.quantity ?? 0) * HOUR_MS > 2000, 20_000);
      expect(await intervals()).toEqual([id]);
      await t.api('DELETE', `/api/v1/load-balancers/${id}`);
      await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'deleted');
      await eventually(async () => (await intervals()).length === 0, 20_000);
      expect(await rows()).toEqual([]);
    } finally {
      await t.stop();
    }
  });
});
