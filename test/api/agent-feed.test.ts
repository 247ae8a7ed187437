/**
 * The agent's feed through the real service: a server the simulated provider fails
 * becomes one message in the team's "Alerts" thread, visible to that team only; a
 * restart that replays the whole stream to the agent's consumer posts nothing twice;
 * and the agent answers questions about recent events from the audit log.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createTeam } from '../../src/accounts/bootstrap';
import { eventually, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';

const FAILING = { CLOUDPLANE_SIM_FAILURES: 'server=1' };

describe('agent feed', () => {
  const dataDir = tempDataDir();
  let t: TestService;
  let otherKey: string;
  let serverId: string;

  const alertThread = async (key?: string) => {
    const threads = (await t.api('GET', '/api/v1/agent/threads', undefined, key ? { key } : {})).body.data;
    return threads.find((thread: any) => thread.title === 'Alerts');
  };
  const alertMessages = async (threadId: string) => (await t.api('GET', `/api/v1/agent/threads/${threadId}/messages`)).body.data;

  async function failServer(name: string): Promise<string> {
    const created = await t.api('POST', '/api/v1/servers', { name, region: 'fra1' });
    expect(created.status).toBe(201);
    await waitForStatus(t, `/api/v1/servers/${created.body.data.id}`, 'failed');
    return created.body.data.id;
  }

  async function ask(content: string, key?: string): Promise<string> {
    const options = key ? { key } : {};
    const thread = (await t.api('POST', '/api/v1/agent/threads', { title: 'Questions' }, options)).body.data.id;
    const res = await t.api('POST', `/api/v1/agent/threads/${thread}/messages`, { content }, options);
    expect(res.status).toBe(201);
    return res.body.data[1].content;
  }

  beforeAll(async () => {
    t = await startTestService(FAILING, dataDir);
    otherKey = (await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other', ownerName: 'O', ownerEmail: 'o@example.com' })).token;
    serverId = await failServer('doomed-svr');
  }, 120_000);
  afterAll(async () => t?.stop());

  it("posts one message about the failed server into the team's Alerts thread", async () => {
    const thread = await eventually(async () => {
      const found = await alertThread();
      return found?.message_count === 1 ? found : null;
    });
    const messages = await alertMessages(thread.id);
    expect(messages).toHaveLength(1);
    const [alert] = messages;
    expect(alert).toMatchObject({ thread_id: thread.id, role: 'event' });
    expect(alert.content).toContain(`Server ${serverId} "doomed-svr" failed`);
    expect(alert.content).toContain('Reason: Provisioning failed: the provider ran out of capacity in this region');
    expect(alert.content).toContain(`Next step: delete it (DELETE /api/v1/servers/${serverId}) and create it again in another region`);
    const failed = (await t.api('GET', `/api/v1/audit-log?resource_id=${serverId}&type=server.failed`)).body.data[0];
    expect(alert.content).toContain(failed.id);
    expect(thread.last_message_at).toBe(alert.created_at);
  });

  it('shows the alert to no other team', async () => {
    const thread = await alertThread();
    expect(await alertThread(otherKey)).toBeUndefined();
    const foreign = await t.api('GET', `/api/v1/agent/threads/${thread.id}/messages`, undefined, { key: otherKey });
    expect(foreign.status).toBe(404);
    expect(await ask('What failed today?', otherKey)).toMatch(/^Nothing failed today/);
  });

  it("answers what happened, what failed and a resource's history from the audit log", async () => {
    const happened = await ask('What happened in the last hour?');
    expect(happened).toMatch(/^Events in the last hour/);
    expect(happened).toContain(`server.failed ${serverId} "doomed-svr" — Provisioning failed`);
    expect(happened).toContain(`server.created ${serverId}`);

    const failedToday = await ask('what failed today?');
    expect(failedToday).toMatch(/^1 thing failed today \(UTC\)/);
    expect(failedToday).toContain(`Server ${serverId} "doomed-svr" failed at`);
    expect(failedToday).toContain('ran out of capacity');

    const history = await ask(`history of ${serverId}`);
    expect(history).toContain('Its history (2 events, oldest first)');
    expect(history.indexOf('server.created')).toBeLessThan(history.indexOf('server.failed'));
    expect(history).toMatch(/server\.created by key_/);
    expect(history).toMatch(/server\.failed by system — Provisioning failed/);
  });

  it('posts nothing twice when a restart hands every event to the agent again', async () => {
    const thread = await alertThread();
    const [first] = await alertMessages(thread.id);
    const key = t.key;
    await t.stop();
    // As if the consumer's saved position were lost in a crash: the whole stream comes again.
    const positions = path.join(dataDir, 'events', 'events.consumers.json');
    const saved = JSON.parse(fs.readFileSync(positions, 'utf8'));
    expect(saved.agent).toBeGreaterThan(0);
    fs.writeFileSync(positions, JSON.stringify({ ...saved, agent: 0 }));

    t = await startTestService({ ...FAILING, CLOUDPLANE_BOOTSTRAP_API_KEY: key }, dataDir);
    // The consumer goes in order, so once the new failure is posted the replay is done.
    const secondId = await failServer('doomed-again');
    await eventually(async () => (await alertThread())?.message_count === 2);
    const messages = await alertMessages(thread.id);
    expect(messages).toHaveLength(2);
    expect(messages[0]).toEqual(first);
    expect(messages[1].content).toContain(`Server ${secondId} "doomed-again" failed`);
    expect((await t.api('GET', '/api/v1/agent/threads')).body.data.filter((x: any) => x.title === 'Alerts')).toHaveLength(1);
    expect(await alertThread(otherKey)).toBeUndefined();
  }, 120_000);
});
