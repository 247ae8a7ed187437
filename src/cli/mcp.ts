/**
 * `cloudplane mcp`: the service's MCP server, over stdio, for an MCP client that starts its
 * servers as commands (a desktop assistant, an editor). It is a proxy: each request is passed
 * to the service's own MCP endpoint (POST /api/v1/mcp) with the context's key, so the tools
 * are exactly those the service shows that key (the reads for a read_only key, the writes
 * too for a key that may make them), and every call is judged, counted and audited there.
 * Nothing but MCP messages goes to stdout; a failure to reach the service is a tool error
 * (or the list's error), and the server keeps running.
 */
import type { Command } from 'commander';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolRequestSchema, CallToolResult, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Credentials } from './contexts';
import { packageVersion } from '../lib/package-root';
import { textOf } from '../lib/unknown-values';

type Connection = Credentials & { timeoutMs: number };

/** A client of the service's endpoint, connected on first use and again after a failure. */
class ServiceClient {
  private client: Promise<Client> | undefined;

  constructor(private readonly connection: Connection) {}

  async use<T>(call: (client: Client) => Promise<T>): Promise<T> {
    this.client ??= this.connect();
    try {
      return await call(await this.client);
    } catch (err) {
      this.client = undefined;
      throw err;
    }
  }

  private async connect(): Promise<Client> {
    const { apiUrl, apiKey } = this.connection;
    const client = new Client({ name: 'cloudplane-cli', version: packageVersion() });
    const transport = new StreamableHTTPClientTransport(new URL(`${apiUrl}/api/v1/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${apiKey}`, 'user-agent': 'cloudplane-cli' } },
    });
    await client.connect(transport, { timeout: this.connection.timeoutMs });
    return client;
  }
}

export async function serveMcp(connection: Connection): Promise<void> {
  const service = new ServiceClient(connection);
  const options = { timeout: connection.timeoutMs };
  const mcp = new McpServer({ name: 'cloudplane', version: packageVersion() }, { capabilities: { tools: {} } });
  const { server } = mcp;
  server.setRequestHandler(ListToolsRequestSchema, (request) => service.use((client) => client.listTools(request.params, options)));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    try {
      return (await service.use((client) => client.callTool(request.params, undefined, options))) as CallToolResult;
    } catch (err) {
      return { content: [{ type: 'text', text: `cannot reach ${connection.apiUrl}: ${textOf(err)}` }], isError: true };
    }
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
  });
  await server.connect(transport);
  await closed;
  await server.close();
}

export function registerMcp(program: Command, connection: () => Connection): void {
  program
    .command('mcp')
    .description("Run an MCP server over stdio with the context's key: the API's tools, as the service shows them to that key")
    .action(async () => {
      await serveMcp(connection());
    });
}
