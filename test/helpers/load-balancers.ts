/** A load balancer made through the API, for tests that need one running. */
import { TestService, waitForStatus } from './service';

export const LOAD_BALANCER = { region: 'fra1', algorithm: 'round_robin', protocol: 'http', port: 80, health_check_path: '/health', sticky_sessions: false };

/** Creates a load balancer named `name`, waits until it runs, and answers its id and the version (ETag) its GET names then. */
export async function runningLoadBalancer(t: TestService, name: string): Promise<{ id: string; etag: string }> {
  const created = await t.api('POST', '/api/v1/load-balancers', { ...LOAD_BALANCER, name });
  expect(created.status).toBe(201);
  await waitForStatus(t, `/api/v1/load-balancers/${created.body.data.id}`, 'running', 30_000);
  const read = await t.api('GET', `/api/v1/load-balancers/${created.body.data.id}`);
  return { id: created.body.data.id, etag: String(read.headers.get('etag')) };
}
