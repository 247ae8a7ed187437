/**
 * The agent without an LLM, asked the published questions of test/agent/questions.json on
 * state seeded through the API: servers in two regions in different states, a load
 * balancer, a VPN gateway named `office`, buckets, a job, a webhook with deliveries, a
 * database, and the events all that made within the hour. Every answer must hold each
 * expected text and none of the forbidden ones; `{name}` in either is the id of the
 * resource so named.
 */
import fs from 'node:fs';
import path from 'node:path';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { receiversOfThisFile } from '../helpers/receiver';

interface Expectation {
  question: string;
  contains: string[];
  excludes?: string[];
}

const { questions } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'agent', 'questions.json'), 'utf8')) as { questions: Expectation[] };
const VPN = { region: 'fra1', tunnel_type: 'ipsec', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' };
const receiver = receiversOfThisFile();

describe('agent questions without an LLM', () => {
  let t: TestService;
  let threadId: string;
  const ids = new Map<string, string>();

  async function create(collection: string, body: Record<string, unknown>, ready: string): Promise<string> {
    const res = await t.api('POST', `/api/v1/${collection}`, body);
    expect(res.status).toBe(201);
    const id: string = res.body.data.id;
    ids.set(String(body.name), id);
    await waitForStatus(t, `/api/v1/${collection}/${id}`, ready, 30_000);
    return id;
  }

  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    const hook = await t.api('POST', '/api/v1/webhooks', { url: (await receiver()).url, events: ['server.*'] });
    expect(hook.status).toBe(201);
    await Promise.all([
      create('servers', { name: 'web-1', region: 'fra1' }, 'running'),
      create('servers', { name: 'web-2', region: 'fra1' }, 'running'),
      create('servers', { name: 'web-3', region: 'fra1' }, 'running'),
      create('servers', { name: 'cache-1', region: 'ams3' }, 'running'),
      create('load-balancers', { name: 'edge', region: 'fra1' }, 'running'),
      create('vpn-gateways', { ...VPN, name: 'office' }, 'active'),
      create('object-storage', { name: 'assets', region: 'fra1' }, 'available'),
      create('object-storage', { name: 'logs-archive', region: 'ams3' }, 'available'),
      create('jobs', { name: 'migrate', command: 'echo done' }, 'completed'),
      create('databases', { name: 'orders', region: 'fra1' }, 'running'),
    ]);
    expect((await t.api('POST', `/api/v1/servers/${ids.get('web-2')}/stop`)).status).toBe(200);
    await waitForStatus(t, `/api/v1/servers/${ids.get('web-2')}`, 'stopped', 30_000);
    await eventually(async () => (await t.api('GET', `/api/v1/webhooks/${hook.body.data.id}/deliveries?status=succeeded`)).body.data.length > 0, 30_000);
    threadId = (await t.api('POST', '/api/v1/agent/threads', { title: 'questions' })).body.data.id;
  }, 120_000);
  afterAll(async () => t?.stop());

  it('publishes at least 40 questions', () => {
    expect(questions.length).toBeGreaterThanOrEqual(40);
  });

  const withIds = (text: string) => text.replace(/\{([a-z0-9-]+)\}/g, (whole, name: string) => ids.get(name) ?? whole);

  it.each(questions.map((q) => [q.question, q] as const))('%s', async (_, expected) => {
    const res = await t.api('POST', `/api/v1/agent/threads/${threadId}/messages`, { content: withIds(expected.question) });
    expect(res.status).toBe(201);
    const answer: string = res.body.data[1].content;
    for (const text of expected.contains) expect(answer).toContain(withIds(text));
    for (const text of expected.excludes ?? []) expect(answer).not.toContain(withIds(text));
  });
});
