/**
 * Create forms are built from the API's own OpenAPI document (public at
 * /api/v1/openapi.json): a family's POST requestBody schema gives its fields, their types,
 * enums, limits and which are required, so the console follows the API as it changes.
 * The families themselves, and how each is shown, come from the same document
 * (`x-cloudplane-families`, docs/api.md).
 */
import { API_BASE } from './api';

export interface FieldSchema {
  type?: string;
  enum?: (string | number)[];
  description?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  writeOnly?: boolean;
  anyOf?: FieldSchema[];
  $ref?: string;
  /** An object's fields (a node pool), and which it needs. */
  properties?: Record<string, FieldSchema>;
  required?: string[];
  /** A map's values (a node pool's labels): an object with no fixed fields. */
  additionalProperties?: boolean | FieldSchema;
  /** A list's items (node pools, trusted sources) and its bounds. */
  items?: FieldSchema;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
}

export interface ObjectSchema {
  type: 'object';
  required?: string[];
  properties: Record<string, FieldSchema>;
}

export interface FormField {
  name: string;
  label: string;
  required: boolean;
  /**
   * The value's kind, after a nullable union is reduced to its non-null branch: a scalar,
   * an `object` of named fields (`fields`), a `list` of items alike (`item`), or a `map`
   * of free keys to text values (labels).
   */
  kind: 'text' | 'longtext' | 'secret' | 'integer' | 'number' | 'boolean' | 'choice' | 'object' | 'list' | 'map';
  choices: string[];
  description: string;
  schema: FieldSchema;
  /** Whether the API takes null for it (an update's "remove it": a backup policy). */
  nullable: boolean;
  /** An object's fields, in the document's order. */
  fields?: FormField[];
  /** A list's item (its name is the list's, its label the list's in the singular). */
  item?: FormField;
}

interface OpenApiParameter {
  name: string;
  in: string;
  schema?: FieldSchema;
}

/** A column of a family's list; `shownIn` names the one client that shows it, if only one does. */
export interface PublishedColumn {
  key: string;
  label: string;
  secondary?: boolean;
  shownIn?: 'cli' | 'console';
}

/** One entry of the document's `x-cloudplane-families`: a family and how it is shown. */
export interface PublishedFamily {
  name: string;
  path: string;
  deletable: boolean;
  idPrefix: string;
  title: string;
  singular: string;
  columns: PublishedColumn[];
  actions: { name: string; label: string; allowedIn: string[] }[];
  deleteOptions: { query: string; label: string }[];
  /** Whether the console shows the family with its generic pages. */
  console: boolean;
}

type JsonContent = Record<string, { schema?: FieldSchema & Partial<ObjectSchema> }>;

interface OpenApiOperation {
  parameters?: OpenApiParameter[];
  requestBody?: { content?: JsonContent };
  responses?: Record<string, { content?: JsonContent }>;
}

interface OpenApiDocument {
  'x-cloudplane-families'?: PublishedFamily[];
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, FieldSchema & Partial<ObjectSchema>> };
}

let documentPromise: Promise<OpenApiDocument> | null = null;

function openApiDocument(): Promise<OpenApiDocument> {
  documentPromise ??= fetch(`${API_BASE}/openapi.json`, { headers: { accept: 'application/json' } }).then((response) => {
    if (!response.ok) throw new Error(`The API description could not be read (${response.status}).`);
    return response.json() as Promise<OpenApiDocument>;
  });
  documentPromise.catch(() => (documentPromise = null));
  return documentPromise;
}

function resolve<T extends FieldSchema>(document: OpenApiDocument, schema: T): T {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace('#/components/schemas/', '');
  return (document.components?.schemas?.[name] ?? {}) as T;
}

const ACRONYMS: Record<string, string> = { id: 'ID', ip: 'IP', ipv4: 'IPv4', cidr: 'CIDR', ssl: 'SSL', gb: 'GB', vpn: 'VPN', url: 'URL' };

/** `health_check_path` → "Health check path", `size_gb` → "Size GB". */
export function labelOf(name: string): string {
  const words = name.split('_').map((word) => ACRONYMS[word] ?? word);
  const first = words[0];
  words[0] = first === first.toUpperCase() ? first : first[0].toUpperCase() + first.slice(1);
  return words.join(' ');
}

/** A write-only secret (a VPN pre-shared key) is typed into a password field and never shown. */
const isSecret = (schema: FieldSchema) => schema.writeOnly === true || /write-only/i.test(schema.description ?? '');

/** `Node pools` → `Node pool`: what one item of a list is called. */
export const singularOf = (label: string) => label.replace(/ies$/, 'y').replace(/s$/, '');

function fieldOf(document: OpenApiDocument, name: string, raw: FieldSchema, required: boolean): FormField {
  const given = resolve(document, raw);
  const nonNull = given.anyOf?.find((branch) => branch.type !== 'null');
  const schema = resolve(document, nonNull ?? given);
  const nullable = given.anyOf?.some((branch) => branch.type === 'null') ?? false;
  const base = { name, label: labelOf(name), required, choices: [] as string[], description: schema.description ?? '', schema, nullable };
  if (schema.enum) return { ...base, kind: 'choice', choices: schema.enum.map(String) };
  if (schema.type === 'object' && schema.properties) {
    const inner = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties).map(([key, field]) => fieldOf(document, key, field, inner.has(key)));
    return { ...base, kind: 'object', fields };
  }
  if (schema.type === 'object' && typeof schema.additionalProperties === 'object') return { ...base, kind: 'map' };
  if (schema.type === 'array' && schema.items) {
    const item = fieldOf(document, name, schema.items, true);
    return { ...base, kind: 'list', item: { ...item, label: singularOf(base.label) } };
  }
  if (schema.type === 'boolean') return { ...base, kind: 'boolean' };
  if (schema.type === 'integer') return { ...base, kind: 'integer' };
  if (schema.type === 'number') return { ...base, kind: 'number' };
  if (isSecret(schema)) return { ...base, kind: 'secret' };
  return { ...base, kind: (schema.maxLength ?? 0) > 1000 ? 'longtext' : 'text' };
}

