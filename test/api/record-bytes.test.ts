/**
 * GET of one resource and lists answer records serialised once per stored version
 * (src/api/record-bytes.ts): the bytes must be those the route's response schema makes of
 * `{data, meta}`, which a bare Fastify route with the same schema shows, and must follow
 * every new version of the resource.
 */
import Fastify from 'fastify';
import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';
import { envelopeOf } from '../../src/api/routes/families';
import { loadBalancerFamily, LoadBalancer } from '../../src/resources/load-balancer';
import { Type } from '@sinclair/typebox';

/** What Fastify's schema serialisation makes of `body` under the envelope of `data`. */
async function serialisedBySchema(data: Parameters<typeof envelopeOf>[0], body: unknown): Promise<{ payload: string; contentType: unknown }> {
  const app = Fastify();
  app.get('/', { schema: { response: { 200: envelopeOf(data) } } }, async () => body);
  const res = await app.inject({ method: 'GET', url: '/' });
  await app.close();
  return { payload: res.payload, contentType: res.headers['content-type'] };
}

describe('records answered from their serialised bytes', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  const stored = (id: string) => t.service.ctx.store.get(loadBalancerFamily.kind, t.teamId, id) as Promise<LoadBalancer | undefined>;

  /** The raw GET of `path`, with the stored object it was made of (read again until no write came between). */
  async function readStable(path: string, id: string): Promise<{ raw: string; contentType: string | null; object: LoadBalancer }> {
    return eventually(async () => {
      const before = await stored(id);
      const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${t.key}` } });
      const raw = await res.text();
      return before !== undefined && before === (await stored(id)) ? { raw, contentType: res.headers.get('content-type'), object: before } : null;
    });
  }

  it('answers one load balancer, with backends, byte for byte as the response schema does, and each new version', async () => {
    const server = (await t.api('POST', '/api/v1/servers', { name: 'rb-server', region: 'fra1' })).body.data;
    const lb = (await t.api('POST', '/api/v1/load-balancers', { name: 'rb-lb', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running');
    await waitForStatus(t, `/api/v1/load-balancers/${lb.id}`, 'running');
    expect((await t.api('POST', `/api/v1/load-balancers/${lb.id}/attach`, { server_id: server.id, port: 8080 })).status).toBe(200);

    const path = `/api/v1/load-balancers/${lb.id}`;
    const first = await readStable(path, lb.id);
    const expected = await serialisedBySchema(loadBalancerFamily.schemas.record, {
      data: loadBalancerFamily.toRecord(first.object),
      meta: JSON.parse(first.raw).meta,
    });
    expect(first.raw).toBe(expected.payload);
    expect(first.contentType).toBe(expected.contentType);
    expect(JSON.parse(first.raw).data.backends).toEqual([expect.objectContaining({ server_id: server.id, server_ref: null, port: 8080 })]);

    // A new version of the object is answered anew, not from the bytes of the last one.
    expect((await t.api('PATCH', path, { algorithm: 'ip_hash' })).status).toBe(200);
    const second = await readStable(path, lb.id);
    expect(second.object).not.toBe(first.object);
    expect(JSON.parse(second.raw).data.algorithm).toBe('ip_hash');
    expect(second.raw).toBe(
      (await serialisedBySchema(loadBalancerFamily.schemas.record, { data: loadBalancerFamily.toRecord(second.object), meta: JSON.parse(second.raw).meta }))
        .payload,
    );
  });

  it('answers a page, with its cursor, byte for byte as the response schema does', async () => {
    for (const name of ['rb-page-1', 'rb-page-2', 'rb-page-3'])
      expect((await t.api('POST', '/api/v1/load-balancers', { name, region: 'ams3' })).status).toBe(201);
    const page = await eventually(async () => {
      const ids = async () => (await t.service.ctx.store.page(loadBalancerFamily.kind, t.teamId, { sort: 'name', order: 'asc', limit: 2 })).items;
      const before = await ids();
      const res = await fetch(`${t.url}/api/v1/load-balancers?limit=2&sort=name&order=asc`, { headers: { authorization: `Bearer ${t.key}` } });
      const raw = await res.text();
      const after = await ids();
      return before.length === after.length && before.every((o, i) => o === after[i]) ? { raw, objects: before as unknown as LoadBalancer[] } : null;
    });
    const body = JSON.parse(page.raw);
    expect(typeof body.meta.next_cursor).toBe('string');
    const expected = await serialisedBySchema(Type.Array(loadBalancerFamily.schemas.record), {
      data: page.objects.map((o) => loadBalancerFamily.toRecord(o)),
      meta: body.meta,
    });
    expect(page.raw).toBe(expected.payload);

    // The last page: no cursor, an explicit null.
    const last = await t.api('GET', `/api/v1/load-balancers?limit=100`);
    expect(last.body.meta.next_cursor).toBeNull();
  });
});
