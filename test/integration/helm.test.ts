/**
 * The Helm chart (charts/cloudplane): it lints, renders with default and custom values,
 * runs the operator hardened and probed, grants exactly the least-privilege RBAC the
 * operator needs, carries the generated CRDs, rejects values its schema forbids, and what
 * it renders is accepted by a real kube-apiserver (CRDs applied, the rest dry-run on the
 * server). helm is built once from its Go module (scripts/build-helm.sh).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { kubectlBinary, startKubeApiServer, KubeApiServer } from '../helpers/kube-apiserver';
import { CHART, findOrBuildHelm, NAMESPACE, render, runHelm } from '../helpers/chart';

const REPO = path.resolve(__dirname, '../..');

// make test builds helm (scripts/build-helm.sh); without it these tests fail, saying why, rather than skip.
const { helm, why } = findOrBuildHelm();
const describeWithHelm = describe;
if (!helm) test('helm is available', () => expect(why).toBeUndefined());

function manifests(rendered: string): any[] {
  return parseAllDocuments(rendered).map((d) => d.toJS()).filter(Boolean);
}

function only(objects: any[], kind: string): any {
  const found = objects.filter((o) => o.kind === kind);
  expect(found).toHaveLength(1);
  return found[0];
}

function envOf(container: any): Record<string, any> {
  return Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
}

/** CRD plural names from crds/, the ones the operator owns. */
function crdPlurals(): string[] {
  return fs.readdirSync(path.join(REPO, 'crds')).filter((f) => f.endsWith('.yaml'))
    .map((f) => parse(fs.readFileSync(path.join(REPO, 'crds', f), 'utf8')).spec.names.plural as string)
    .sort();
}

/** Every (apiGroup, resource, verb) a rule list grants. */
function grants(rules: any[]): Set<string> {
  const out = new Set<string>();
  for (const rule of rules) {
    expect(rule.nonResourceURLs).toBeUndefined();
    expect(rule.resourceNames).toBeUndefined();
    for (const group of rule.apiGroups) for (const resource of rule.resources) for (const verb of rule.verbs) out.add(`${group}|${resource}|${verb}`);
  }
  return out;
}

function expectedGrants(): Set<string> {
  const out = new Set<string>();
  const add = (group: string, resources: string[], verbs: string[]) => {
    for (const r of resources) for (const v of verbs) out.add(`${group}|${r}|${v}`);
  };
  const crud = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
  const plurals = crdPlurals();
  add('cloudplane.dev', plurals, crud);
  add('cloudplane.dev', plurals.map((p) => `${p}/status`), ['get', 'update', 'patch']);
  add('cloudplane.dev', plurals.map((p) => `${p}/finalizers`), ['update']);
  add('', ['secrets', 'namespaces'], crud);
  add('coordination.k8s.io', ['leases'], ['get', 'list', 'watch', 'create', 'update', 'patch']);
  add('batch', ['jobs'], ['get', 'list', 'watch', 'create', 'delete']);
  add('', ['pods'], ['get', 'list', 'watch', 'create', 'delete']);
  add('', ['events'], ['create', 'patch']);
  // Load balancers on HAProxy (server-side apply: patch, and create for a new object).
  add('', ['configmaps', 'services'], ['get', 'list', 'watch', 'create', 'patch', 'delete']);
  add('apps', ['deployments'], ['get', 'list', 'watch', 'create', 'patch', 'delete']);
  // File shares' claims (server-side apply, as above).
  add('', ['persistentvolumeclaims'], ['get', 'list', 'watch', 'create', 'patch', 'delete']);
  return out;
}

