/**
 * The CRDs in crds/: they match what the families generate, Kubernetes would accept
 * their schemas as structural, and their names clash with nothing a stock cluster serves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { parse } from 'yaml';
import { allCrds, convertSchema, crdFor } from '../../src/resources/crd';
import { families, familyByName } from '../../src/resources/registry';
import { crdDir, crdDrift, renderCrdFiles } from '../../src/cli/generate-crds';
import { packageRoot } from '../../src/lib/package-root';

const dir = crdDir(packageRoot(__dirname));

/** Fields of apiextensions.k8s.io/v1 JSONSchemaProps this generator may emit. */
const ALLOWED_KEYWORDS = new Set([
  'type',
  'description',
  'format',
  'enum',
  'nullable',
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
  'properties',
  'required',
  'items',
  'additionalProperties',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  // CEL rules (a load balancer backend names exactly one server): the API server checks them on apply.
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
]);

/** Every schema node below `schema`, with a path for messages. */
function schemaNodes(schema: any, at: string): Array<{ at: string; node: any }> {
  const nodes = [{ at, node: schema }];
  for (const [name, child] of Object.entries(schema.properties ?? {})) nodes.push(...schemaNodes(child, `${at}.${name}`));
  if (schema.items) nodes.push(...schemaNodes(schema.items, `${at}[]`));
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    nodes.push(...schemaNodes(schema.additionalProperties, `${at}{}`));
  }
  return nodes;
}

/** What a node breaks of the structural-schema rules, if anything. */
function structuralProblems(node: any): string[] {
  const problems: string[] = [];
  const free = node['x-kubernetes-preserve-unknown-fields'] === true || node['x-kubernetes-int-or-string'] === true;
  if (node.type === undefined && !free) problems.push('no type');
  if (node.type === 'null') problems.push('type null');
  for (const combinator of ['anyOf', 'oneOf', 'allOf']) {
    if ((node[combinator] ?? []).some((m: any) => m.type === 'null')) problems.push(`${combinator} with null`);
  }
  if (node.properties && node.additionalProperties !== undefined) problems.push('additionalProperties next to properties');
  for (const key of Object.keys(node)) if (!ALLOWED_KEYWORDS.has(key)) problems.push(`keyword ${key}`);
  return problems;
}

/** Kinds a stock cluster serves (core and the built-in API groups). */
const BUILT_IN_KINDS = [
  'Binding',
  'ComponentStatus',
  'ConfigMap',
  'Endpoints',
  'Event',
  'LimitRange',
  'Namespace',
  'Node',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'Pod',
  'PodTemplate',
  'ReplicationController',
  'ResourceQuota',
  'Secret',
  'Service',
  'ServiceAccount',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'CustomResourceDefinition',
  'APIService',
  'ControllerRevision',
  'DaemonSet',
  'Deployment',
  'ReplicaSet',
  'StatefulSet',
  'SelfSubjectReview',
  'TokenReview',
  'LocalSubjectAccessReview',
  'SelfSubjectAccessReview',
  'SelfSubjectRulesReview',
  'SubjectAccessReview',
  'HorizontalPodAutoscaler',
  'CronJob',
  'Job',
  'CertificateSigningRequest',
  'ClusterTrustBundle',
  'Lease',
  'LeaseCandidate',
  'EndpointSlice',
  'FlowSchema',
  'PriorityLevelConfiguration',
  'Ingress',
  'IngressClass',
  'NetworkPolicy',
  'IPAddress',
  'ServiceCIDR',
  'RuntimeClass',
  'PodDisruptionBudget',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'PriorityClass',
  'CSIDriver',
  'CSINode',
  'CSIStorageCapacity',
  'StorageClass',
  'VolumeAttachment',
  'VolumeAttributesClass',
  'DeviceClass',
  'ResourceClaim',
  'ResourceClaimTemplate',
  'ResourceSlice',
  'StorageVersion',
  'StorageVersionMigration',
  'Eviction',
  'Scale',
  'TokenRequest',
];

