/**
 * operationIds and OpenAPI links for the served document. Routes name their operations;
 * the links are derived from the paths alone, so that no route has to spell them out. Links tell a client (and schemathesis's stateful
 * phase) which operations take the id an answer carries: without them a fuzzer only ever
 * sends made-up ids and sees 404.
 *
 * - Every documented /api/v1 operation names its own operationId (requireOperationIds).
 * - A create (POST on a collection, 201) links to every operation under `<collection>/{x}`
 *   with x taken from the created record's id (data.id, or data[0].id when it answers a list).
 * - A list (GET on a collection) that has no create links the same way, from its first row:
 *   nested records made by the service itself (webhook deliveries) are reached this way.
 *   A collection with a create gets no such link, so that a client never picks a record it
 *   did not make (the first API key listed may be the caller's own).
 * - A GET of one record links to the other operations under it, so a chain can read a
 *   record again (a server that became running) and then act on it.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { known } from '../../lib/known';

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;
const PARAM = /^\{([^}]+)\}$/;

interface Operation {
  operationId?: string;
  parameters?: { in?: string; name?: string }[];
  responses?: Record<
    string,
    { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema?: JsonSchema }>; links?: Record<string, Link> }
  >;
}
interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
}
export interface Link {
  operationId: string;
  parameters: Record<string, string>;
  description?: string;
}
export interface OpenApiDocument {
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
}

/**
 * Refuses to register a documented route without an operationId: each is written by hand
 * (createLoadBalancer, attachLoadBalancerBackend) because generated clients name their
 * methods after it, and a name made from the path (postLoadBalancersByIdAttach) reads
 * badly there. Register before the context's routes.
 */
export function requireOperationIds(api: FastifyInstance): void {
  api.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.includes('HEAD')) return; // Fastify's own HEAD twin of a GET, not documented
    const schema = route.schema ?? {};
    if (!schema.hide && !schema.operationId) throw new Error(`${methods.join(',')} ${route.url} is documented but names no operationId`);
  });
}

const paramsOf = (path: string) =>
  path
    .split('/')
    .map((s) => PARAM.exec(s)?.[1])
    .filter((p): p is string => Boolean(p));

/** Where the id sits in a JSON answer: data.id, or data[0].id for a list; null if it has none. */
function idPointer(operation: Operation | undefined, status: string): string | null {
  const data = operation?.responses?.[status]?.content?.['application/json']?.schema?.properties?.data;
  if (data?.properties?.id) return '/data/id';
  if (data?.type === 'array' && data.items?.properties?.id) return '/data/0/id';
  return null;
}

/**
 * The operations under `base/{x}`: each with x and base's own parameters, and nothing else,
 * so a link can fill every path parameter.
 */
function operationsUnder(document: OpenApiDocument, base: string): { path: string; param: string; operation: Operation }[] {
  const found: { path: string; param: string; operation: Operation }[] = [];
  const baseParams = paramsOf(base);
  for (const [path, item] of Object.entries(document.paths)) {
    const rest = path.startsWith(`${base}/`) ? path.slice(base.length + 1).split('/') : [];
    const param = PARAM.exec(rest[0] ?? '')?.[1];
    if (!param || paramsOf(path).length !== baseParams.length + 1) continue;
    for (const method of METHODS) if (item[method]?.operationId) found.push({ path, param, operation: item[method] });
  }
  return found;
}

function addLinks(source: Operation | undefined, status: string, base: string, targets: ReturnType<typeof operationsUnder>, describe: string): void {
  const pointer = idPointer(source, status);
  const response = source?.responses?.[status];
  if (!pointer || !response || targets.length === 0) return;
  const links = (response.links ??= {});
  for (const target of targets) {
    const parameters: Record<string, string> = {};
    for (const name of paramsOf(base)) parameters[`path.${name}`] = `$request.path.${name}`;
    parameters[`path.${target.param}`] = `$response.body#${pointer}`;
    const operationId = known(target.operation.operationId, 'an operationId (requireOperationIds gives every route one)');
    links[operationId] ??= { operationId, parameters, description: describe };
  }
}

/** From a GET of one record to every other operation on it or under it with the same parameters. */
function linkRecordOperations(document: OpenApiDocument, path: string): void {
  const response = document.paths[path].get?.responses?.['200'];
  if (!response) return;
  const depth = paramsOf(path).length;
  const parameters = Object.fromEntries(paramsOf(path).map((name) => [`path.${name}`, `$request.path.${name}`]));
  for (const [other, item] of Object.entries(document.paths)) {
    if ((other !== path && !other.startsWith(`${path}/`)) || paramsOf(other).length !== depth) continue;
    for (const method of METHODS) {
      const operationId = item[method]?.operationId;
      if (!operationId || item[method] === document.paths[path].get) continue;
      (response.links ??= {})[operationId] ??= { operationId, parameters, description: 'The same record.' };
    }
  }
}

/** Adds the links to a document whose operations have operationIds; returns it. */
export function linkOperations<D extends OpenApiDocument>(document: D): D {
  for (const [path, item] of Object.entries(document.paths)) {
    const last = path.split('/').pop() ?? '';
    const targets = operationsUnder(document, path);
    if (PARAM.test(last)) {
      linkRecordOperations(document, path);
      continue;
    }
    if (item.post) addLinks(item.post, '201', path, targets, 'The record just created.');
    else if (item.get) addLinks(item.get, '200', path, targets, 'The first record listed.');
  }
  return document;
}
