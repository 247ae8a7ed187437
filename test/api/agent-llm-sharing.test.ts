/**
 * The agent's LLM endpoint is shared by teams in fair turns (lib/fair-gate.ts): a team
 * asking in many threads at once holds its places at the endpoint only, and another team's
 * question reaches the endpoint meanwhile; the waiting ones are answered once places free.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually, startTestService, TestService } from '../helpers/service';

/** An OpenAI-compatible endpoint that holds every request, noting its question, until released. */
async function startHeldLlm() {
  const held: Array<{ question: string; res: http.ServerResponse }> = [];
  let open = true;
  const answer = (res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [{ message: { content: 'the held answer' } }] }));
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { messages } = JSON.parse(Buffer.concat(chunks).toString()) as { messages: Array<{ role: string; content: string }> };
      if (open) held.push({ question: messages[messages.length - 1].content, res });
      else answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    heldQuestions: () => held.map((h) => h.question),
    release() {
      open = false;
      for (const { res } of held.splice(0)) answer(res);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const { res } of held.splice(0)) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("the agent's LLM endpoint, shared by teams", () => {
  let t: TestService;
  let llm: Awaited<ReturnType<typeof startHeldLlm>>;
  const PER_TEAM = 2;
  beforeAll(async () => {
    llm = await startHeldLlm();
    t = await startTestService({
      CLOUDPLANE_AGENT_LLM_URL: llm.url,
      CLOUDPLANE_AGENT_LLM_CONCURRENCY: '3',
      CLOUDPLANE_AGENT_LLM_CONCURRENCY_PER_TEAM: String(PER_TEAM),
    });
  });
  afterAll(async () => {
    await t?.stop();
    await llm?.close();
  });

  it("holds one team's conversations to its places, while another team's question reaches the endpoint", async () => {
    const made = await t.api('POST', '/api/v1/teams', { name: 'Team B', owner_email: 'owner@b.example' });
    expect(made.status).toBe(201);
    const teamBKey: string = made.body.data.api_key.key;

    // Team A asks in five threads at once (one exchange at a time per thread).
    const threadsA = await Promise.all(Array.from({ length: 5 }, (_, i) => t.api('POST', '/api/v1/agent/threads', { title: `a${i}` })));
    const asksA = threadsA.map((thread, i) => t.api('POST', `/api/v1/agent/threads/${thread.body.data.id}/messages`, { content: `team A question ${i}` }));
    await eventually(async () => llm.heldQuestions().length >= PER_TEAM);

    const threadB = await t.api('POST', '/api/v1/agent/threads', { title: 'b' }, { key: teamBKey });
    const askB = t.api('POST', `/api/v1/agent/threads/${threadB.body.data.id}/messages`, { content: 'team B question' }, { key: teamBKey });
    await eventually(async () => llm.heldQuestions().includes('team B question'));
    // Team A holds its two places, no more: the rest of its questions wait for a place.
    expect(llm.heldQuestions().filter((q) => q.startsWith('team A')).length).toBe(PER_TEAM);

    llm.release();
    const answered = await Promise.all([...asksA, askB]);
    // Each waiting question got its turn at the endpoint, none fell back to the rules.
    for (const res of answered) expect([res.status, res.body.data[1].content]).toEqual([201, 'the held answer']);
  });
});