/** The body fields of an operation, in the document's order; null when the API has no such operation. */
async function bodyFieldsOf(apiPath: string, method: 'post' | 'patch'): Promise<FormField[] | null> {
  const document = await openApiDocument();
  const body = document.paths[`${API_BASE}${apiPath}`]?.[method]?.requestBody?.content?.['application/json']?.schema;
  if (!body) return null;
  const schema = resolve(document, body) as ObjectSchema;
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, field]) => fieldOf(document, name, field, required.has(name)));
}

/** The fields of `POST /api/v1/<path>` (create). */
export async function createFieldsOf(path: string): Promise<FormField[]> {
  const fields = await bodyFieldsOf(`/${path}`, 'post');
  if (!fields) throw new Error(`The API describes no create operation for ${path}.`);
  return fields;
}

/** The family paths the API has a create for (`POST /api/v1/<path>`). */
export async function creatablePaths(): Promise<Set<string>> {
  const document = await openApiDocument();
  const prefix = `${API_BASE}/`;
  return new Set(
    Object.entries(document.paths)
      .filter(([path, operations]) => path.startsWith(prefix) && !path.slice(prefix.length).includes('/') && operations.post !== undefined)
      .map(([path]) => path.slice(prefix.length)),
  );
}

/** The fields of `PATCH /api/v1/<path>/{id}` (update), or null for a family that cannot be changed (jobs). */
export function updateFieldsOf(path: string): Promise<FormField[] | null> {
  return bodyFieldsOf(`/${path}/{id}`, 'patch');
}

/** The body fields of another operation of the API (`/kubernetes-clusters/{id}/node-pools`, post), or null when it has none. */
export function operationFieldsOf(apiPath: string, method: 'post' | 'patch'): Promise<FormField[] | null> {
  return bodyFieldsOf(apiPath, method);
}

/** The states a family's list can be filtered by (its `status` query parameter), minus `destroyed`, which a list never shows. */
export async function listStatusesOf(path: string): Promise<string[]> {
  const document = await openApiDocument();
  const parameter = document.paths[`${API_BASE}/${path}`]?.get?.parameters?.find((p) => p.in === 'query' && p.name === 'status');
  return (parameter?.schema?.enum ?? []).map(String).filter((state) => state !== 'destroyed');
}

/** Whether the family's list (or, with `one`, its GET of one resource) can be watched: it takes `watch` (docs/api.md, Watching changes). */
export async function watchableOf(path: string, one: boolean): Promise<boolean> {
  const document = await openApiDocument();
  const read = document.paths[`${API_BASE}/${path}${one ? '/{id}' : ''}`]?.get;
  return read?.parameters?.some((p) => p.in === 'query' && p.name === 'watch') === true;
}

/** Every family the API serves, in its order, with how each is shown. */
export async function publishedFamilies(): Promise<PublishedFamily[]> {
  const document = await openApiDocument();
  const families = document['x-cloudplane-families'];
  if (!families) throw new Error('The API description names no resource families.');
  return families;
}

/** The fields of an operation's answer record (its envelope's `data`), by name. */
function answerFieldsOf(document: OpenApiDocument, operation: OpenApiOperation | undefined, status: string): Record<string, FieldSchema> {
  const envelope = operation?.responses?.[status]?.content?.['application/json']?.schema;
  if (!envelope) return {};
  const data = resolve(document, envelope).properties?.data;
  return data ? (resolve(document, data).properties ?? {}) : {};
}

/** A field a create's answer carries once (a database's password), with what the API says of it. */
export interface ShownOnce {
  name: string;
  label: string;
  description: string;
}

/**
 * The fields of `POST /api/v1/<path>`'s answer that the family's record never has: a secret
 * the API shows in that answer only (docs/api.md: a database's administrator password).
 */
export async function shownOnceOf(path: string): Promise<ShownOnce[]> {
  const document = await openApiDocument();
  const created = answerFieldsOf(document, document.paths[`${API_BASE}/${path}`]?.post, '201');
  const record = answerFieldsOf(document, document.paths[`${API_BASE}/${path}/{id}`]?.get, '200');
  return Object.entries(created)
    .filter(([name]) => !(name in record))
    .map(([name, schema]) => ({ name, label: labelOf(name).toLowerCase(), description: schema.description ?? '' }));
}

/** The fields of a family's record whose values are an enum (a condition's type, a backup's trigger): shown in words. */
export async function enumFieldsOf(path: string): Promise<Set<string>> {
  const document = await openApiDocument();
  const record = answerFieldsOf(document, document.paths[`${API_BASE}/${path}/{id}`]?.get, '200');
  const isEnum = (schema: FieldSchema): boolean => {
    const given = resolve(document, schema);
    return given.enum !== undefined || (given.anyOf ?? []).some((branch) => resolve(document, branch).enum !== undefined);
  };
  return new Set(
    Object.entries(record)
      .filter(([, schema]) => isEnum(schema))
      .map(([name]) => name),
  );
}
