/**
 * Named component schemas for the served OpenAPI document. @fastify/swagger inlines every
 * route's schema, so one load balancer appeared in a dozen shapes and a generated client
 * had a class for each. This moves each record, each envelope and the error into
 * components.schemas once and puts a `$ref` wherever the same schema appears.
 *
 * It works on the document, not on the route schemas: ajv and the serializer go on
 * compiling exactly the schemas they did. The names follow the operationIds the routes
 * write (requireOperationIds): `getLoadBalancer` answers a `LoadBalancerEnvelope` whose
 * data is a `LoadBalancer`; `listLoadBalancers` a `LoadBalancerList`; a create whose
 * answer shows more than the record (an API key's secret) an `ApiKeyCreatedEnvelope`; every
 * error an `ErrorEnvelope` of an `Error`; an event stream (`streamWebhookListener`) a
 * `WebhookListenerStreamEvent` per event; a protocol's message (`sendMcpMessage`) an
 * `McpMessage`. A schema is replaced where it is the same,
 * keyword for keyword, as a named one; a shape several operations name takes the words
 * their names share (a server's and a database's backups are one `Backup`).
 *
 * Every name is a noun phrase that starts with the record's name and never with a word that
 * generators put before a model's name for their own helpers: openapi-generator's Go client
 * writes `New<Model>` and `New<Model>WithDefaults` constructors and a `Nullable<Model>`
 * wrapper for each model, so a schema named `NewApiKey` beside an `ApiKey` did not compile.
 * test/api/openapi.test.ts holds every name to that rule (GENERATOR_PREFIXES there).
 */
import type { OpenApiDocument } from './openapi-links';
import { isRecord, recordAt } from '../../lib/unknown-values';

type Schema = Record<string, unknown>;
const PREFIX = '#/components/schemas/';

/** The same JSON with keys sorted, so that equal schemas give equal strings. */
function signatureOf(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(signatureOf).join(',')}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${signatureOf(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** LoadBalancers -> LoadBalancer, WebhookDeliveries -> WebhookDelivery. */
const singularOf = (plural: string) => (plural.endsWith('ies') ? `${plural.slice(0, -3)}y` : plural.replace(/s$/, ''));

const schemaOf = (response: unknown, mediaType: string): Schema | undefined => recordAt(response, 'content', mediaType, 'schema');
const jsonSchemaOf = (response: unknown) => schemaOf(response, 'application/json');
const propertyOf = (schema: Schema | undefined, key: string) => recordAt(schema, 'properties', key);
const dataOf = (envelope: Schema | undefined) => propertyOf(envelope, 'data');

/** The schemas to name, taken from the operations that answer them. */
function namedSchemas(document: OpenApiDocument): Map<string, Schema> {
  const named = new Map<string, Schema>();
  const name = (key: string, schema: Schema | undefined) => {
    if (schema && schema.type === 'object' && !named.has(key)) named.set(key, schema);
  };
  const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
  for (const operation of operations) {
    const id = operation.operationId ?? '';
    const responses = operation.responses ?? {};
    const answer = jsonSchemaOf(responses['200']);
    const got = /^get([A-Z]\w*)$/.exec(id);
    if (got) {
      name(`${got[1]}Envelope`, answer);
      name(got[1], dataOf(answer));
      name('Meta', propertyOf(answer, 'meta'));
    }
    const listed = /^list([A-Z]\w*)$/.exec(id);
    const list = jsonSchemaOf(responses['200']);
    if (listed && dataOf(list)?.type === 'array') {
      name(`${singularOf(listed[1])}List`, list);
      name(singularOf(listed[1]), recordAt(dataOf(list), 'items'));
    }
    // A stream's answer is described event by event: `streamWebhookListener` sends WebhookListenerStreamEvents.
    const streamed = /^stream([A-Z]\w*)$/.exec(id);
    if (streamed) name(`${streamed[1]}StreamEvent`, schemaOf(responses['200'], 'text/event-stream'));
    // A protocol's messages, sent and answered (`sendMcpMessage`: an McpMessage each way).
    const sent = /^send([A-Z]\w*Message)$/.exec(id);
    if (sent) name(sent[1], answer);
    const error = jsonSchemaOf(responses['401']);
    name('ErrorEnvelope', error);
    name('Error', propertyOf(error, 'error'));
  }
  // A create answers the record itself, or more (a secret shown once): then a <Record>Created.
  for (const operation of operations) {
    const created = /^create([A-Z]\w*)$/.exec(operation.operationId ?? '');
    const envelope = jsonSchemaOf(operation.responses?.['201']);
    if (!created || !envelope) continue;
    const known = [...named.values()].some((schema) => signatureOf(schema) === signatureOf(envelope));
    if (!known) {
      name(`${created[1]}CreatedEnvelope`, envelope);
      name(`${created[1]}Created`, dataOf(envelope));
    }
  }
  return named;
}

/** Replaces, below `node` (and `node` itself unless it is `keep`), every schema equal to a named one with its $ref. */
function refer(node: unknown, byShape: Map<string, string>, keep?: unknown): unknown {
  if (Array.isArray(node)) return node.map((item) => refer(item, byShape));
  if (!node || typeof node !== 'object') return node;
  if (node !== keep) {
    const name = byShape.get(signatureOf(node));
    if (name) return { $ref: `${PREFIX}${name}` };
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, refer(value, byShape)]));
}

const ROLES = ['CreatedEnvelope', 'Envelope', 'List', 'StreamEvent', 'Created'];
const roleOf = (name: string) => ROLES.find((role) => name.endsWith(role) && name.length > role.length) ?? '';
const wordsOf = (name: string) => name.match(/[A-Z][a-z0-9]*/g) ?? [];

/**
 * One name for a shape that several operations name: the words their records end in alike,
 * with the role they share (`getServerBackup` and `getDatabaseBackup` answer one
 * `BackupEnvelope` of a `Backup`), else the first name (`Job` for a job and its runs).
 */
function sharedName(names: string[], taken: (name: string) => boolean): string {
  const role = roleOf(names[0]);
  if (names.length === 1 || names.some((name) => roleOf(name) !== role)) return names[0];
  const records = names.map((name) => wordsOf(name.slice(0, name.length - role.length)).reverse());
  const common: string[] = [];
  for (let i = 0; records.every((words) => i < words.length && words[i] === records[0][i]); i++) common.unshift(records[0][i]);
  const name = `${common.join('')}${role}`;
  return common.length > 0 && !taken(name) ? name : names[0];
}

/** Moves the named schemas into components.schemas and refers to them; returns the document. */
export function nameComponents<D extends OpenApiDocument & { components?: { schemas?: Record<string, unknown> } }>(document: D): D {
  const named = namedSchemas(document);
  const shapes = new Map<string, { schema: Schema; names: string[]; name: string }>();
  for (const [name, schema] of named) {
    const shape = shapes.get(signatureOf(schema));
    if (shape) shape.names.push(name);
    else shapes.set(signatureOf(schema), { schema, names: [name], name });
  }
  const byShape = new Map<string, string>();
  const taken = new Set(named.keys());
  for (const [signature, shape] of shapes) {
    shape.name = sharedName(shape.names, (candidate) => taken.has(candidate) && !shape.names.includes(candidate));
    taken.add(shape.name);
    byShape.set(signature, shape.name);
  }
  const components = (document.components ??= {});
  const schemas = (components.schemas ??= {});
  // Each component refers to the others below it (an envelope to its record), never to itself.
  for (const { schema, name } of shapes.values()) schemas[name] = refer(schema, byShape, schema);
  document.paths = refer(document.paths, byShape) as D['paths'];
  return document;
}
