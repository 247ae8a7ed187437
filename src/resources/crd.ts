/**
 * The CustomResourceDefinition of each family, derived from its TypeBox spec and status
 * schemas. Kubernetes only accepts structural schemas, so the JSON Schemas are rewritten:
 * nullable unions become `nullable: true`, free objects preserve unknown fields, and
 * keywords Kubernetes rejects or does not know are dropped.
 */
import type { TSchema } from '@sinclair/typebox';
import type { AnyFamily } from './family';
import { families } from './registry';
import { GROUP as CRD_GROUP, VERSION as CRD_VERSION, ID_LABEL } from '../store/kubernetes/names';
import { DELETION_POLICY_FIELD } from '../store/deletion-policy';
import { isRecord } from '../lib/unknown-values';

/** A JSON Schema node, by the keywords read here; any other is carried as it came. */
export interface Schema {
  type?: string | string[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  required?: string[];
  nullable?: boolean;
  [keyword: string]: unknown;
}

/** A column `kubectl get` shows. */
interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
}

/** A family's CustomResourceDefinition, as crds/ holds it. */
export interface CustomResourceDefinition {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[]; categories: string[] };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
      schema: { openAPIV3Schema: Schema & { properties: Record<string, Schema> } };
    }[];
  };
}

/** Keywords a structural schema may carry, copied as they are. `default` is left out: it would have to validate. */
const KEPT_KEYWORDS = [
  'description',
  'enum',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  // CEL rules a family states beside its schema (a load balancer backend: exactly one of server_id and serverRef).
  'x-kubernetes-validations',
  // A list a family says is a map (conditions by type): arrayListType.
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
] as const;

/** Formats kept; any other format (email, uri, ...) is validated by the API, not by Kubernetes. */
const KEPT_FORMATS = new Set(['date-time', 'int64']);

const isNull = (schema: Schema) => schema.type === 'null';

function copyKeywords(source: Schema, target: Schema): void {
  for (const key of KEPT_KEYWORDS) if (source[key] !== undefined) target[key] = source[key];
  if (typeof source.format === 'string' && KEPT_FORMATS.has(source.format)) target.format = source.format;
}

/** A union without null: literals of one type become an enum, string|integer becomes int-or-string. */
function convertUnion(members: Schema[], outer: Schema, path: string): Schema {
  if (members.length === 1) return convertSchema(members[0], path);
  if (members.every((m) => m.const !== undefined)) {
    const types = new Set(members.map((m) => m.type ?? typeof m.const));
    if (types.size === 1) return { type: [...types][0], enum: members.map((m) => m.const) };
  }
  const types = new Set(members.map((m) => m.type));
  if (types.size === 2 && types.has('string') && types.has('integer')) return { 'x-kubernetes-int-or-string': true };
  // A union of object shapes (a tagged variant) cannot be structural; the API validates it instead.
  if (members.every((m) => m.type === 'object')) return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  // Any other mix (a string or a list of strings) has no structural type: Kubernetes keeps
  // the value as it is and the API validates it.
  return { 'x-kubernetes-preserve-unknown-fields': true, description: outer.description ?? `One of: ${[...types].join(', ')}.` };
}

const SCALAR_TYPES = new Set<Schema['type']>(['string', 'integer', 'number', 'boolean']);

/**
 * How server-side apply merges a list, which every list states (kube-conventions: an
 * unstated one is read as atomic, and checkers flag it). A list the family marks
 * `x-kubernetes-list-type: map` keeps that (copyKeywords); one of unique scalars
 * (`uniqueItems`, which a structural schema may not carry) is a set, which the API server
 * also keeps free of duplicates; any other list is replaced as a whole.
 */
function arrayListType(schema: Schema, items: Schema): 'set' | 'atomic' {
  return schema.uniqueItems === true && SCALAR_TYPES.has(items.type) ? 'set' : 'atomic';
}

/** One JSON Schema node (already free of TypeBox symbols) as a structural schema node. */
export function convertSchema(schema: Schema, path = '$'): Schema {
  const union: Schema[] | undefined = schema.anyOf ?? schema.oneOf;
  if (union) {
    const members = union.filter((m) => !isNull(m));
    const converted = convertUnion(members, schema, path);
    if (members.length < union.length) converted.nullable = true;
    copyKeywords(schema, converted);
    return converted;
  }

  const result: Schema = {};
  if (schema.const !== undefined) {
    result.type = schema.type ?? typeof schema.const;
    result.enum = [schema.const];
  } else if (schema.type !== undefined) {
    if (Array.isArray(schema.type)) throw new Error(`${path}: a list of types has no structural CRD form`);
    result.type = schema.type;
  }
  copyKeywords(schema, result);

  if (result.type === undefined) {
    // Any / Unknown: whatever JSON value the API stored.
    result['x-kubernetes-preserve-unknown-fields'] = true;
    return result;
  }
  if (result.type === 'array') {
    result.items = schema.items ? convertSchema(schema.items, `${path}[]`) : { 'x-kubernetes-preserve-unknown-fields': true };
    result['x-kubernetes-list-type'] ??= arrayListType(schema, result.items);
  }
  if (result.type === 'object') convertObject(schema, result, path);
  return result;
}

