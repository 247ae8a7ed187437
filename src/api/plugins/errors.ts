/**
 * The one place where failures become HTTP answers: ApiErrors keep their docs/api.md code,
 * schema violations become 422 validation_failed naming the offending fields (the first
 * MAX_ERROR_DETAILS, the rest counted), store failures
 * become 503, and anything else a 500 with the request id and nothing of the internals.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, FieldError, MAX_ERROR_DETAILS, persistenceUnavailable, resourceBusy, validationFailed } from '../../lib/errors';
import { ConflictError, StoreUnavailableError } from '../../store/types';
import type { ApiContext } from '../context';
import { metaFor } from '../envelope';
import type { RouteMethods } from '../route-methods';
import { requestIdOf } from './observability';

interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

const FRAMEWORK_ERRORS: Record<string, [number, string, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported_media_type', 'Send the body as application/json.'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'invalid_json', 'The Content-Length does not match the body.'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'payload_too_large', 'The body is larger than the service accepts.'],
};

/** The missing or unknown property an issue names, where ajv names one. */
function propertyOf(issue: AjvIssue): string | undefined {
  const named = issue.params.missingProperty ?? issue.params.additionalProperty;
  return typeof named === 'string' ? named : undefined;
}

/** `/a/b/0` -> `a.b[0]`, with the missing or unknown property appended where ajv names one. */
function fieldOf(issue: AjvIssue, context: string | undefined): string {
  const path = issue.instancePath
    .split('/')
    .filter(Boolean)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '');
  const property = propertyOf(issue);
  const full = property ? (path ? `${path}.${property}` : property) : path;
  return full || (context === 'body' ? 'body' : (context ?? 'request'));
}

function messageOf(issue: AjvIssue, method: string): string {
  switch (issue.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return method === 'PATCH' ? 'is not a field that can be updated' : 'is not a recognised field';
    case 'enum': {
      const allowed = issue.params.allowedValues;
      if (Array.isArray(allowed)) return `must be one of: ${allowed.join(', ')}`;
      return issue.message ?? 'is invalid';
    }
    default:
      return issue.message ?? 'is invalid';
  }
}

/**
 * The fields the issues name, each once: the first MAX_ERROR_DETAILS written out, the rest
 * only counted. A body of 100,000 bad items gives as many issues: naming each (a split,
 * a regex and a message per issue) held the event loop for a quarter of a second, and
 * even a key and a set entry per issue cost a millisecond a request for 8,000 of them.
 * Past the named ones, ajv's issues of one field follow each other (it checks an item's
 * keywords together), so a field is counted once by comparing it with the issue before.
 */
export function toFieldErrors(issues: AjvIssue[], context: string | undefined, method: string): { named: FieldError[]; more: number } {
  const seen = new Set<string>();
  const named: FieldError[] = [];
  let more = 0;
  let previous: AjvIssue | undefined;
  for (const issue of issues) {
    // anyOf/oneOf wrappers repeat what their branches said.
    if (issue.keyword === 'anyOf' || issue.keyword === 'oneOf' || issue.keyword === 'if') continue;
    const property = propertyOf(issue);
    if (named.length < MAX_ERROR_DETAILS) {
      // The path as ajv wrote it, with the property it names: one key per field, cheap to make.
      const key = property === undefined ? issue.instancePath : `${issue.instancePath}/${property}`;
      if (seen.has(key)) continue;
      seen.add(key);
      named.push({ field: fieldOf(issue, context), message: messageOf(issue, method) });
    } else if (!sameField(issue, previous)) {
      more += 1;
    }
    previous = issue;
  }
  return { named, more };
}

const sameField = (issue: AjvIssue, previous: AjvIssue | undefined) =>
  previous !== undefined && issue.instancePath === previous.instancePath && propertyOf(issue) === propertyOf(previous);

/** What the router refuses before any hook runs (a path that is not valid percent-encoding). */
const ROUTER_ERRORS: Record<string, [number, string]> = {
  FST_ERR_BAD_URL: [400, 'A path segment of the URL is not valid percent-encoding.'],
  FST_ERR_MAX_PARAM_LENGTH: [422, 'A path parameter of the URL is too long.'],
};

/**
 * Fastify's frameworkErrors: these requests never reach a route or the onRequest hooks,
 * so the request id and the envelope are set here.
 */
