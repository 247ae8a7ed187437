/**
 * The chart step of `make test`: `helm lint --strict` and `helm template` of
 * charts/cloudplane with its default values and with representative value sets (an
 * existing bootstrap Secret, NATS, persistence off or on a claim of one's own, the s3
 * bucket driver), each checked by helm against values.schema.json; a value set the schema
 * must refuse; and the schema itself covering every value values.yaml has, with unknown
 * keys refused at every level so that a typo fails instead of being ignored. Then kube-score
 * (built like helm, scripts/build-kube-score.sh) on the rendered chart, with the default
 * values and with the scheduling, label and ServiceAccount options, under
 * charts/kube-score.yaml: every default check, and any finding fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { spawnSync } from 'node:child_process';
import { CHART, findOrBuildHelm, findOrBuildKubeScore, NAMESPACE, runHelm } from '../helpers/chart';

// make test builds helm and kube-score (scripts/run-tests.sh); without them these tests fail, saying why, rather than skip.
const { helm, why } = findOrBuildHelm();
if (!helm) test('helm is available', () => expect(why).toBeUndefined());
const { kubeScore, why: whyNoKubeScore } = findOrBuildKubeScore();
if (!kubeScore) test('kube-score is available', () => expect(whyNoKubeScore).toBeUndefined());

/** The operator's scheduling, labels and ServiceAccount as an HA install on EKS would set them. */
const SCHEDULING = {
  replicas: 2,
  nats: { url: 'nats://nats.messaging:4222' },
  priorityClassName: 'platform-critical',
  // No labelSelector: the chart fills in the operator's selector labels.
  topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }],
  affinity: {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: {
            topologyKey: 'kubernetes.io/hostname',
            labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'cloudplane', 'app.kubernetes.io/instance': 'cp' } },
          },
        },
      ],
    },
  },
  // The chart's own labels win: this name does not change the selector's.
  podLabels: { 'team.example.com/cost-center': 'platform', 'app.kubernetes.io/name': 'mine' },
  // IRSA: the s3 driver's keys come from the AWS SDK's chain, through the Pod's role.
  serviceAccount: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/cloudplane' } },
  drivers: { bucket: 's3' },
};

interface KubeScoreConfig {
  kubernetesVersion: string;
  enable: string[];
  ignore: Array<{ test: string; why: string }>;
}
const KUBE_SCORE_CONFIG = path.resolve(CHART, '../kube-score.yaml');

