/**
 * The MCP server, over streamable HTTP from the service (POST /api/v1/mcp) and over stdio
 * from the CLI (`cloudplane mcp`, the built CLI as a child process), both driven by the
 * SDK's own client: the tools a read-only and a read-write key are shown, calls that return
 * the API's own data, a write seen through REST, refusals, an API error as a tool error, and
 * each role shown what its routes allow (a viewer no writes, a member no admin's tools).
 */
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { RawConnection } from '../helpers/raw-http';
import { allTools } from '../../src/api/mcp';
import { freshConfigPath } from '../cli/run-cli';

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');

let t: TestService;
let readOnlyKey: string;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestService();
  readOnlyKey = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'reader', scope: 'read_only' })).body.data.key;
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await t.stop();
});

async function httpClient(key: string): Promise<Client> {
  const client = new Client({ name: 'cloudplane-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/api/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function stdioClient(key: string): Promise<Client> {
  const client = new Client({ name: 'cloudplane-test', version: '1.0.0' });
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith('CLOUDPLANE_')) env[name] = value;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'mcp'],
    env: { ...env, CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: key, CLOUDPLANE_CONFIG: freshConfigPath() },
    stderr: 'pipe',
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const textOf = (result: any): string => result.content.map((c: any) => c.text).join('');
const jsonOf = (result: any): any => JSON.parse(textOf(result));

describe('the tools', () => {
  it('are one per operation, each with a distinct valid name', () => {
    const names = allTools().map((tool) => tool.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
    expect(names).toEqual(expect.arrayContaining(['load_balancers_list', 'load_balancers_get', 'load_balancers_create', 'load_balancers_delete']));
  });
});

describe.each([
  ['streamable HTTP from the service', httpClient],
  ['stdio from the CLI', stdioClient],
])('over %s', (_, connect) => {
  it('shows a read-only key the reads only, and a read-write key the writes too', async () => {
    const reader = (await (await connect(readOnlyKey)).listTools()).tools.map((tool) => tool.name);
    const writer = (await (await connect(t.key)).listTools()).tools.map((tool) => tool.name);
    const reads = allTools()
      .filter((tool) => tool.operation.method === 'GET')
      .map((tool) => tool.name);
    expect(reader.sort()).toEqual(reads.sort());
    expect(writer).toEqual(expect.arrayContaining(['load_balancers_create', 'load_balancers_update', 'load_balancers_delete', 'servers_stop']));
    expect(writer.length).toBeGreaterThan(reader.length);
  });

  it('creates a load balancer through a tool, which REST then shows, and lists and gets it as the API does', async () => {
    const client = await connect(t.key);
    const name = `mcp-${Math.random().toString(36).slice(2, 8)}`;
    const created = await client.callTool({ name: 'load_balancers_create', arguments: { body: { name, region: 'fra1' } } });
    expect(created.isError).toBeFalsy();
    const record = jsonOf(created).data;
    expect(record).toMatchObject({ name, region: 'fra1' });
    const rest = await t.api('GET', `/api/v1/load-balancers/${record.id}`);
    expect(rest.status).toBe(200);
    expect(rest.body.data.name).toBe(name);

    const got = jsonOf(await client.callTool({ name: 'load_balancers_get', arguments: { id: record.id } }));
    expect(got.data).toMatchObject({ id: record.id, name, region: 'fra1', created_at: rest.body.data.created_at });
    const listed = jsonOf(await client.callTool({ name: 'load_balancers_list', arguments: { query: { limit: 100 } } }));
    expect(listed.data.map((lb: any) => lb.id)).toContain(record.id);
  });

  it('runs an action that takes no body', async () => {
    const client = await connect(t.key);
    const server = jsonOf(await client.callTool({ name: 'servers_create', arguments: { body: { name: 'mcp-app', region: 'fra1' } } })).data;
    await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running');
    const stopped = await client.callTool({ name: 'servers_stop', arguments: { id: server.id } });
    expect(stopped.isError).toBeFalsy();
    expect(jsonOf(stopped).data).toMatchObject({ id: server.id, status: expect.stringMatching(/^stop/) });
  });

  it('refuses a write tool to a read-only key', async () => {
    const client = await connect(readOnlyKey);
    const result = await client.callTool({ name: 'load_balancers_create', arguments: { body: { name: 'nope', region: 'fra1' } } });
    expect(result.isError).toBe(true);
    expect(jsonOf(result)).toMatchObject({ status: 403, error: { code: 'forbidden' } });
    const all = await t.api('GET', '/api/v1/load-balancers?limit=100');
    expect(all.body.data.map((lb: any) => lb.name)).not.toContain('nope');
  });

  it("returns an API error as a tool error with the API's code and message", async () => {
    const client = await connect(t.key);
    const missing = await client.callTool({ name: 'load_balancers_get', arguments: { id: 'lb_doesnotexist' } });
    expect(missing.isError).toBe(true);
    expect(jsonOf(missing)).toMatchObject({ status: 404, error: { code: 'load_balancer_not_found', message: expect.any(String) } });
    const invalid = await client.callTool({ name: 'load_balancers_create', arguments: { body: { region: 'fra1' } } });
    expect(invalid.isError).toBe(true);
    expect(jsonOf(invalid)).toMatchObject({ status: 422, error: { code: 'validation_failed' } });
  });
});

describe('roles', () => {
  /** Invites `email` into the bootstrap team with `role` and makes the new member's first key. */
  async function memberKey(email: string, role: string): Promise<string> {
    const invited = await t.api('POST', '/api/v1/settings/team/members', { email, role });
    expect(invited.status).toBe(201);
    return (await t.api('POST', '/api/v1/settings/api-keys', { name: `${role} key`, user_id: invited.body.data.id })).body.data.key;
  }

  it("shows each role what its routes allow: a viewer no writes, a member no admin's or installation admin's tools", async () => {
    const viewer = (await (await httpClient(await memberKey('viewer@mcp.example', 'viewer'))).listTools()).tools.map((tool) => tool.name);
    const member = await httpClient(await memberKey('member@mcp.example', 'member'));
    const memberTools = (await member.listTools()).tools.map((tool) => tool.name);
    const owner = (await (await httpClient(t.key)).listTools()).tools.map((tool) => tool.name);

    expect(viewer).toEqual(expect.arrayContaining(['load_balancers_list', 'settings_members_list']));
    expect(viewer).not.toContain('load_balancers_create');
    expect(memberTools).toEqual(expect.arrayContaining(['load_balancers_create', 'servers_stop']));
    // An admin's (members, usage limits) and an installation admin's (teams, even to read).
    for (const name of ['settings_members_invite', 'usage_limits_set', 'teams_list', 'teams_create']) {
      expect(memberTools).not.toContain(name);
      expect(owner).toContain(name);
    }
    expect(viewer).not.toContain('teams_list');

    const refused = await member.callTool({ name: 'teams_list', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(jsonOf(refused)).toMatchObject({ status: 403, error: { code: 'forbidden' } });
  });
});

describe('the endpoint', () => {
  it('answers 401 to no key before reading the body', async () => {
    // Headers announcing a body that never comes: the answer does not wait for it.
    const conn = new RawConnection(t.url);
    await conn.ready;
    const { host } = new URL(t.url);
    await conn.write(`POST /api/v1/mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 50000\r\n\r\n{"jsonrpc"`);
    const answer = await eventually(async () => conn.json());
    conn.destroy();
    expect(conn.head()?.status).toBe(401);
    expect(answer.error.code).toBe('unauthorized');
  });

  it('answers GET and DELETE with 405: a stateless server has no stream or session', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await t.api(method, '/api/v1/mcp');
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toContain('POST');
    }
  });

  it("answers a client that does not accept the transport's answers in the API's envelope", async () => {
    const res = await t.api('POST', '/api/v1/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(406);
    expect(res.body.error.code).toBe('not_acceptable');
    const accept = { accept: 'application/json, text/event-stream' };
    const broken = await t.api('POST', '/api/v1/mcp', { jsonrpc: '2.0', params: {} }, { headers: accept });
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_mcp_request');
  });

  it('counts each tool call as the request it makes, in the audit log', async () => {
    const client = await httpClient(t.key);
    const name = `audited-${Math.random().toString(36).slice(2, 8)}`;
    const record = jsonOf(await client.callTool({ name: 'load_balancers_create', arguments: { body: { name, region: 'fra1' } } })).data;
    const created = await eventually(async () => (await t.api('GET', `/api/v1/audit-log?resource_id=${record.id}&type=load_balancer.created`)).body.data[0]);
    expect(created).toMatchObject({ resource_id: record.id, type: 'load_balancer.created' });
  });
});