export function sendFrameworkError(ctx: ApiContext, err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const [status, message] = ROUTER_ERRORS[err.code] ?? [400, 'The request is not valid.'];
  const code = status === 422 ? 'validation_failed' : 'bad_request';
  const details = status === 422 ? [{ field: 'path', message: 'is too long' }] : undefined;
  return reply
    .code(status)
    .header('X-Request-Id', request.id)
    .header('Content-Type', 'application/json; charset=utf-8')
    .send({ error: { code, message, ...(details ? { details } : {}) }, meta: { persistence: ctx.store.persistence(), provider: 'connected' } });
}

const errorMeta = (ctx: ApiContext, request: FastifyRequest) => {
  const meta = metaFor(ctx, request);
  return { ...meta, provider: meta.provider ?? 'connected' };
};

/**
 * A refused request's body that is read and thrown away rather than hung up on: no more
 * than Node buffers anyway. Reading a few hundred bytes costs far less than the new
 * connection a client makes after a hang-up: a key flooding 429s (four requests at a
 * time) cost the service three times what bare Fastify pays per refusal, most of it in
 * opening and closing a connection per request.
 */
const DRAINED_BODY_BYTES = 16 * 1024;

/** Whether the request announced a body that has not all arrived yet, of unknown length or more than is drained. */
function largeBodyStillComing(request: FastifyRequest): boolean {
  const length = Number(request.headers['content-length'] ?? 0);
  const large = request.headers['transfer-encoding'] !== undefined || length > DRAINED_BODY_BYTES;
  return large && !request.raw.complete;
}

/** How long a refused upload's connection stays half-closed, for the client to read the answer. */
const HANG_UP_GRACE_MS = 2000;

/**
 * Answers a request whose body is still arriving, then closes without reading the body.
 * Left alone, Node reads and discards the whole body to keep the connection (all 100 MB of
 * an unauthenticated upload); told `Connection: close`, it still drains while it resets the
 * connection the moment the answer is written, and a reset can wipe the answer from the
 * client before the client reads it (11 of 20 raw uploads never saw their 401 so). Here the
 * body is paused (Node stops taking it off the wire once 16 KiB wait), the answer goes out
 * followed by a FIN, and the connection is dropped after a grace or when the client closes.
 */
function hangUpWithoutReading(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('Connection', 'close');
  const socket = request.raw.socket;
  // Node calls this on the socket once a `Connection: close` answer is finished.
  socket.destroySoon = () => {
    request.raw.pause();
    socket.end();
    const drop = setTimeout(() => socket.destroy(), HANG_UP_GRACE_MS);
    socket.once('close', () => {
      clearTimeout(drop);
    });
  };
}

/** Answers an ApiError in the envelope: the one place an error becomes an HTTP answer. */
export function sendApiError(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply, error: ApiError) {
  if (error.headers) reply.headers(error.headers);
  if (error.status === 401) reply.header('WWW-Authenticate', 'Bearer realm="cloudplane"');
  // Refused before a large body has arrived (no key, too large, overloaded); a small one Node reads and drops.
  if (largeBodyStillComing(request)) hangUpWithoutReading(request, reply);
  const body: { code: string; message: string; details?: FieldError[]; more_details?: number; request_id?: string } = {
    code: error.code,
    message: error.message,
  };
  if (error.details) {
    body.details = error.details.slice(0, MAX_ERROR_DETAILS);
    const more = error.details.length - body.details.length + error.moreDetails;
    if (more > 0) body.more_details = more;
  }
  if (error.status >= 500) body.request_id = request.id;
  return reply.code(error.status).send({ error: body, meta: errorMeta(ctx, request) });
}

/** What Node's HTTP parser and connection checks raise, before or beside any request. */
function clientErrorOf(err: NodeJS.ErrnoException): [number, string, string] {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'request_timeout', 'The request did not arrive in time; send it again at once.'];
  if (err.code === 'HPE_HEADER_OVERFLOW') return [431, 'headers_too_large', 'The request headers are larger than the service accepts.'];
  return [400, 'bad_request', 'The request is not valid HTTP.'];
}

/**
 * Fastify's clientErrorHandler: errors of the connection, where Fastify has no request to
 * answer (a malformed request line, headers over the size limit, a request that took too
 * long to arrive). Written raw in the envelope with a fresh X-Request-Id, then the
 * connection is closed, as Node itself would.
 */
