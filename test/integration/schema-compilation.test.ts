/**
 * Route schemas compile on first use (src/api/plugins/schema-compilation.ts): a fresh
 * service has compiled next to nothing, every schema it defers does compile (as the start
 * proved before), and a route's first request is checked and answered as any later one.
 */
import { startTestService, TestService } from '../helpers/service';
import { compileWaitingSchemas } from '../../src/api/plugins/schema-compilation';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => t?.stop());

it("checks a route's first request, and answers it, with the schemas it compiles then", async () => {
  // Validators of body, query and path: the first body refused names its field...
  const refused = await t.api('POST', '/api/v1/load-balancers', { name: 7, region: 'fra1' });
  expect(refused.status).toBe(422);
  expect(JSON.stringify(refused.body.error)).toContain('name');
  // ...a query's integer is decimal digits only...
  expect((await t.api('GET', '/api/v1/load-balancers?limit=0x10')).status).toBe(422);
  // ...and the answers are written by the serializers compiled for them.
  const created = await t.api('POST', '/api/v1/load-balancers', { name: 'web', region: 'fra1' });
  expect(created.status).toBe(201);
  const listed = await t.api('GET', '/api/v1/load-balancers');
  expect(listed.body.data.map((lb: { id: string }) => lb.id)).toEqual([created.body.data.id]);
});

it('compiles every schema it deferred, each once', () => {
  // Well over a hundred routes' validators and serializers wait after a start.
  expect(compileWaitingSchemas(t.service.app)).toBeGreaterThan(200);
  expect(compileWaitingSchemas(t.service.app)).toBe(0);
});
