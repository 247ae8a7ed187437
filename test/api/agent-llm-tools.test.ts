/**
 * With an LLM configured, the agent hands the model the API's reads as tools and the model
 * answers from what they return: the calls are made as the person who asked (their team),
 * only reads are offered (no write, no kubeconfig), and the rounds of calls are bounded.
 *
 * The endpoint is an OpenAI-compatible HTTP server whose "model" follows a fixed script per
 * question, so what the answer says can only come from what the tools returned.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestService, TestService, waitForStatus } from '../helpers/service';
import { MAX_TOOL_ROUNDS } from '../../src/agent/llm-chat';

interface Sent {
  messages: Array<{ role: string; content: string | null; tool_call_id?: string; tool_calls?: unknown[] }>;
  tools?: Array<{ type: string; function: { name: string; description: string; parameters: { type: string } } }>;
}

const toolCall = (id: string, name: string, args: object) => ({
  choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] } }],
});
const say = (content: string) => ({ choices: [{ message: { role: 'assistant', content } }] });

/** The scripted model: what it answers to a conversation, by its question and the tool results so far. */
function script(sent: Sent): object {
  const question = [...sent.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const results = sent.messages.filter((m) => m.role === 'tool').map((m) => m.content ?? '');
  if (question === 'How many servers are running in fra1?') {
    if (results.length === 0) return toolCall('call-1', 'servers_list', { query: { limit: 100 } });
    const servers = (JSON.parse(results[0]) as { data: Array<{ name: string; region: string; status: string }> }).data;
    const running = servers.filter((s) => s.region === 'fra1' && s.status === 'running').map((s) => s.name);
    return say(`${running.length} servers are running in fra1: ${running.sort().join(', ')}.`);
  }
  if (question.startsWith('Show me ')) {
    if (results.length === 0) return toolCall('call-1', 'servers_get', { id: question.slice('Show me '.length) });
    return say(`The tool said: ${results[0]}`);
  }
  // Any other question: a model that never stops calling tools, even when none are offered.
  return toolCall(`call-${results.length + 1}`, 'regions_list', {});
}

async function startScriptedModel() {
  const sent: Sent[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as Sent;
      sent.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(script(body)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    sent,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("the agent's LLM, answering from the API's reads", () => {
  let t: TestService;
  let model: Awaited<ReturnType<typeof startScriptedModel>>;
  let thread: string;
  const ask = async (content: string, key?: string, threadId = thread) => {
    const res = await t.api('POST', `/api/v1/agent/threads/${threadId}/messages`, { content }, key ? { key } : {});
    expect(res.status).toBe(201);
    return res.body.data[1].content as string;
  };

  beforeAll(async () => {
    model = await startScriptedModel();
    t = await startTestService({ CLOUDPLANE_AGENT_LLM_URL: model.url });
    const made = await Promise.all(
      [
        ['web-1', 'fra1'],
        ['web-2', 'fra1'],
        ['cache-1', 'ams3'],
      ].map(async ([name, region]) => (await t.api('POST', '/api/v1/servers', { name, region })).body.data.id as string),
    );
    await Promise.all(made.map((id) => waitForStatus(t, `/api/v1/servers/${id}`, 'running', 30_000)));
    thread = (await t.api('POST', '/api/v1/agent/threads', { title: 'tools' })).body.data.id;
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    await model?.close();
  });

  it("answers from a tool's live result, and offers only the reads, never a write or a kubeconfig", async () => {
    expect(await ask('How many servers are running in fra1?')).toBe('2 servers are running in fra1: web-1, web-2.');
    const [first, second] = model.sent.slice(-2);
    const offered = (first.tools ?? []).map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(['servers_list', 'servers_get', 'load_balancers_list', 'audit_log_search', 'usage_get']));
    for (const name of ['servers_create', 'servers_delete', 'servers_stop', 'kubernetes_clusters_kubeconfig', 'webhooks_create'])
      expect(offered).not.toContain(name);
    expect(first.tools?.every((tool) => tool.type === 'function' && tool.function.parameters.type === 'object')).toBe(true);
    // The second request carries the call and the API's answer to it, as the chat protocol has them.
    expect(second.messages.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [expect.objectContaining({ id: 'call-1' })] });
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call-1' });
    expect(JSON.parse(second.messages.at(-1)?.content ?? '').data).toHaveLength(3);
  });

  it("makes the calls as the asker: another team's server is not found, the asker's own is", async () => {
    const other = await t.api('POST', '/api/v1/teams', { name: 'Team B', owner_email: 'owner@b.example' });
    const otherKey: string = other.body.data.api_key.key;
    const theirs = (await t.api('POST', '/api/v1/servers', { name: 'secret-box', region: 'fra1' }, { key: otherKey })).body.data.id as string;
    const answer = await ask(`Show me ${theirs}`);
    expect(answer).toContain('The tool said: The API refused the call');
    expect(answer).toContain('"status":404');
    expect(answer).not.toContain('secret-box');

    const theirThread = (await t.api('POST', '/api/v1/agent/threads', { title: 'b' }, { key: otherKey })).body.data.id as string;
    expect(await ask(`Show me ${theirs}`, otherKey, theirThread)).toContain('"name":"secret-box"');
  });

  it('stops a model that keeps calling tools after its last round, and answers from the rules instead', async () => {
    const before = model.sent.length;
    const answer = await ask('What regions are there?');
    const asked = model.sent.slice(before);
    // MAX_TOOL_ROUNDS rounds with tools, then one without; the model's calls after that are not made.
    expect(asked).toHaveLength(MAX_TOOL_ROUNDS + 1);
    expect(asked.slice(0, MAX_TOOL_ROUNDS).every((sent) => (sent.tools ?? []).length > 0)).toBe(true);
    expect(asked[MAX_TOOL_ROUNDS].tools).toBeUndefined();
    expect(asked[MAX_TOOL_ROUNDS].messages.filter((m) => m.role === 'tool')).toHaveLength(MAX_TOOL_ROUNDS);
    // The rules' answer: the agent's own words, not the model's.
    expect(answer).not.toBe('');
    expect(answer).toContain('fra1');
  });
});