/** Short names a stock cluster serves (`kubectl api-resources`). */
const BUILT_IN_SHORT_NAMES = [
  'cs',
  'cm',
  'ep',
  'ev',
  'limits',
  'ns',
  'no',
  'pvc',
  'pv',
  'po',
  'rc',
  'quota',
  'sa',
  'svc',
  'crd',
  'crds',
  'ds',
  'deploy',
  'rs',
  'sts',
  'hpa',
  'cj',
  'csr',
  'ing',
  'netpol',
  'pdb',
  'pc',
  'psp',
  'sc',
  'ip',
  'vac',
  'mwc',
  'vwc',
  'apisvc',
  'eps',
  'fs',
  'plc',
];

describe('crds/', () => {
  it('matches what the families generate, with no file left over', () => {
    const files = renderCrdFiles();
    const { changed } = crdDrift(dir, files);
    const extra = fs.readdirSync(dir).filter((f) => !files.has(f));
    const advice = 'crds/ is out of date with src/resources: run `make crds` and commit the result';
    expect({ changed, extra, advice }).toEqual({ changed: [], extra: [], advice });
    for (const [name, content] of files) expect(fs.readFileSync(path.join(dir, name), 'utf8')).toBe(content);
  });

  it('holds one CRD per family, every family included', () => {
    const names = fs.readdirSync(dir).sort();
    expect(names).toEqual(families.map((f) => `${f.plural}.cloudplane.dev.yaml`).sort());
    for (const family of families) {
      const crd = parse(fs.readFileSync(path.join(dir, `${family.plural}.cloudplane.dev.yaml`), 'utf8'));
      expect(crd.spec.names).toMatchObject({ kind: family.kind, plural: family.plural, shortNames: family.shortNames });
      expect(crd.spec.scope).toBe('Namespaced');
    }
  });
});

describe('CRD schemas', () => {
  it.each(allCrds().map((crd) => [crd.spec.names.kind, crd]))('%s is structural', (_kind, crd) => {
    const version = crd.spec.versions[0];
    const problems = schemaNodes(version.schema.openAPIV3Schema, '$').flatMap(({ at, node }) => structuralProblems(node).map((problem) => `${at}: ${problem}`));
    expect(problems).toEqual([]);
  });

  it.each(allCrds().map((crd) => [crd.spec.names.kind, crd]))('%s says how each of its lists merges', (_kind, crd) => {
    const lists = schemaNodes(crd.spec.versions[0].schema.openAPIV3Schema, '$').filter(({ node }) => node.type === 'array');
    const problems = lists.flatMap(({ at, node }) => {
      const type = node['x-kubernetes-list-type'];
      if (!['atomic', 'set', 'map'].includes(type)) return [`${at}: list type ${type}`];
      if (type === 'set' && !['string', 'integer', 'number', 'boolean'].includes(node.items.type)) return [`${at}: a set of ${node.items.type}`];
      if (type !== 'map') return node['x-kubernetes-list-map-keys'] ? [`${at}: map keys on a ${type}`] : [];
      const keys: string[] = node['x-kubernetes-list-map-keys'] ?? [];
      // The API server refuses a map list whose keys an item may leave out.
      return keys.length === 0
        ? [`${at}: a map without keys`]
        : keys.filter((k) => !(node.items.required ?? []).includes(k)).map((k) => `${at}: key ${k} not required`);
    });
    expect(problems).toEqual([]);
  });

  it('merges conditions by type, unique scalars as sets, and any other list as a whole', () => {
    const statusOf = (name: string) => (crdFor(familyByName(name)) as any).spec.versions[0].schema.openAPIV3Schema.properties.status.properties;
    const specOf = (name: string) => (crdFor(familyByName(name)) as any).spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;
    for (const family of families) {
      const conditions = (crdFor(family) as any).spec.versions[0].schema.openAPIV3Schema.properties.status.properties.conditions;
      expect(conditions).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
    }
    expect(specOf('server').file_shares['x-kubernetes-list-type']).toBe('set');
    expect(specOf('webhook').events['x-kubernetes-list-type']).toBe('set');
    expect(statusOf('alert').targets).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['resource_id'] });
    expect(specOf('load_balancer').backends['x-kubernetes-list-type']).toBe('atomic');
    expect(convertSchema(JSON.parse(JSON.stringify(Type.Array(Type.String(), { uniqueItems: true }))))).toEqual({
      type: 'array',
      items: { type: 'string' },
      'x-kubernetes-list-type': 'set',
    });
  });

  it('keeps the rules kubectl explain and validation need', () => {
    const version = crdFor(familyByName('load_balancer')).spec.versions[0];
    const spec = version.schema.openAPIV3Schema.properties.spec;
    expect(spec.properties?.port).toMatchObject({ type: 'integer', minimum: 1, maximum: 65535 });
    expect(spec.properties?.ssl_certificate_id).toMatchObject({ type: 'string', nullable: true });
    expect(spec.required).toContain('name');
    const status = version.schema.openAPIV3Schema.properties.status;
    expect(status.properties?.pending_events.items).toEqual({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(status.properties?.deleted_at).toMatchObject({ type: 'string', format: 'date-time', nullable: true });
    expect(version.additionalPrinterColumns.map((c: any) => c.name)).toEqual(['ID', 'Name', 'Status', 'Ready', 'Region', 'Age']);
  });

  it('turns the TypeBox shapes a family may use into structural nodes', () => {
    const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema));
    const literals = Type.Union([Type.Literal('a'), Type.Literal('b'), Type.Null()], { description: 'A or b.' });
    expect(convertSchema(plain(literals))).toEqual({ type: 'string', enum: ['a', 'b'], nullable: true, description: 'A or b.' });
    expect(convertSchema(plain(Type.Union([Type.String(), Type.Integer()])))).toEqual({ 'x-kubernetes-int-or-string': true });
    expect(convertSchema(plain(Type.Record(Type.String(), Type.Integer())))).toEqual({
      type: 'object',
      additionalProperties: { type: 'integer' },
    });
    expect(convertSchema(plain(Type.Unknown()))).toEqual({ 'x-kubernetes-preserve-unknown-fields': true });
    expect(convertSchema(plain(Type.String({ format: 'email', default: 'x@y.z' })))).toEqual({ type: 'string' });
    // A mix with no structural type (a webhook filter value: string or list) is kept as sent.
    expect(convertSchema(plain(Type.Union([Type.String(), Type.Array(Type.String())])))).toMatchObject({ 'x-kubernetes-preserve-unknown-fields': true });
  });

  it('leaves nullable fields out of required, since client-side kubectl apply drops nulls', () => {
    const node = convertSchema(JSON.parse(JSON.stringify(Type.Object({ a: Type.String(), b: Type.Union([Type.String(), Type.Null()]) }))));
    expect(node.required).toEqual(['a']);
    expect(node.properties?.b).toMatchObject({ type: 'string', nullable: true });
  });
});

