/**
 * The API as MCP tools (Model Context Protocol): one tool per operation of the list the CLI
 * builds its commands from (api/operations.ts), so a new family, action or field becomes a
 * tool by itself. A tool is named by the command's words (`load_balancers_list`,
 * `servers_stop`); its arguments are the path's placeholders, `body` (the operation's body
 * schema) and `query` (its query schema).
 *
 * Who sees what: every caller sees the reads; the writes (POST, PUT, PATCH, DELETE) only a
 * caller whose role and key scope may make them (accounts/roles.ts), so a read_only key or
 * a viewer is not even shown them. A call is made as a request of its own through the app,
 * with the caller's own credentials: every rule, quota, rate limit, usage count and audit
 * entry applies to it exactly as to the same REST request. Its result is the JSON the API
 * answered; an API error is a tool error holding the API's status, code and message.
 */
import type { FastifyInstance, FastifyRequest, InjectOptions, RouteOptions } from 'fastify';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, CallToolResult, ListToolsRequestSchema, Tool } from '@modelcontextprotocol/sdk/types.js';
import { allOperations, Operation, placeholdersOf } from './operations';
import { refusalOf, Principal, Requirement } from '../accounts/roles';
import { isRecord } from '../lib/unknown-values';
import type { AgentTools } from '../agent/types';

export const MCP_PATH = '/api/v1/mcp';

export interface McpTool {
  name: string;
  operation: Operation;
  tool: Tool;
}

/** `['load-balancers', 'attach']` -> `load_balancers_attach`: MCP tool names are letters, digits, `_` and `-`. */
export const toolNameOf = (operation: Operation): string => operation.command.join('_').replace(/[^A-Za-z0-9_]/g, '_');

/** A TypeBox schema as plain JSON Schema (TypeBox marks its schemas with symbols, which are no JSON). */
const plain = (schema: object): Record<string, unknown> => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;

function toolOf(operation: Operation): McpTool {
  const placeholders = placeholdersOf(operation.path);
  const properties: Record<string, object> = {};
  for (const name of placeholders) properties[name] = { type: 'string', description: `The ${name.replace(/_/g, ' ')} in the path` };
  const required = [...placeholders];
  if (operation.body) {
    properties.body = { ...plain(operation.body), description: 'The JSON body of the request' };
    if ((operation.body.required ?? []).length > 0) required.push('body');
  }
  if (operation.query) properties.query = { ...plain(operation.query), description: 'The query parameters of the request' };
  const name = toolNameOf(operation);
  const read = operation.method === 'GET';
  return {
    name,
    operation,
    tool: {
      name,
      title: operation.summary,
      description: `${operation.summary}: ${operation.method} /api/v1${operation.path}${operation.paged ? ' (paged: pass meta.next_cursor as query.cursor)' : ''}`,
      inputSchema: { type: 'object', properties, required, additionalProperties: false },
      annotations: { readOnlyHint: read, destructiveHint: operation.method === 'DELETE', openWorldHint: false },
    },
  };
}

let cachedTools: McpTool[] | undefined;
/** Every operation's tool, in the list's order. */
export function allTools(): McpTool[] {
  // An operation served only with a setting on (the simulation API) is the CLI's alone.
  return (cachedTools ??= allOperations()
    .filter((operation) => operation.servedWith === undefined)
    .map(toolOf));
}

/** A route's path with its placeholders blanked, `:id` and `{id}` alike, to match an operation to its route. */
const shapeOf = (path: string) => path.replace(/\{[^}]+\}|:[^/]+/g, '{}');

interface RouteRule {
  requires?: Requirement;
  actsAsWrite?: boolean;
}

/**
 * What each route of the authenticated context requires beyond its method (its config's
 * `requires` and `actsAsWrite`), for the tools a caller is shown. Registered before the
 * routes, so it sees every one of them.
 */
export class RouteRules {
  private readonly rules = new Map<string, RouteRule>();

  collect(app: FastifyInstance): void {
    app.addHook('onRoute', (route: RouteOptions) => {
      const config = (route.config ?? {}) as RouteRule;
      for (const method of [route.method].flat()) {
        this.rules.set(`${method} ${shapeOf(route.url)}`, { requires: config.requires, actsAsWrite: config.actsAsWrite });
      }
    });
  }

  of(operation: Operation): RouteRule {
    return this.rules.get(`${operation.method} ${shapeOf(`/api/v1${operation.path}`)}`) ?? {};
  }
}

/** Why the caller may not make the tool's call (the API's own words), or null when it may. */
export const toolRefusal = (principal: Principal, tool: McpTool, rules: RouteRules): string | null => {
  const rule = rules.of(tool.operation);
  return refusalOf(principal, tool.operation.method, rule.requires, rule.actsAsWrite);
};