const REPRESENTATIVE: Record<string, unknown> = {
  defaults: {},
  existingSecret: { bootstrapApiKeySecret: { existingSecret: 'cloudplane-bootstrap', key: 'token' } },
  nats: { replicas: 3, nats: { url: 'nats://nats-0.nats:4222,nats://nats-1.nats:4222' } },
  'persistence off': { persistence: { enabled: false } },
  'persistence on a claim of yours': { persistence: { existingClaim: 'cloudplane-events' } },
  'persistence tuned': {
    persistence: { storageClass: 'fast-ssd', accessModes: ['ReadWriteOncePod'], size: '5Gi', annotations: { 'helm.sh/resource-policy': 'keep' } },
  },
  scheduling: SCHEDULING,
  'identity provider': {
    publicUrl: 'https://cloudplane.example.com',
    sessions: { idleTimeout: '30m', maxAge: '12h' },
    oidc: { issuer: 'https://id.example.com/realms/main', clientId: 'cloudplane', existingSecret: 'cloudplane-oidc', clientSecretKey: 'secret' },
  },
  s3: {
    drivers: { bucket: 's3' },
    s3: {
      endpoint: 'http://minio.storage:9000',
      forcePathStyle: true,
      bucketPrefix: 'prod',
      credentials: { existingSecret: 'minio-keys', accessKeyIdKey: 'user', secretAccessKeyKey: 'password' },
    },
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
    expect({ status: lint.status, problems: `${lint.stdout}${lint.stderr}`.split('\n').filter((l) => /\[(WARNING|ERROR)\]/.test(l)) }).toEqual({
      status: 0,
      problems: [],
    });
    expect(lint.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);

    const rendered = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', file]);
    expect({ status: rendered.status, stderr: rendered.stderr }).toEqual({ status: 0, stderr: '' });
    const kinds = parseAllDocuments(rendered.stdout)
      .map((d) => d.toJS())
      .filter(Boolean)
      .map((o) => o.kind);
    expect(kinds).toEqual(expect.arrayContaining(['Deployment', 'Service', 'ServiceAccount']));
  });

  it('passes the identity provider, the public URL and the session timeouts to the operator, the client secret from a Secret of yours', () => {
    const rendered = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', valuesFile(REPRESENTATIVE['identity provider'])]);
    expect(rendered.status).toBe(0);
    const deployment = parseAllDocuments(rendered.stdout)
      .map((d) => d.toJS())
      .find((o) => o?.kind === 'Deployment');
    const env = Object.fromEntries(
      deployment.spec.template.spec.containers[0].env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]),
    );
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
    const incomplete = runHelm([
      'template',
      'cp',
      CHART,
      '--namespace',
      NAMESPACE,
      '-f',
      valuesFile({ oidc: { issuer: 'https://id.example.com', clientId: 'cloudplane' } }),
    ]);
    expect(incomplete.status).toBe(1);
    expect(incomplete.stderr).toContain('oidc.issuer needs oidc.clientId, oidc.existingSecret (the client secret) and publicUrl');
  });

  it('refuses, through the schema, a value set with a typo, a wrong type and a value out of range, naming each', () => {
    const bad = { persistance: { enabled: false }, replicas: 'two', persistence: { size: 'big', accessModes: ['ReadOnlyMany'] }, nats: { url: 42 } };
    for (const command of [
      ['lint', '--strict', CHART],
      ['template', 'cp', CHART],
    ]) {
      const result = runHelm([...command, '-f', valuesFile(bad)]);
      expect(result.status).toBe(1);
      const output = `${result.stdout}${result.stderr}`;
      expect(output).toContain(`values don't meet the specifications of the schema`);
      for (const at of ["'/replicas'", "'/persistence/size'", "'/persistence/accessModes/0'", "'/nats/url'", "'persistance'"])
        expect({ at, found: output.includes(at) }).toEqual({ at, found: true });
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

  it('renders the priority class, the spread constraints and the Pod labels on the Deployment, and the annotations on its ServiceAccount', () => {
    const rendered = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', valuesFile(SCHEDULING)]);
    expect({ status: rendered.status, stderr: rendered.stderr }).toEqual({ status: 0, stderr: '' });
    const objects = parseAllDocuments(rendered.stdout)
      .map((d) => d.toJS())
      .filter(Boolean);
    const deployment = objects.find((o) => o.kind === 'Deployment');
    const account = objects.find((o) => o.kind === 'ServiceAccount');
    const pod = deployment.spec.template;
    expect(pod.spec.priorityClassName).toBe('platform-critical');
    expect(pod.spec.topologySpreadConstraints).toEqual([
      { ...SCHEDULING.topologySpreadConstraints[0], labelSelector: { matchLabels: deployment.spec.selector.matchLabels } },
    ]);
    expect(pod.metadata.labels['team.example.com/cost-center']).toBe('platform');
    // The chart's selector labels still select the Pod.
    expect(pod.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(pod.metadata.labels['app.kubernetes.io/name']).toBe('cloudplane');
    expect(pod.spec.serviceAccountName).toBe(account.metadata.name);
    expect(account.metadata.annotations).toEqual(SCHEDULING.serviceAccount.annotations);

    // A constraint with a selector of its own keeps it; the defaults set none of these.
    const own = {
      maxSkew: 2,
      topologyKey: 'kubernetes.io/hostname',
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['control'] }] },
    };
    const withOwn = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', valuesFile({ topologySpreadConstraints: [own] })]);
    expect(
      parseAllDocuments(withOwn.stdout)
        .map((d) => d.toJS())
        .find((o) => o?.kind === 'Deployment').spec.template.spec.topologySpreadConstraints,
    ).toEqual([own]);
    const plain = parseAllDocuments(runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE]).stdout)
      .map((d) => d.toJS())
      .filter(Boolean);
    const plainPod = plain.find((o) => o.kind === 'Deployment').spec.template.spec;
    expect([plainPod.priorityClassName, plainPod.topologySpreadConstraints, plain.find((o) => o.kind === 'ServiceAccount').metadata.annotations]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('refuses bad priority class names, spread constraints, Pod labels and ServiceAccount annotations, naming each', () => {
    const bad = {
      priorityClassName: 'Not A Name',
      topologySpreadConstraints: [{ maxSkew: 0, topologyKey: 'zone', whenUnsatisfiable: 'Sometimes' }],
      podLabels: { 'bad key!': 'x', ok: 'not a label value!' },
      serviceAccount: { annotations: { 'eks.amazonaws.com/role-arn': 42 } },
    };
    const result = runHelm(['template', 'cp', CHART, '-f', valuesFile(bad)]);
    expect(result.status).toBe(1);
    for (const at of [
      "'/priorityClassName'",
      "'/topologySpreadConstraints/0/maxSkew'",
      "'/topologySpreadConstraints/0/whenUnsatisfiable'",
      "'/podLabels'",
      "'/podLabels/ok'",
      "'/serviceAccount/annotations/eks.amazonaws.com~1role-arn'",
    ]) {
      expect({ at, found: result.stderr.includes(at) }).toEqual({ at, found: true });
    }
  });

  describe('kube-score on the rendered chart (charts/kube-score.yaml)', () => {
    const config: KubeScoreConfig = parse(fs.readFileSync(KUBE_SCORE_CONFIG, 'utf8'));

    it('excludes a check only with its reason', () => {
      for (const { test: check, why: reason } of config.ignore)
        expect({ check, reason: typeof reason === 'string' && reason.length > 40 }).toEqual({ check, reason: true });
    });

    it.each([
      ['default', {}],
      ['scheduling', SCHEDULING],
    ])('finds nothing in the chart rendered with the %s values', (_name, values) => {
      const rendered = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', valuesFile(values)]);
      expect({ status: rendered.status, stderr: rendered.stderr }).toEqual({ status: 0, stderr: '' });
      const args = [
        'score',
        '--output-format',
        'ci',
        '--color',
        'never',
        '--exit-one-on-warning',
        '--kubernetes-version',
        config.kubernetesVersion,
        // kube-score/ignore annotations in the chart would hide a check from this config: none count.
        '--disable-ignore-checks-annotations',
        ...config.enable.flatMap((check) => ['--enable-optional-test', check]),
        ...config.ignore.flatMap(({ test: check }) => ['--ignore-test', check]),
        '-',
      ];
      const scored = spawnSync(kubeScore!, args, { input: rendered.stdout, encoding: 'utf8' });
      // One line a check and object: [OK], [SKIPPED] or a finding ([WARNING], [CRITICAL]).
      const lines = scored.stdout.split('\n').filter(Boolean);
      expect(lines.filter((l) => l.startsWith('[OK]')).length).toBeGreaterThan(10);
      expect({ findings: lines.filter((l) => !/^\[(OK|SKIPPED)\] /.test(l)), status: scored.status, stderr: scored.stderr }).toEqual({
        findings: [],
        status: 0,
        stderr: '',
      });
    });
  });
});
