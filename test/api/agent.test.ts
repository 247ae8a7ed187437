/**
 * The agent through the HTTP API, answering from real data: one load balancer that came
 * up, and one whose provisioning failed. The failure is real: the same data directory is
 * served a second time with the simulated provider failing every load balancer.
 */
import { createTeam } from '../../src/accounts/bootstrap';
import { eventually, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';

describe('agent', () => {
  let t: TestService;
  let teamId: string;
  let runningId: string;
  let failedId: string;

  beforeAll(async () => {
    const dataDir = tempDataDir();
    const healthy = await startTestService({}, dataDir);
    teamId = healthy.teamId;
    runningId = (await healthy.api('POST', '/api/v1/load-balancers', { name: 'healthy-web', region: 'fra1' })).body.data.id;
    await waitForStatus(healthy, `/api/v1/load-balancers/${runningId}`, 'running');
    await healthy.stop();

    t = await startTestService({ CLOUDPLANE_SIM_FAILURES: 'load_balancer=1', CLOUDPLANE_BOOTSTRAP_API_KEY: healthy.key }, dataDir);
    failedId = (await t.api('POST', '/api/v1/load-balancers', { name: 'doomed-web', region: 'ams3' })).body.data.id;
    await waitForStatus(t, `/api/v1/load-balancers/${failedId}`, 'failed');
    await eventually(async () => (await t.service.ctx.bus.recent(teamId, '1970-01-01T00:00:00Z')).some((e) => e.type === 'load_balancer.failed'));
    // Two services one after the other (on the Kubernetes store, each with its API server's
    // informers to fill): 30 s was too little on a loaded machine.
  }, 120_000);
  afterAll(async () => t?.stop());

  async function newThread(title?: string): Promise<string> {
    const res = await t.api('POST', '/api/v1/agent/threads', title === undefined ? undefined : { title });
    expect(res.status).toBe(201);
    return res.body.data.id;
  }

  async function ask(threadId: string, content: string): Promise<string> {
    const res = await t.api('POST', `/api/v1/agent/threads/${threadId}/messages`, { content });
    expect(res.status).toBe(201);
    const [question, answer] = res.body.data;
    expect(question).toMatchObject({ thread_id: threadId, role: 'user', content });
    expect(answer).toMatchObject({ thread_id: threadId, role: 'assistant' });
    expect(answer.id).toMatch(/^msg_[0-9a-z]{16,26}$/);
    return answer.content;
  }

  it('creates, reads and lists threads', async () => {
    const created = await t.api('POST', '/api/v1/agent/threads');
    expect(created.status).toBe(201);
    const thread = created.body.data;
    expect(thread).toMatchObject({ title: 'New thread', message_count: 0, last_message_at: null });
    expect(thread.id).toMatch(/^thr_[0-9a-z]{16,26}$/);
    expect(created.headers.get('location')).toBe(`/api/v1/agent/threads/${thread.id}`);

    const titled = await t.api('POST', '/api/v1/agent/threads', { title: 'Incident review' });
    expect(titled.body.data.title).toBe('Incident review');

    const got = await t.api('GET', `/api/v1/agent/threads/${thread.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(thread);

    const listed = await t.api('GET', '/api/v1/agent/threads?sort=name&order=asc');
    const titles = listed.body.data.map((x: any) => x.title);
    expect(titles.indexOf('Incident review')).toBeLessThan(titles.indexOf('New thread'));
  });

  it('names the load balancers that are not running', async () => {
    const answer = await ask(await newThread(), 'Which load balancers are not running?');
    expect(answer).toContain(failedId);
    expect(answer).toContain('failed');
    expect(answer).toContain('doomed-web');
    expect(answer).not.toContain(runningId);
  });

  it('gives the status of any resource by id', async () => {
    const thread = await newThread();
    const running = await ask(thread, `status of ${runningId}`);
    expect(running).toContain(runningId);
    expect(running).toContain('healthy-web');
    expect(running).toMatch(/status is running/);
    const failed = await ask(thread, `What about ${failedId}?`);
    expect(failed).toMatch(/status is failed/);
    expect(failed).toContain('simulated failure');
    expect(await ask(thread, 'status of lb_00000000000000000000')).toContain('no load balancer with id lb_00000000000000000000');
  });

  it('tells what failed in the last hour', async () => {
    const answer = await ask(await newThread(), 'What failed in the last hour?');
    expect(answer).toMatch(/^1 thing failed in the last hour/);
    expect(answer).toContain(failedId);
    expect(answer).not.toContain(runningId);
  });

  it('counts and lists resources by family', async () => {
    const thread = await newThread();
    const count = await ask(thread, 'How many load balancers do I have?');
    expect(count).toMatch(/You have 2 load balancers/);
    expect(count).toContain('1 running');
    expect(count).toContain('1 failed');

    const list = await ask(thread, 'list my LBs');
    expect(list).toContain(runningId);
    expect(list).toContain(failedId);

    expect(await ask(thread, 'show my running load balancers')).not.toContain(failedId);
  });

  it('reports recent events, and explains what it can do otherwise', async () => {
    const thread = await newThread();
    const events = await ask(thread, 'Show recent events');
    expect(events).toContain('load_balancer.failed');
    expect(events).toContain('load_balancer.running');
    const help = await ask(thread, 'Hello there');
    expect(help).toContain('What failed in the last hour?');
    expect(help).toContain('load balancers');
    // Families are named in proper plurals.
    expect(help).toContain('alert policies');
    expect(help).not.toMatch(/[^aeiou]ys\b/);
    expect(await ask(thread, 'how many alert policies do I have?')).toMatch(/You have 0 alert policies/);
  });

  it("lists a thread's messages oldest first, paged, and keeps the thread's count", async () => {
    const thread = await newThread();
    for (let i = 1; i <= 3; i++) await ask(thread, `question ${i}`);

    const all = await t.api('GET', `/api/v1/agent/threads/${thread}/messages`);
    expect(all.status).toBe(200);
    expect(all.body.data.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(all.body.data.filter((m: any) => m.role === 'user').map((m: any) => m.content)).toEqual(['question 1', 'question 2', 'question 3']);

    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await t.api('GET', `/api/v1/agent/threads/${thread}/messages?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.body.data.length).toBeLessThanOrEqual(4);
      walked.push(...page.body.data.map((m: any) => m.id));
      cursor = page.body.meta.next_cursor;
    } while (cursor);
    expect(walked).toEqual(all.body.data.map((m: any) => m.id));

    const newest = await t.api('GET', `/api/v1/agent/threads/${thread}/messages?order=desc&limit=1`);
    expect(newest.body.data[0].id).toBe(all.body.data[5].id);
    const questions = await t.api('GET', `/api/v1/agent/threads/${thread}/messages?role=user`);
    expect(questions.body.data).toHaveLength(3);

    const one = await t.api('GET', `/api/v1/agent/threads/${thread}/messages/${all.body.data[0].id}`);
    expect(one.body.data).toEqual(all.body.data[0]);

    const record = (await t.api('GET', `/api/v1/agent/threads/${thread}`)).body.data;
    expect(record.message_count).toBe(6);
    expect(record.last_message_at).toBe(all.body.data[5].created_at);

    const types = (await t.service.ctx.bus.recent(teamId, '1970-01-01T00:00:00Z')).map((e) => e.type);
    expect(types).toContain('thread.created');
    expect(types.some((type) => type.startsWith('message.'))).toBe(false);
  });

  it("answers 404 thread_not_found for an unknown thread or another team's", async () => {
    const thread = await newThread();
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other', ownerName: 'O', ownerEmail: 'o@example.com' });
    const asOther = { key: other.token };
    for (const res of [
      await t.api('GET', '/api/v1/agent/threads/thr_00000000000000000000'),
      await t.api('GET', `/api/v1/agent/threads/${thread}`, undefined, asOther),
      await t.api('GET', `/api/v1/agent/threads/${thread}/messages`, undefined, asOther),
      await t.api('POST', `/api/v1/agent/threads/${thread}/messages`, { content: 'which load balancers are not running?' }, asOther),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('thread_not_found');
    }
    expect((await t.api('GET', '/api/v1/agent/threads', undefined, asOther)).body.data).toEqual([]);
    // The other team's question was never stored in the thread.
    expect((await t.api('GET', `/api/v1/agent/threads/${thread}`)).body.data.message_count).toBe(0);
  });

  it('refuses a message without content', async () => {
    const thread = await newThread();
    const missing = await t.api('POST', `/api/v1/agent/threads/${thread}/messages`, {});
    expect(missing.status).toBe(422);
    expect(missing.body.error.code).toBe('validation_failed');
    expect(missing.body.error.details.map((d: any) => d.field)).toContain('content');

    const empty = await t.api('POST', `/api/v1/agent/threads/${thread}/messages`, { content: '' });
    expect(empty.status).toBe(422);
    const unknown = await t.api('POST', `/api/v1/agent/threads/${thread}/messages`, { content: 'hi', mood: 'curious' });
    expect(unknown.status).toBe(422);
    const badTitle = await t.api('POST', '/api/v1/agent/threads', { title: '' });
    expect(badTitle.status).toBe(422);
    expect((await t.api('GET', `/api/v1/agent/threads/${thread}/messages`)).body.data).toEqual([]);
  });
});