function convertObject(schema: Schema, result: Schema, path: string): void {
  const properties: Record<string, Schema> = schema.properties ?? {};
  const names = Object.keys(properties);
  if (names.length > 0) {
    const converted: Record<string, Schema> = Object.fromEntries(names.map((name) => [name, convertSchema(properties[name], `${path}.${name}`)]));
    result.properties = converted;
    // A nullable field is not required: client-side `kubectl apply` drops null values, and
    // an absent field reads as null.
    const required = (Array.isArray(schema.required) ? schema.required : []).filter((name: string) => !converted[name].nullable);
    if (required.length > 0) result.required = required;
    return;
  }
  // A map (Type.Record) keeps its value schema; any other property-less object is free-form.
  const mapValue = schema.patternProperties ? Object.values(schema.patternProperties)[0] : schema.additionalProperties;
  if (mapValue && typeof mapValue === 'object') {
    result.additionalProperties = convertSchema(mapValue, `${path}{}`);
  } else {
    result['x-kubernetes-preserve-unknown-fields'] = true;
  }
}

/** A TypeBox schema's JSON Schema: TypeBox keeps its metadata under symbols, which a JSON round trip leaves out. */
function plain(schema: TSchema): Schema {
  const parsed: unknown = JSON.parse(JSON.stringify(schema));
  if (!isSchema(parsed)) throw new Error('a TypeBox schema is an object');
  return parsed;
}

/** What TypeBox made is JSON Schema through and through: an object is all there is to check. */
const isSchema = (value: unknown): value is Schema => isRecord(value);

function printerColumns(family: AnyFamily): PrinterColumn[] {
  const spec: Record<string, Schema | undefined> = plain(family.schemas.spec).properties ?? {};
  const columns: PrinterColumn[] = [{ name: 'ID', type: 'string', jsonPath: `.metadata.labels.${ID_LABEL.replace(/\./g, '\\.')}` }];
  if (spec.name) columns.push({ name: 'Name', type: 'string', jsonPath: '.spec.name' });
  columns.push({ name: 'Status', type: 'string', jsonPath: '.status.status' });
  columns.push({ name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' });
  if (spec.region) columns.push({ name: 'Region', type: 'string', jsonPath: '.spec.region' });
  columns.push({ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' });
  return columns;
}

/** Families whose driver makes something outside the record, which deletion releases or leaves (managed.ts orphans). */
export const hasDeletionPolicy = (family: AnyFamily) => family.providerBacked && family.deletable !== false;

const DELETION_POLICY_SCHEMA: Schema = {
  type: 'string',
  enum: ['Delete', 'Orphan'],
  description:
    'What deleting this resource does to what was provisioned for it: Delete (the default when left out) releases it; Orphan leaves it in place. Not a field of the API.',
};

/**
 * The status as the custom resource carries it (store.ts kubeStatusOf): observedGeneration
 * by its Kubernetes name. observed_generation stays in the schema: custom resources written
 * before the rename still carry it, and are read the same.
 */
function kubeStatusSchema(status: Schema): Schema {
  const { observed_generation: legacy, ...properties } = status.properties ?? {};
  return {
    ...status,
    properties: {
      ...properties,
      observedGeneration: { ...legacy, description: 'The metadata.generation of the spec the reconciler last acted on.' },
      observed_generation: { ...legacy, description: 'Deprecated: observedGeneration as written by earlier versions; read, never written.' },
    },
    // Neither required: a replica of an earlier version, during a rolling upgrade, still writes the old name.
    required: (status.required ?? []).filter((name: string) => name !== 'observed_generation'),
  };
}

export function crdFor(family: AnyFamily): CustomResourceDefinition {
  const spec = convertSchema(plain(family.schemas.spec), `${family.kind}.spec`);
  // A kubectl user writes what a POST body would hold: what the create rules default or
  // the service sets (adoption fills them in) is not required of them.
  const requiredOnCreate = new Set<string>(plain(family.schemas.create).required ?? []);
  const required = (spec.required ?? []).filter((name: string) => requiredOnCreate.has(name));
  if (required.length > 0) spec.required = required;
  else delete spec.required;
  spec.description ??= 'What was asked for: the fields of the POST body. Fields left out get the defaults the API would give them.';
  if (hasDeletionPolicy(family)) spec.properties = { ...spec.properties, [DELETION_POLICY_FIELD]: DELETION_POLICY_SCHEMA };
  const status = kubeStatusSchema(convertSchema(plain(family.schemas.status), `${family.kind}.status`));
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${family.plural}.${CRD_GROUP}` },
    spec: {
      group: CRD_GROUP,
      // A team is a namespace: every resource lives in its team's.
      scope: 'Namespaced',
      names: {
        kind: family.kind,
        listKind: `${family.kind}List`,
        plural: family.plural,
        singular: family.kind.toLowerCase(),
        shortNames: [...family.shortNames],
        categories: ['cloudplane'],
      },
      versions: [
        {
          name: CRD_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: printerColumns(family),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: family.description,
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
                status,
              },
            },
          },
        },
      ],
    },
  };
}

/** The plural names of the custom resources the store keeps (one CRD each). */
export function customResourcePlurals(): string[] {
  return families.map((family) => family.plural).sort();
}

export function allCrds(): CustomResourceDefinition[] {
  return families.map(crdFor);
}
