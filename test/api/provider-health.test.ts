/**
 * meta.provider is the health of the driver behind the family, as it last saw its work:
 * failed operations of one family's driver degrade that family's answers and no other's.
 */
import { startTestService, TestService, waitForStatus } from '../helpers/service';

describe('meta.provider from the driver', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_SIM_FAILURES: 'load_balancer=1' });
  });
  afterAll(async () => t?.stop());

  it('is connected before anything failed, degraded once a driver operation failed, for that family only', async () => {
    const before = await t.api('GET', '/api/v1/load-balancers');
    expect(before.body.meta.provider).toBe('connected');
    const lb = (await t.api('POST', '/api/v1/load-balancers', { name: 'doomed', region: 'fra1' })).body.data;
    const failed = await waitForStatus(t, `/api/v1/load-balancers/${lb.id}`, 'failed');
    expect(failed.status_reason).toMatch(/^Provisioning failed: the provider ran out of capacity/);
    expect((await t.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.meta.provider).toBe('degraded');
    expect((await t.api('GET', '/api/v1/servers')).body.meta.provider).toBe('connected');
  });
});