describe('CRD required fields', () => {
  it('asks of a kubectl user what a POST body must hold, no more', () => {
    for (const family of families) {
      const specSchema = (crdFor(family) as any).spec.versions[0].schema.openAPIV3Schema.properties.spec;
      const createRequired: string[] = JSON.parse(JSON.stringify(family.schemas.create)).required ?? [];
      for (const name of specSchema.required ?? [])
        expect(`${family.kind}.${name}`).toBe(createRequired.includes(name) ? `${family.kind}.${name}` : 'required only on create');
    }
    const lb = (crdFor(familyByName('load_balancer')) as any).spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(lb.required).toEqual(expect.arrayContaining(['name', 'region']));
    expect(lb.required).not.toContain('algorithm');
  });
});

describe('CRD names', () => {
  const builtInKinds = new Set(BUILT_IN_KINDS.map((k) => k.toLowerCase()));
  const builtInShortNames = new Set(BUILT_IN_SHORT_NAMES);

  it.each(families.map((f) => [f.kind, f]))('%s clashes with no built-in kind or short name', (_kind, family) => {
    expect(builtInKinds.has(family.kind.toLowerCase())).toBe(false);
    expect(family.shortNames.filter((s) => builtInShortNames.has(s) || builtInKinds.has(s))).toEqual([]);
  });

  it('gives every short name, kind and plural to one family only', () => {
    const counts = new Map<string, number>();
    for (const family of families) {
      for (const name of [...family.shortNames, family.kind.toLowerCase(), family.plural]) {
        counts.set(name, (counts.get(name) ?? 0) + 1);
      }
    }
    expect([...counts].filter(([, n]) => n > 1).map(([name]) => name)).toEqual([]);
  });
});
