/**
 * Idempotency-Key on POST (docs/api.md, Idempotency), on the real service and store: a
 * retry answers the first answer again and does the work once; another body under the same
 * key is refused; a key is its caller's; a request in flight holds its key; the record is
 * a secret at rest, expires and is swept; a crash between the work and the record does not
 * pin the key.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { eventually, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';
import { clusterEnv, clusterMode } from '../helpers/cluster';
import { startChildService, ChildService } from '../helpers/child-service';
import { findInFiles, filesUnder } from '../helpers/secret-scan';
import { IDEMPOTENCY_RECORD_PREFIX } from '../../src/api/plugins/idempotency';
import fs from 'node:fs';

jest.setTimeout(120_000);

const LB = { name: 'idem-web', region: 'fra1' };
const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });

/** An OpenAI-compatible endpoint that holds every request until released: the agent's answer, and so its POST, waits on it. */
async function startHeldLlm() {
  const held: http.ServerResponse[] = [];
  let open = true;
  const answer = (res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [{ message: { content: 'the held answer' } }] }));
  };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => (open ? held.push(res) : answer(res)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    held: () => held.length,
    release() {
      open = false;
      for (const res of held.splice(0)) answer(res);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held.splice(0)) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('Idempotency-Key', () => {
  let t: TestService;
  let llm: Awaited<ReturnType<typeof startHeldLlm>>;

  beforeAll(async () => {
    llm = await startHeldLlm();
    // Servers take a while to create, so an action on one is refused 409 resource_busy meanwhile.
    t = await startTestService({ CLOUDPLANE_AGENT_LLM_URL: llm.url, CLOUDPLANE_SIM_DELAYS: 'server=1500' });
  });
  afterAll(async () => {
    await t?.stop();
    await llm?.close();
  });

  const loadBalancersNamed = async (name: string) =>
    ((await t.api('GET', '/api/v1/load-balancers?limit=100')).body.data as Array<{ id: string; name: string }>).filter((lb) => lb.name === name);

  it('a retried POST answers the first answer again (status, body, Location) and makes one load balancer', async () => {
    const key = randomUUID();
    const body = { ...LB, name: 'idem-retry' };
    const first = await t.api('POST', '/api/v1/load-balancers', body, withKey(key));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await t.api('POST', '/api/v1/load-balancers', { region: body.region, name: body.name }, withKey(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.body).toEqual(first.body);
    expect((await loadBalancersNamed('idem-retry')).map((lb) => lb.id)).toEqual([first.body.data.id]);
  });

  it('without the header, two POSTs do the work twice', async () => {
    const body = { ...LB, name: 'idem-none' };
    const ids = [(await t.api('POST', '/api/v1/load-balancers', body)).body.data.id, (await t.api('POST', '/api/v1/load-balancers', body)).body.data.id];
    expect(new Set(ids).size).toBe(2);
  });

  it('the same key with another body, or on another route, is 422 idempotency_key_reused and does nothing', async () => {
    const key = randomUUID();
    expect((await t.api('POST', '/api/v1/load-balancers', { ...LB, name: 'idem-body' }, withKey(key))).status).toBe(201);
    const other = await t.api('POST', '/api/v1/load-balancers', { ...LB, name: 'idem-body-2' }, withKey(key));
    expect(other.status).toBe(422);
    expect(other.body.error).toMatchObject({ code: 'idempotency_key_reused', details: [{ field: 'Idempotency-Key' }] });
    const route = await t.api('POST', '/api/v1/agent/threads', { title: 'idem' }, withKey(key));
    expect(route.status).toBe(422);
    expect(route.body.error.code).toBe('idempotency_key_reused');
    expect(await loadBalancersNamed('idem-body-2')).toEqual([]);
  });

  it.each([
    ['empty', ''],
    ['over 255 characters', 'k'.repeat(256)],
    ['not printable ASCII', 'clé-1'],
  ])('a malformed key (%s) is 422 naming the header, and nothing is made', async (_what, key) => {
    const res = await t.api('POST', '/api/v1/load-balancers', { ...LB, name: 'idem-malformed' }, withKey(key));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.map((d: { field: string }) => d.field.toLowerCase())).toContain('idempotency-key');
    expect(await loadBalancersNamed('idem-malformed')).toEqual([]);
  });

  it('a 255-character key of printable ASCII is taken', async () => {
    const key = ` !~${'x'.repeat(252)}`.slice(0, 255).replace(/^ /, 'a');
    expect((await t.api('POST', '/api/v1/load-balancers', { ...LB, name: 'idem-long' }, withKey(key))).status).toBe(201);
    expect((await t.api('POST', '/api/v1/load-balancers', { ...LB, name: 'idem-long' }, withKey(key))).headers.get('idempotent-replayed')).toBe('true');
  });

  it('concurrent identical requests: one does the work, the others answer 409 resource_busy or its replay', async () => {
    const key = randomUUID();
    const body = { ...LB, name: 'idem-race' };
    const answers = await Promise.all(Array.from({ length: 6 }, () => t.api('POST', '/api/v1/load-balancers', body, withKey(key))));
    const worked = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
    expect(worked).toHaveLength(1);
    for (const a of answers) {
      if (a.status === 201) expect(a.body.data.id).toBe(worked[0].body.data.id);
      else expect([a.status, a.body.error.code]).toEqual([409, 'resource_busy']);
    }
    expect((await loadBalancersNamed('idem-race')).map((lb) => lb.id)).toEqual([worked[0].body.data.id]);
  });

  it('a request still in flight holds its key: a second one is 409 resource_busy, and once it is done the key replays its answer', async () => {
    const thread = (await t.api('POST', '/api/v1/agent/threads', { title: 'held' })).body.data;
    const key = randomUUID();
    const path = `/api/v1/agent/threads/${thread.id}/messages`;
    const first = t.api('POST', path, { content: 'how many load balancers?' }, withKey(key));
    await eventually(async () => llm.held() > 0);
    const busy = await t.api('POST', path, { content: 'how many load balancers?' }, withKey(key));
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('resource_busy');
    llm.release();
    const done = await first;
    expect(done.status).toBe(201);
    const replayed = await t.api('POST', path, { content: 'how many load balancers?' }, withKey(key));
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(done.body);
    const messages = (await t.api('GET', `${path}?limit=100`)).body.data as Array<{ role: string }>;
    expect(messages.filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('a 409 resource_busy (a resource in a transient state) is not kept: the retry under the same key does the work once it can', async () => {
    const server = (await t.api('POST', '/api/v1/servers', { name: 'idem-busy', region: 'fra1' })).body.data.id as string;
    const key = randomUUID();
    const early = await t.api('POST', `/api/v1/servers/${server}/stop`, {}, withKey(key));
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('resource_busy');
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running');
    const retried = await t.api('POST', `/api/v1/servers/${server}/stop`, {}, withKey(key));
    expect(retried.status).toBe(200);
    expect(retried.body.data.id).toBe(server);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    const replayed = await t.api('POST', `/api/v1/servers/${server}/stop`, {}, withKey(key));
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(retried.body);
  });

  it("a key is its API key's: another key with the same Idempotency-Key does its own work", async () => {
    const other = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'idem-other' })).body.data.key as string;
    const key = randomUUID();
    const body = { ...LB, name: 'idem-per-key' };
    const mine = await t.api('POST', '/api/v1/load-balancers', body, withKey(key));
    const theirs = await t.api('POST', '/api/v1/load-balancers', body, { ...withKey(key), key: other });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    expect(await loadBalancersNamed('idem-per-key')).toHaveLength(2);
  });

  it('a replayed API key creation answers the same key once more, and the stored answer is not plain text at rest', async () => {
    const key = randomUUID();
    const first = await t.api('POST', '/api/v1/settings/api-keys', { name: 'idem-secret' }, withKey(key));
    expect(first.status).toBe(201);
    const again = await t.api('POST', '/api/v1/settings/api-keys', { name: 'idem-secret' }, withKey(key));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.key).toBe(first.body.data.key);
    const keys = (await t.api('GET', '/api/v1/settings/api-keys?limit=100')).body.data as Array<{ name: string }>;
    expect(keys.filter((k) => k.name === 'idem-secret')).toHaveLength(1);
    // The scan reads what the store wrote (the id is there), yet not the key, in any encoding.
    await eventually(async () => filesUnder(t.dataDir).some((file) => fs.readFileSync(file).includes(first.body.data.id)));
    expect(findInFiles(t.dataDir, [{ label: 'the replayed API key', value: first.body.data.key }])).toEqual([]);
  });

  it('the OpenAPI document names the header on every POST', async () => {
    const doc = (await t.api('GET', '/api/v1/openapi.json')).body;
    const posts = Object.entries(doc.paths as Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>>)
      .filter(([path, ops]) => path.startsWith('/api/v1/') && ops.post)
      .map(([path, ops]) => [path, (ops.post.parameters ?? []).some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')]);
    expect(posts.length).toBeGreaterThan(10);
    expect(posts.filter(([, has]) => !has)).toEqual([]);
  });
});

describe('Idempotency-Key records expire', () => {
  let t: TestService;
  let llm: Awaited<ReturnType<typeof startHeldLlm>>;
  beforeAll(async () => {
    llm = await startHeldLlm();
    t = await startTestService({ CLOUDPLANE_IDEMPOTENCY_TTL_SECONDS: '1', CLOUDPLANE_SECRET_SWEEP_SECONDS: '1', CLOUDPLANE_AGENT_LLM_URL: llm.url });
  });
  afterAll(async () => {
    await t?.stop();
    await llm?.close();
  });

  it('but a request still running holds its key past the expiry, by its lease', async () => {
    const thread = (await t.api('POST', '/api/v1/agent/threads', { title: 'long' })).body.data;
    const path = `/api/v1/agent/threads/${thread.id}/messages`;
    const key = randomUUID();
    const first = t.api('POST', path, { content: 'still there?' }, withKey(key));
    await eventually(async () => llm.held() > 0);
    const records = await t.service.ctx.store.secrets.list(IDEMPOTENCY_RECORD_PREFIX);
    const expiry = Math.max(...records.map((r) => Date.parse(r.data.expires_at)));
    await eventually(async () => Date.now() > expiry + 1_500, 10_000, 100);
    const busy = await t.api('POST', path, { content: 'still there?' }, withKey(key));
    expect([busy.status, busy.body.error?.code]).toEqual([409, 'resource_busy']);
    llm.release();
    expect((await first).status).toBe(201);
    const messages = (await t.api('GET', `${path}?limit=100`)).body.data as Array<{ role: string }>;
    expect(messages.filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('are swept once expired, and the key then does the work again', async () => {
    const key = randomUUID();
    const body = { ...LB, name: 'idem-expiry' };
    const first = await t.api('POST', '/api/v1/load-balancers', body, withKey(key));
    expect(first.status).toBe(201);
    const records = () => t.service.ctx.store.secrets.list(IDEMPOTENCY_RECORD_PREFIX);
    expect((await records()).length).toBeGreaterThan(0);
    await eventually(async () => (await records()).length === 0, 30_000, 200);
    const later = await t.api('POST', '/api/v1/load-balancers', body, withKey(key));
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.body.data.id).not.toBe(first.body.data.id);
  });
});

describe('a crash between the work and the record', () => {
  let child: ChildService | null = null;
  let llm: Awaited<ReturnType<typeof startHeldLlm>>;
  afterAll(async () => {
    await child?.kill();
    await llm?.close();
  });

  it('does not pin the key: after a restart, the retry runs the request again', async () => {
    llm = await startHeldLlm();
    const dataDir = tempDataDir();
    const apiKey = `cpk_${randomBytes(20).toString('hex')}`;
    const env = {
      ...(clusterMode() ? await clusterEnv(dataDir) : {}),
      CLOUDPLANE_SIM_DELAY_MS: '50',
      CLOUDPLANE_AGENT_LLM_URL: llm.url,
      CLOUDPLANE_IDEMPOTENCY_LEASE_SECONDS: '1',
    };
    child = await startChildService({ dataDir, key: apiKey, env });
    const thread = (await child.api('POST', '/api/v1/agent/threads', { title: 'crash' })).body.data;
    const path = `/api/v1/agent/threads/${thread.id}/messages`;
    const key = randomUUID();
    // The question is stored, then the answer waits on the held LLM: the service dies there.
    void child.api('POST', path, { content: 'anything failed?' }, withKey(key)).catch(() => undefined);
    await eventually(async () => llm.held() > 0);
    await child.kill();
    llm.release();

    child = await startChildService({ dataDir, key: apiKey, env });
    const retried = await eventually(
      async () => {
        const res = await child!.api('POST', path, { content: 'anything failed?' }, withKey(key));
        return res.status === 201 ? res : null;
      },
      30_000,
      200,
    );
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    const messages = (await child.api('GET', `${path}?limit=100`)).body.data as Array<{ role: string }>;
    // The first question (written before the crash) and the retry's: the work ran again.
    expect(messages.filter((m) => m.role === 'user')).toHaveLength(2);
  });
});