export function clientErrorHandlerFor(ctx: ApiContext): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // Node's own rule: answer only if no response has begun on this connection, so the
    // client never gets a second status line in the middle of the first answer.
    if (socket.writable && !answerBegun(socket)) {
      const [status, code, message] = clientErrorOf(err);
      const requestId = requestIdOf(undefined);
      const body = JSON.stringify({ error: { code, message }, meta: { persistence: ctx.store.persistence(), provider: 'connected' } });
      ctx.logger.debug({ reqId: requestId, code: err.code, status }, 'refused a request at the connection level');
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroySoon();
  };
}

/** Whether the response Node's HTTP server holds on the socket (its own `_httpMessage`, untyped) has sent its headers. */
function answerBegun(socket: Socket): boolean {
  const inFlight: unknown = '_httpMessage' in socket ? socket._httpMessage : undefined;
  return typeof inFlight === 'object' && inFlight !== null && 'headersSent' in inFlight && inFlight.headersSent === true;
}

/** HTTP/1.1 requires a Host header (RFC 9112 3.2): the 400 Node would send, in the envelope. */
export function refuseHostless(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(new ApiError(400, 'bad_request', 'An HTTP/1.1 request must carry a Host header.'));
      return;
    }
    done();
  });
}

export function registerErrorHandler(app: FastifyInstance, ctx: ApiContext): void {
  const sendError = (request: FastifyRequest, reply: FastifyReply, error: ApiError) => sendApiError(ctx, request, reply, error);

  app.setErrorHandler((err: FastifyError & { validation?: AjvIssue[]; validationContext?: string }, request, reply) => {
    if (err instanceof ApiError) return sendError(request, reply, err);
    if (err.validation) {
      const { named, more } = toFieldErrors(err.validation, err.validationContext, request.method);
      return sendError(request, reply, validationFailed(named, more));
    }
    if (err instanceof StoreUnavailableError) return sendError(request, reply, persistenceUnavailable());
    // The writer retries conflicts many times; one that still escapes means other writers
    // kept winning: transient, and the client's retry is the right answer, not a 500.
    if (err instanceof ConflictError) {
      request.log.warn({ kind: err.kind, id: err.id }, 'write lost every retry to concurrent writers');
      return sendError(request, reply, resourceBusy('The resource kept changing while this request tried to write it; retry the request.'));
    }
    if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (err instanceof SyntaxError && err.statusCode === 400)) {
      return sendError(request, reply, new ApiError(400, 'invalid_json', 'The body is not valid JSON.'));
    }
    const known = err.code ? FRAMEWORK_ERRORS[err.code] : undefined;
    if (known) return sendError(request, reply, new ApiError(known[0], known[1], known[2]));
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      // 403 comes from the docs page's file server refusing a path out of its folder.
      return sendError(request, reply, new ApiError(err.statusCode, err.statusCode === 403 ? 'forbidden' : 'bad_request', err.message));
    }
    request.log.error({ err }, 'unexpected error');
    return sendError(request, reply, new ApiError(500, 'internal_error', 'Something went wrong on our side. Quote the request id when reporting it.'));
  });
}

/** The path as the router saw it (percent-decoded), for naming it and finding its methods. */
function decodedPath(url: string): string {
  const path = url.split('?')[0];
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * What a request no route took answers: 405 with `Allow` when the path exists under other
 * methods (`routes` knows every route of the app), else 404. Set in the authenticated
 * context, so its hooks run first: without a valid key any unknown path is 401, and which
 * paths exist is not told to a caller without one.
 */
export function registerNotFoundHandler(api: FastifyInstance, ctx: ApiContext, routes: RouteMethods): void {
  api.setNotFoundHandler((request, reply) => {
    const path = decodedPath(request.url);
    const allowed = routes.allowed(path);
    // A route that takes this method but found nothing (a docs asset that is not there) is a 404 too.
    if (allowed.length === 0 || allowed.includes(request.method))
      return sendApiError(ctx, request, reply, new ApiError(404, 'route_not_found', `No endpoint ${request.method} ${path}.`));
    reply.header('allow', allowed.join(', '));
    return sendApiError(ctx, request, reply, new ApiError(405, 'method_not_allowed', `${path} answers ${allowed.join(', ')}, not ${request.method}.`));
  });
}