describeWithHelm('Helm chart charts/cloudplane', () => {
  it('passes helm lint', () => {
    const result = runHelm(['lint', CHART]);
    expect(result.stderr).not.toMatch(/\[ERROR\]/);
    expect(result.status).toBe(0);
  });

  it('carries exactly the generated CRDs (scripts/sync-chart-crds.sh copies them)', () => {
    const generated = fs.readdirSync(path.join(REPO, 'crds')).filter((f) => f.endsWith('.yaml')).sort();
    const inChart = fs.readdirSync(path.join(CHART, 'crds')).sort();
    expect(inChart).toEqual(generated);
    expect(generated.length).toBeGreaterThan(0);
    for (const file of generated) {
      expect(`${file}:\n${fs.readFileSync(path.join(CHART, 'crds', file), 'utf8')}`)
        .toBe(`${file}:\n${fs.readFileSync(path.join(REPO, 'crds', file), 'utf8')}`);
    }
  });

  it('runs the operator non-root, read-only, without capabilities, probed and bounded (default values)', () => {
    const objects = manifests(render());
    const deployment = only(objects, 'Deployment');
    expect(deployment.spec.replicas).toBe(1);
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.containers).toHaveLength(1);
    const [container] = pod.containers;
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container.securityContext.runAsUser ?? pod.securityContext.runAsUser).not.toBe(0);
    expect(container.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    for (const kind of ['requests', 'limits']) {
      expect(container.resources[kind].cpu).toBeDefined();
      expect(container.resources[kind].memory).toBeDefined();
    }
    expect(pod.serviceAccountName).toBe(only(objects, 'ServiceAccount').metadata.name);

    const secret = only(objects, 'Secret');
    const env = envOf(container);
    expect(env).toMatchObject({
      CLOUDPLANE_STORE: 'kubernetes',
      CLOUDPLANE_HOST: '0.0.0.0',
      CLOUDPLANE_PORT: '8080',
      CLOUDPLANE_BOOTSTRAP_API_KEY: { secretKeyRef: { name: secret.metadata.name, key: 'bootstrap-api-key' } },
      POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      POD_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
    });
    expect(env.CLOUDPLANE_NATS_URL).toBeUndefined();
    // The VPN agent is Cloudplane's own image unless told otherwise.
    expect(env.CLOUDPLANE_VPN_AGENT_IMAGE).toBe(container.image);

    // A generated key has the form the service accepts (CONTRACT.md: cpk_ + 32+ letters/digits).
    expect(Buffer.from(secret.data['bootstrap-api-key'], 'base64').toString()).toMatch(/^cpk_[A-Za-z0-9]{32,}$/);

    const service = only(objects, 'Service');
    expect(service.spec.type).toBe('ClusterIP');
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it('takes replicas, the NATS url and a given bootstrap key from values', () => {
    const key = `cpk_${'a1B2'.repeat(10)}`;
    const objects = manifests(render(['replicas=3', 'nats.url=nats://nats.messaging:4222', `bootstrapApiKey=${key}`]));
    const deployment = only(objects, 'Deployment');
    expect(deployment.spec.replicas).toBe(3);
    expect(envOf(deployment.spec.template.spec.containers[0]).CLOUDPLANE_NATS_URL).toBe('nats://nats.messaging:4222');
    expect(Buffer.from(only(objects, 'Secret').data['bootstrap-api-key'], 'base64').toString()).toBe(key);
  });

  it('passes the lease duration, the drivers, the server catalog and extra env to the operator', () => {
    const objects = manifests(render(['leaseDurationSeconds=30', 'drivers.job=simulated', 'servers.startTimeoutSeconds=60', 'servers.images.alpine.image=registry.example/alpine:3', 'loadBalancers.haproxyImage=registry.example/haproxy:2.8', 'vpnGateways.agentImage=registry.example/cloudplane:vpn', 'extraEnv[0].name=CLOUDPLANE_SMTP_URL', 'extraEnv[0].value=smtp://mail:25']));
    const env = envOf(only(objects, 'Deployment').spec.template.spec.containers[0]);
    expect(env).toMatchObject({
      CLOUDPLANE_LEASE_DURATION_SECONDS: '30',
      CLOUDPLANE_PROVIDER: 'kubernetes',
      CLOUDPLANE_DRIVER_JOB: 'simulated',
      CLOUDPLANE_SERVER_START_TIMEOUT_SECONDS: '60',
      CLOUDPLANE_HAPROXY_IMAGE: 'registry.example/haproxy:2.8',
      CLOUDPLANE_HAPROXY_REPLICAS: '2',
      CLOUDPLANE_VPN_AGENT_IMAGE: 'registry.example/cloudplane:vpn',
      CLOUDPLANE_VPN_AGENT_PROGRESS_DEADLINE_SECONDS: '600',
      CLOUDPLANE_SMTP_URL: 'smtp://mail:25',
    });
    expect(JSON.parse(env.CLOUDPLANE_SERVER_IMAGES)).toEqual({ alpine: { image: 'registry.example/alpine:3' } });
    // A family left to the provider gets no variable of its own.
    expect(env.CLOUDPLANE_DRIVER_SERVER).toBeUndefined();
  });

  it('passes the s3 bucket driver its endpoint, and its keys from a Secret: one of yours, or the chart\'s own', () => {
    const settings = ['drivers.bucket=s3', 's3.endpoint=http://minio.storage:9000', 's3.region=eu-west-1', 's3.forcePathStyle=true', 's3.bucketPrefix=prod'];
    const own = manifests(render([...settings, 's3.credentials.accessKeyId=AKID', 's3.credentials.secretAccessKey=s3cr3t']));
    const secret = only(own, 'Secret');
    const env = envOf(only(own, 'Deployment').spec.template.spec.containers[0]);
    expect(env).toMatchObject({
      CLOUDPLANE_DRIVER_BUCKET: 's3',
      CLOUDPLANE_S3_ENDPOINT: 'http://minio.storage:9000',
      CLOUDPLANE_S3_REGION: 'eu-west-1',
      CLOUDPLANE_S3_FORCE_PATH_STYLE: 'true',
      CLOUDPLANE_S3_BUCKET_PREFIX: 'prod',
      CLOUDPLANE_S3_ACCESS_KEY_ID: { secretKeyRef: { name: secret.metadata.name, key: 's3-access-key-id' } },
      CLOUDPLANE_S3_SECRET_ACCESS_KEY: { secretKeyRef: { name: secret.metadata.name, key: 's3-secret-access-key' } },
    });
    expect(Buffer.from(secret.data['s3-secret-access-key'], 'base64').toString()).toBe('s3cr3t');
    // The secret is in no plain value of the Deployment.
    expect(JSON.stringify(only(own, 'Deployment'))).not.toContain('s3cr3t');

    const theirs = manifests(render([...settings, 's3.credentials.existingSecret=minio-keys', 's3.credentials.accessKeyIdKey=user', 's3.credentials.secretAccessKeyKey=password']));
    expect(envOf(only(theirs, 'Deployment').spec.template.spec.containers[0])).toMatchObject({
      CLOUDPLANE_S3_ACCESS_KEY_ID: { secretKeyRef: { name: 'minio-keys', key: 'user' } },
      CLOUDPLANE_S3_SECRET_ACCESS_KEY: { secretKeyRef: { name: 'minio-keys', key: 'password' } },
    });
    expect(only(theirs, 'Secret').data['s3-access-key-id']).toBeUndefined();

    // Without the s3 driver, no S3 setting; without keys, the SDK's own chain (a Pod role).
    expect(Object.keys(envOf(only(manifests(render()), 'Deployment').spec.template.spec.containers[0])).filter((n) => n.startsWith('CLOUDPLANE_S3_'))).toEqual([]);
    const chain = envOf(only(manifests(render(settings)), 'Deployment').spec.template.spec.containers[0]);
    expect(chain.CLOUDPLANE_S3_ENDPOINT).toBe('http://minio.storage:9000');
    expect(chain.CLOUDPLANE_S3_ACCESS_KEY_ID).toBeUndefined();
  });

  it('refuses several replicas without NATS: the embedded bus would leave the others blind to events', () => {
    const result = runHelm(['template', 'cp', CHART, '--set', 'replicas=2']);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/replicas > 1 needs nats.url/);
  });

  it('grants exactly the least-privilege RBAC rules, no wildcards, bound to its ServiceAccount', () => {
    const objects = manifests(render());
    const role = only(objects, 'ClusterRole');
    for (const rule of role.rules) {
      expect(rule.verbs).not.toContain('*');
      expect(rule.resources).not.toContain('*');
      expect(rule.apiGroups).not.toContain('*');
    }
    expect([...grants(role.rules)].sort()).toEqual([...expectedGrants()].sort());

    const binding = only(objects, 'ClusterRoleBinding');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata.name });
    const account = only(objects, 'ServiceAccount');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name, namespace: NAMESPACE }]);
  });

  it('rejects values its schema forbids', () => {
    for (const bad of ['replicas=abc', 'replicas=0', 'drivers.job=docker', 'servers.startTimeoutSeconds=0', 'loadBalancers.replicas=0', 'fileShares.storageClass=Not_A_Name', 'leaseDurationSeconds=1', 'bootstrapApiKey=not-a-key', 'service.port=70000', 'unknownSetting=1', 'drivers.bucket=minio', 's3.endpoint=minio:9000', 's3.bucketPrefix=Prod', 's3.credentials.unknown=1']) {
      const result = runHelm(['template', 'cp', CHART, '--set', bad]);
      expect({ bad, status: result.status }).toEqual({ bad, status: 1 });
      expect(result.stderr).toMatch(/values don't meet the specifications of the schema/);
    }
  });

  describe('against a real kube-apiserver', () => {
    let kube: KubeApiServer;
    const kubectl = (args: string[]) =>
      execFileSync(kubectlBinary(), ['--kubeconfig', kube.kubeconfigPath, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const helmOnCluster = (args: string[]) =>
      execFileSync(helm!, ['--kubeconfig', kube.kubeconfigPath, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

    beforeAll(async () => {
      kube = await startKubeApiServer();
    }, 10 * 60_000);
    afterAll(async () => kube?.stop());

    it('accepts the CRDs for real and the rendered chart in a server-side dry run', () => {
      kubectl(['apply', '--server-side', '-f', path.join(CHART, 'crds')]);
      kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
      kubectl(['create', 'namespace', NAMESPACE]);

      const rendered = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-helm-')), 'rendered.yaml');
      fs.writeFileSync(rendered, render(['replicas=3', 'nats.url=nats://nats:4222']));
      const out = kubectl(['apply', '--server-side', '--dry-run=server', '-f', rendered]);
      for (const kind of ['serviceaccount', 'secret', 'clusterrole', 'clusterrolebinding', 'service', 'deployment']) {
        expect(out).toMatch(new RegExp(`^${kind}[^ ]*/cp-cloudplane serverside-applied \\(server dry run\\)$`, 'm'));
      }
      // Dry run: nothing but the namespace was created.
      expect(kubectl(['get', 'deployments,secrets', '-n', NAMESPACE, '-o', 'name']).trim()).toBe('');
    }, 120_000);

    it('keeps a generated bootstrap key across helm upgrade', () => {
      const namespace = 'cloudplane-upgrade';
      const keyOf = () => Buffer.from(kubectl(['get', 'secret', 'cp-cloudplane', '-n', namespace, '-o', 'jsonpath={.data.bootstrap-api-key}']), 'base64').toString();
      const install = helmOnCluster(['install', 'cp', CHART, '--namespace', namespace, '--create-namespace', '--skip-crds']);
      expect(install).toMatch(/port-forward service\/cp-cloudplane 8080:80/);
      const first = keyOf();
      expect(first).toMatch(/^cpk_[A-Za-z0-9]{32,}$/);
      helmOnCluster(['upgrade', 'cp', CHART, '--namespace', namespace, '--skip-crds', '--set', 'replicas=3', '--set', 'nats.url=nats://nats:4222']);
      expect(keyOf()).toBe(first);
      expect(kubectl(['get', 'deployment', 'cp-cloudplane', '-n', namespace, '-o', 'jsonpath={.spec.replicas}'])).toBe('3');
    }, 120_000);
  });
});
