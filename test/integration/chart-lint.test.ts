/**
 * The chart step of `make test`: `helm lint --strict` and `helm template` of
 * charts/cloudplane with its default values and with representative value sets (an
 * existing bootstrap Secret, NATS, persistence off or on a claim of one's own, the s3
 * bucket driver), each checked by helm against values.schema.json; a value set the schema
 * must refuse; and the schema itself covering every value values.yaml has, with unknown
 * keys refused at every level so that a typo fails instead of being ignored.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { CHART, findOrBuildHelm, NAMESPACE, runHelm } from '../helpers/chart';

// make test builds helm (scripts/run-tests.sh); without it these tests fail, saying why, rather than skip.
const { helm, why } = findOrBuildHelm();
if (!helm) test('helm is available', () => expect(why).toBeUndefined());

const REPRESENTATIVE: Record<string, unknown> = {
  defaults: {},
  existingSecret: { bootstrapApiKeySecret: { existingSecret: 'cloudplane-bootstrap', key: 'token' } },
  nats: { replicas: 3, nats: { url: 'nats://nats-0.nats:4222,nats://nats-1.nats:4222' } },
  'persistence off': { persistence: { enabled: false } },
  'persistence on a claim of yours': { persistence: { existingClaim: 'cloudplane-events' } },
  'persistence tuned': { persistence: { storageClass: 'fast-ssd', accessModes: ['ReadWriteOncePod'], size: '5Gi', annotations: { 'helm.sh/resource-policy': 'keep' } } },
  'identity provider': {
    publicUrl: 'https://cloudplane.example.com',
    sessions: { idleTimeout: '30m', maxAge: '12h' },
    oidc: { issuer: 'https://id.example.com/realms/main', clientId: 'cloudplane', existingSecret: 'cloudplane-oidc', clientSecretKey: 'secret' },
  },
  s3: {
    drivers: { bucket: 's3' },
    s3: { endpoint: 'http://minio.storage:9000', forcePathStyle: true, bucketPrefix: 'prod', credentials: { existingSecret: 'minio-keys', accessKeyIdKey: 'user', secretAccessKeyKey: 'password' } },
  },
};

function valuesFile(values: unknown): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-values-')), 'values.yaml');
  fs.writeFileSync(file, stringify(values));
  return file;
}

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; additionalProperties?: boolean | Schema; items?: Schema; $ref?: string };

/** Every key path of a values tree that the schema must know (maps of free keys end at their parent). */
function leafPaths(value: unknown, prefix: string[] = []): string[][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length === 0) return [prefix];
  return Object.entries(value).flatMap(([key, child]) => leafPaths(child, [...prefix, key]));
}

describe('the chart step: helm lint --strict and helm template against values.schema.json', () => {
  const schema: Schema & { definitions?: Record<string, Schema> } = JSON.parse(fs.readFileSync(path.join(CHART, 'values.schema.json'), 'utf8'));
  const resolve = (s: Schema): Schema => (s.$ref ? schema.definitions![s.$ref.replace('#/definitions/', '')] : s);

  it.each(Object.entries(REPRESENTATIVE))('lints strictly and renders with the %s values', (_name, values) => {
    const file = valuesFile(values);
    const lint = runHelm(['lint', '--strict', CHART, '-f', file]);
    // --strict turns warnings into failures; an [INFO] (no icon) is all that may remain.
    expect({ status: lint.status, problems: `${lint.stdout}${lint.stderr}`.split('\n').filter((l) => /\[(WARNING|ERROR)\]/.test(l)) }).toEqual({ status: 0, problems: [] });
    expect(lint.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);

    const rendered = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', file]);
    expect({ status: rendered.status, stderr: rendered.stderr }).toEqual({ status: 0, stderr: '' });
    const kinds = parseAllDocuments(rendered.stdout).map((d) => d.toJS()).filter(Boolean).map((o) => o.kind);
    expect(kinds).toEqual(expect.arrayContaining(['Deployment', 'Service', 'ServiceAccount']));
  });

  it('passes the identity provider, the public URL and the session timeouts to the operator, the client secret from a Secret of yours', () => {
    const rendered = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', valuesFile(REPRESENTATIVE['identity provider'])]);
    expect(rendered.status).toBe(0);
    const deployment = parseAllDocuments(rendered.stdout).map((d) => d.toJS()).find((o) => o?.kind === 'Deployment');
    const env = Object.fromEntries(deployment.spec.template.spec.containers[0].env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]));
    expect(env).toMatchObject({
      CLOUDPLANE_PUBLIC_URL: 'https://cloudplane.example.com',
      CLOUDPLANE_SESSION_IDLE_TIMEOUT: '30m',
      CLOUDPLANE_SESSION_MAX_AGE: '12h',
      CLOUDPLANE_OIDC_ISSUER: 'https://id.example.com/realms/main',
      CLOUDPLANE_OIDC_CLIENT_ID: 'cloudplane',
      CLOUDPLANE_OIDC_CLIENT_SECRET: { secretKeyRef: { name: 'cloudplane-oidc', key: 'secret' } },
    });
    // Without a provider, none of its variables (the service then offers API-key sign-in).
    const plain = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE]);
    expect(plain.stdout).not.toContain('CLOUDPLANE_OIDC_');
    // An issuer without the public URL (the redirect URI) or the client secret is refused, saying what is missing.
    const incomplete = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', valuesFile({ oidc: { issuer: 'https://id.example.com', clientId: 'cloudplane' } })]);
    expect(incomplete.status).toBe(1);
    expect(incomplete.stderr).toContain('oidc.issuer needs oidc.clientId, oidc.existingSecret (the client secret) and publicUrl');
  });

  it('refuses, through the schema, a value set with a typo, a wrong type and a value out of range, naming each', () => {
    const bad = { persistance: { enabled: false }, replicas: 'two', persistence: { size: 'big', accessModes: ['ReadOnlyMany'] }, nats: { url: 42 } };
    for (const command of [['lint', '--strict', CHART], ['template', 'cp', CHART]]) {
      const result = runHelm([...command, '-f', valuesFile(bad)]);
      expect(result.status).toBe(1);
      const output = `${result.stdout}${result.stderr}`;
      expect(output).toContain(`values don't meet the specifications of the schema`);
      for (const at of ["'/replicas'", "'/persistence/size'", "'/persistence/accessModes/0'", "'/nats/url'", "'persistance'"]) expect({ at, found: output.includes(at) }).toEqual({ at, found: true });
    }
  });

  it('the schema knows every value values.yaml sets, and refuses unknown keys at the top and in every section', () => {
    const values = parse(fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8'));
    expect(schema.additionalProperties).toBe(false);
    const unknown: string[] = [];
    for (const keys of leafPaths(values)) {
      let node: Schema | undefined = schema;
      for (const key of keys) {
        node = node && resolve(node);
        const next: Schema | undefined = node?.properties?.[key] ?? (typeof node?.additionalProperties === 'object' ? node.additionalProperties : undefined);
        node = next;
      }
      if (!node) unknown.push(keys.join('.'));
    }
    expect(unknown).toEqual([]);
    // Each section of values that is a fixed set of settings refuses a key it does not know.
    const lax: string[] = [];
    const walk = (node: Schema, at: string) => {
      const resolved = resolve(node);
      if (!resolved.properties) return;
      if (resolved.additionalProperties !== false) lax.push(at || '(top level)');
      for (const [key, child] of Object.entries(resolved.properties)) walk(child, at ? `${at}.${key}` : key);
    };
    walk(schema, '');
    expect(lax).toEqual([]);
  });
});
