/**
 * What each answer of an /api/v1 operation means, and the headers it carries, added to
 * the OpenAPI document as it is served: @fastify/swagger calls every response "Default
 * Response" and lists no headers. Written once per status here (docs/api.md's table), not
 * on each route, and kept out of the route schemas, which ajv and the serializer compile.
 */
import type { OpenApiDocument } from './openapi-links';

/** What @fastify/swagger writes where a route gave no description. */
const DEFAULT_DESCRIPTION = 'Default Response';

interface HeaderDoc {
  type: 'string' | 'integer';
  /** int64 for an integer that can pass 2^31 (a Unix time in seconds does in 2038), so no client reads it as an int32. */
  format?: 'int64';
  description: string;
}
interface HeaderObject {
  description: string;
  required?: boolean;
  schema: { type: HeaderDoc['type']; format?: HeaderDoc['format'] };
}

const REQUEST_ID: HeaderDoc = {
  type: 'string',
  description: "The request's id: the client's X-Request-Id when it sent a usable one, else one the service made. Quote it when reporting a problem.",
};
const RATE_LIMIT: Record<string, HeaderDoc> = {
  'X-RateLimit-Limit': { type: 'integer', description: 'Requests allowed per API key (or, without a valid key, per client address) a minute.' },
  'X-RateLimit-Remaining': { type: 'integer', description: 'Requests left in the current window.' },
  'X-RateLimit-Reset': { type: 'integer', format: 'int64', description: 'When the current window ends, in Unix seconds.' },
};
const RETRY_AFTER: HeaderDoc = { type: 'integer', description: 'Seconds to wait before trying again.' };
const ETAG: HeaderDoc = {
  type: 'string',
  description: "The resource's version (its resourceVersion, quoted): send it as If-Match with a change to make it only if no one changed the resource since.",
};

/**
 * The paths whose answers carry the ETag of the resource they are about: those whose
 * changes take If-Match (an `if-match` header parameter), and the resource an action
 * below it changes (`/incidents/{id}` of `/incidents/{id}/resolve`). The create on the
 * path above one carries it too; a DELETE's answer may not (the resource may be gone).
 */
function versionedPaths(document: OpenApiDocument): Set<string> {
  const paths = new Set<string>();
  for (const [path, item] of Object.entries(document.paths))
    for (const operation of Object.values(item)) if (operation.parameters?.some((p) => p.in === 'header' && p.name === 'if-match')) paths.add(path);
  for (const path of [...paths]) {
    const resource = /^(.*\/\{[^}]+\})\/[^{}]+$/.exec(path)?.[1];
    if (resource && resource in document.paths) paths.add(resource);
  }
  return paths;
}

const header = ({ type, format, description }: HeaderDoc, required = false): HeaderObject => ({
  description,
  ...(required ? { required } : {}),
  schema: { type, ...(format ? { format } : {}) },
});

/** The header objects of one response: every header it may carry, those always sent marked required. */
export function headersOf(status: number): Record<string, HeaderObject> {
  // Load shedding (503) answers before the rate limit is counted, so only 503 may lack its headers.
  const rateLimitSent = status !== 503;
  const headers: Record<string, HeaderObject> = { 'X-Request-Id': header(REQUEST_ID, true) };
  for (const [name, doc] of Object.entries(RATE_LIMIT)) headers[name] = header(doc, rateLimitSent && (status < 300 || status === 429));
  if (status === 201) headers.Location = header({ type: 'string', description: 'The URL of the record just created.' }, true);
  if (status === 401) headers['WWW-Authenticate'] = header({ type: 'string', description: 'Bearer: send an API key as "Authorization: Bearer <key>".' }, true);
  if (status === 429) headers['Retry-After'] = header(RETRY_AFTER, true);
  if (status === 503)
    headers['Retry-After'] = header({ ...RETRY_AFTER, description: 'Seconds to wait before trying again, when the service sheds load (service_overloaded).' });
  return headers;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'invalid_json: the body is not JSON, or the URL is malformed.',
  401: 'unauthorized: no API key, or one that is not valid, was revoked or has expired.',
  403: "forbidden: the caller's role, or the key's scope (read_only), does not allow the operation.",
  404: "<resource>_not_found: no such record in the caller's team (another team's id answers the same).",
  409: 'Conflict: the record is busy (resource_busy), in a state that refuses the request (invalid_state), or the name or backend is taken (name_taken, backend_already_attached).',
  412: 'precondition_failed: the resource is no longer at the version If-Match names; read it again and send the change with its new ETag.',
  413: 'payload_too_large: the body is larger than the service accepts.',
  415: 'unsupported_media_type: send the body as application/json.',
  422: 'validation_failed, with error.details naming every offending field; or a domain rule broken (invalid_cursor, region_unavailable, ...).',
  429: 'rate_limit_exceeded: too many requests this minute; retry after Retry-After seconds.',
  503: 'persistence_unavailable (the store of record cannot take the change) or service_overloaded (the service sheds load); retry later.',
};

/** The meaning of a status on an operation of this method. */
export function describeResponse(method: string, status: number): string {
  if (status === 200) {
    if (method === 'GET') return 'The record, or a page of records, in the data envelope.';
    return method === 'DELETE' ? 'Deleted at once: the record, now deleted.' : 'The record after the change.';
  }
  if (status === 201) return 'Created: the new record; Location is its URL.';
  if (status === 202) return 'Deletion under way: the record, now deleting; it becomes deleted in the background.';
  if (status === 204) return 'Done; no body.';
  return ERROR_DESCRIPTIONS[status] ?? `HTTP ${status}.`;
}

/**
 * Describes every response of every operation and lists its headers, each a $ref to one
 * entry of components.headers (written out on all 600-odd responses they were two thirds
 * of the document); returns the document.
 */
export function describeResponses<D extends OpenApiDocument & { components?: { headers?: Record<string, unknown> } }>(document: D): D {
  const components = (document.components ??= {});
  const shared = (components.headers ??= {});
  const tagged = versionedPaths(document);
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (!response.description || response.description === DEFAULT_DESCRIPTION)
          response.description = describeResponse(method.toUpperCase(), Number(status));
        const headers: Record<string, unknown> = {};
        const code = Number(status);
        const answerHeaders = headersOf(code);
        if (code >= 200 && code < 300 && (tagged.has(path) || (method === 'post' && tagged.has(`${path}/{id}`))))
          answerHeaders.ETag = header(ETAG, method !== 'delete');
        for (const [name, object] of Object.entries(answerHeaders)) {
          // A header is sent always on some answers and may be missing on others: one entry each.
          const key = object.required ? name : `${name}.optional`;
          shared[key] ??= object;
          headers[name] = { $ref: `#/components/headers/${key}` };
        }
        response.headers = { ...headers, ...response.headers };
      }
    }
  }
  return document;
}
