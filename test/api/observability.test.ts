import { request, startTestService, TestService, waitForStatus } from '../helpers/service';

describe('operational endpoints', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  it('answers /healthz and /readyz without a key', async () => {
    expect((await request(t.url, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await request(t.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', persistence: 'synced' });
  });

  it('counts requests and reconciles in /metrics', async () => {
    const created = await t.api('POST', '/api/v1/load-balancers', { name: 'metered', region: 'fra1' });
    expect(created.status).toBe(201);
    await waitForStatus(t, `/api/v1/load-balancers/${created.body.data.id}`, 'running');
    const metrics = await request(t.url, 'GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    const text = metrics.body as string;
    expect(text).toMatch(/cloudplane_http_requests_total\{method="POST",route="\/api\/v1\/load-balancers",status_code="201"\} [1-9]/);
    expect(text).toMatch(/cloudplane_http_request_duration_seconds_bucket\{/);
    expect(text).toMatch(/cloudplane_reconcile_total\{kind="LoadBalancer",result="success"\} [1-9]/);
    expect(text).toMatch(/cloudplane_reconcile_duration_seconds_count\{kind="LoadBalancer"\} [1-9]/);
  });
});
