/**
 * POST /api/v1/mcp: the API's MCP server over the SDK's streamable HTTP transport, stateless
 * (a server and a transport per request; no session, so no server-to-client stream: GET and
 * DELETE get the API's 405, as the transport's specification allows). The tools are in
 * api/mcp.ts.
 *
 * It is a route of the authenticated context like any other: the caller is authenticated
 * (and rate limited) before its body is read, and a call of a tool is then judged as the
 * request it makes. The POST itself only carries those calls (`judgedPerCall`), so a
 * read_only key and a viewer may use it to list and call the reads.
 */
import { Type } from '@sinclair/typebox';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { ApiApp } from '../api-app';
import { mcpServerFor, MCP_PATH, RouteRules } from '../mcp';
import { known } from '../../lib/known';
import { ApiError } from '../../lib/errors';
import { fieldOf } from '../../lib/unknown-values';
import { parseJsonText } from '../mcp';
import { ErrorEnvelope } from '../plugins/error-responses';
import { packageVersion } from '../../lib/package-root';

/** A JSON-RPC 2.0 message: its members are MCP's (its specification), not this API's. */
const JsonRpcMessage = Type.Object(
  { jsonrpc: Type.Literal('2.0', { description: 'Always 2.0.' }) },
  { additionalProperties: true, description: 'A JSON-RPC 2.0 message of the Model Context Protocol: a request, a notification or a response.' },
);

/** The request headers the transport reads: what the client accepts, sends and speaks. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id'];

export function registerMcpRoute(app: ApiApp, rules: RouteRules): void {
  const version = packageVersion();
  app.post(MCP_PATH, {
    schema: {
      tags: ['mcp'],
      operationId: 'sendMcpMessage',
      summary: 'The MCP server (Model Context Protocol, streamable HTTP, stateless)',
      description:
        "One JSON-RPC message of the Model Context Protocol (initialize, tools/list, tools/call, ...), answered as JSON. The tools are the API's operations (docs/api.md, MCP): the reads for every caller, the writes for one whose role and key scope may make them; a tool call is made as the REST request it names, with the caller's credentials. Send `Accept: application/json, text/event-stream`. GET and DELETE answer 405: there is no session and no stream from the server.",
      body: JsonRpcMessage,
      response: {
        200: { description: 'The JSON-RPC response.', content: { 'application/json': { schema: JsonRpcMessage } } },
        202: { description: 'A notification or a response, accepted; no body.', type: 'null' },
        400: ErrorEnvelope,
        406: ErrorEnvelope,
      },
    },
    config: { judgedPerCall: true },
    handler: async (request, reply) => {
      const principal = known(request.principal, 'the caller of an authenticated route');
      const server = mcpServerFor(app, request, principal, rules, version);
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      let answer: Response;
      let text: string;
      try {
        await server.connect(transport);
        const headers = new Headers();
        for (const name of TRANSPORT_HEADERS) {
          const value = request.headers[name];
          if (typeof value === 'string') headers.set(name, value);
        }
        answer = await transport.handleRequest(new Request(`http://mcp${MCP_PATH}`, { method: 'POST', headers }), { parsedBody: request.body });
        text = await answer.text();
      } finally {
        await server.close();
      }
      if (answer.status !== 200 && answer.status !== 202) throw transportRefusal(answer.status, text);
      reply.status(answer.status);
      answer.headers.forEach((value, name) => {
        if (name !== 'content-length') reply.header(name, value);
      });
      return reply.send(text || undefined);
    },
  });
}

/**
 * The transport's refusal of a request it cannot take (a client that does not accept JSON and
 * an event stream, a body that is no JSON-RPC message), in the API's error envelope.
 */
function transportRefusal(status: number, text: string): ApiError {
  const message = fieldOf(fieldOf(parseJsonText(text), 'error'), 'message');
  const code = status === 406 ? 'not_acceptable' : status === 415 ? 'unsupported_media_type' : 'invalid_mcp_request';
  return new ApiError(status, code, typeof message === 'string' ? message : `The MCP transport answered ${status}.`);
}