/** The headers that carry the caller's credentials, passed on to each call as they came. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'x-csrf-token'];

const textResult = (text: string, isError = false): CallToolResult => ({ content: [{ type: 'text', text }], ...(isError ? { isError: true } : {}) });

function errorResult(status: number, error: unknown): CallToolResult {
  const code = isRecord(error) && typeof error.code === 'string' ? error.code : `http_${status}`;
  const message = isRecord(error) && typeof error.message === 'string' ? error.message : '';
  return textResult(JSON.stringify({ status, error: isRecord(error) ? error : { code, message } }), true);
}

/** The path of a call, each placeholder filled from the tool's arguments. */
function pathOf(operation: Operation, args: Record<string, unknown>): string | { missing: string } {
  let path = `/api/v1${operation.path}`;
  for (const name of placeholdersOf(operation.path)) {
    const value = args[name];
    if (typeof value !== 'string' && typeof value !== 'number') return { missing: name };
    path = path.replace(`{${name}}`, encodeURIComponent(String(value)));
  }
  return path;
}

function queryOf(args: Record<string, unknown>): string {
  const query = args.query;
  if (!isRecord(query)) return '';
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    for (const item of [value].flat()) search.append(name, typeof item === 'string' ? item : JSON.stringify(item));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** JSON text's value; undefined for an empty or malformed text. */
export function parseJsonText(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Makes one tool's call as a request of its own through the app, with the caller's credentials. */
async function callTool(app: FastifyInstance, request: FastifyRequest, tool: McpTool, args: Record<string, unknown>): Promise<CallToolResult> {
  const { operation } = tool;
  const path = pathOf(operation, args);
  if (typeof path !== 'string') {
    return errorResult(422, { code: 'validation_failed', message: `${tool.name} needs the argument ${path.missing}.` });
  }
  const headers: Record<string, string> = { accept: operation.document ? `${operation.document.mediaType}, application/json;q=0.5` : 'application/json' };
  for (const name of CREDENTIAL_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const userAgent = request.headers['user-agent'];
  headers['user-agent'] = `${typeof userAgent === 'string' ? `${userAgent} ` : ''}(mcp)`;
  const options: InjectOptions = { method: operation.method, url: `${path}${queryOf(args)}`, headers, remoteAddress: request.ip };
  // A body only where the operation takes one (an action without one gets none, as from the CLI).
  if (operation.body) {
    options.payload = JSON.stringify(isRecord(args.body) ? args.body : {});
    headers['content-type'] = 'application/json';
  }
  const response = await app.inject(options);
  const contentType = String(response.headers['content-type'] ?? '');
  const body = contentType.includes('json') ? parseJsonText(response.body) : undefined;
  if (response.statusCode >= 400) return errorResult(response.statusCode, isRecord(body) ? body.error : undefined);
  if (body === undefined) return textResult(response.body);
  return textResult(JSON.stringify(body));
}

/** The text of a tool's result: the API's JSON, or its refusal as `{status, error}`, marked. */
const textOf = (result: CallToolResult): string => {
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return result.isError ? `The API refused the call: ${text}` : text;
};

/**
 * The reads the agent's LLM may call, as the caller of `request`: every GET the caller may
 * make, except those answering a document (a kubeconfig holds credentials, which no model
 * is to be handed). Made as MCP tool calls are, through the app with the caller's
 * credentials, so the team, role, rate limit and usage apply as to the caller's own GETs.
 */
export function agentToolsFor(app: FastifyInstance, request: FastifyRequest, principal: Principal, rules: RouteRules): AgentTools {
  const reads = allTools().filter((tool) => tool.operation.method === 'GET' && !tool.operation.document && toolRefusal(principal, tool, rules) === null);
  return {
    list: reads.map(({ tool }) => ({ name: tool.name, description: tool.description ?? tool.name, parameters: tool.inputSchema })),
    async call(name, args) {
      const tool = reads.find((t) => t.name === name);
      if (!tool) return textOf(errorResult(404, { code: 'not_found', message: `No tool named ${name}; the tools are the API's reads.` }));
      return textOf(await callTool(app, request, tool, args));
    },
  };
}

/**
 * An MCP server for one request of one caller: it lists the tools the caller may use and
 * makes their calls through `app` as that caller.
 */
export function mcpServerFor(app: FastifyInstance, request: FastifyRequest, principal: Principal, rules: RouteRules, version: string): McpServer {
  // The high-level server's own tool registry wants zod schemas; these tools are JSON Schema, so the handlers are set on its protocol server.
  const mcp = new McpServer({ name: 'cloudplane', version }, { capabilities: { tools: {} } });
  const { server } = mcp;
  const visible = () => allTools().filter((tool) => toolRefusal(principal, tool, rules) === null);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: visible().map((tool) => tool.tool) }));
  server.setRequestHandler(CallToolRequestSchema, async (call) => {
    const tool = allTools().find((t) => t.name === call.params.name);
    if (!tool) return errorResult(404, { code: 'not_found', message: `No tool named ${call.params.name}.` });
    const refusal = toolRefusal(principal, tool, rules);
    if (refusal) return errorResult(403, { code: 'forbidden', message: refusal });
    return callTool(app, request, tool, call.params.arguments ?? {});
  });
  return mcp;
}
