/**
 * The Helm chart (charts/cloudplane): it lints, renders with default and custom values,
 * runs the operator hardened and probed (its RBAC is rbac-rules.test.ts's), carries the generated CRDs, rejects values its schema forbids, and what
 * it renders is accepted by a real kube-apiserver (CRDs applied, the rest dry-run on the
 * server). Every option (existing bootstrap Secret, PodDisruptionBudget, ServiceMonitor,
 * NetworkPolicy, security contexts, scheduling) renders what it should, lints, and is
 * accepted by the kube-apiserver; the `helm test` Pod's check is run against the real
 * service. helm is built once from its Go module (scripts/build-helm.sh).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { kubectlBinary, startKubeApiServer, KubeApiServer } from '../helpers/kube-apiserver';
import { CHART, findOrBuildHelm, NAMESPACE, render, runHelm } from '../helpers/chart';
import { startTestService } from '../helpers/service';

const REPO = path.resolve(__dirname, '../..');

// make test builds helm (scripts/build-helm.sh); without it these tests fail, saying why, rather than skip.
const { helm, why } = findOrBuildHelm();
const describeWithHelm = describe;
if (!helm) test('helm is available', () => expect(why).toBeUndefined());

function manifests(rendered: string): any[] {
  return parseAllDocuments(rendered)
    .map((d) => d.toJS())
    .filter(Boolean);
}

function only(objects: any[], kind: string): any {
  const found = objects.filter((o) => o.kind === kind);
  expect(found).toHaveLength(1);
  return found[0];
}

/** Every option of the chart turned on (a values file: affinity and peers are too deep for --set). */
const EVERY_OPTION = {
  replicas: 2,
  nats: { url: 'nats://nats.messaging:4222' },
  bootstrapApiKeySecret: { existingSecret: 'cloudplane-bootstrap', key: 'token' },
  podDisruptionBudget: { enabled: true, minAvailable: 1 },
  serviceMonitor: { enabled: true, interval: '15s', scrapeTimeout: '10s', labels: { release: 'kube-prometheus-stack' } },
  networkPolicy: {
    enabled: true,
    ingressFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }, { ipBlock: { cidr: '10.0.0.0/8' } }],
    egress: [
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
      { to: [{ ipBlock: { cidr: '10.96.0.1/32' } }], ports: [{ port: 443, protocol: 'TCP' }] },
    ],
  },
  podSecurityContext: { runAsUser: 2000, runAsGroup: 2000, fsGroup: 2000 },
  securityContext: { runAsUser: 2000, capabilities: { drop: ['ALL'] } },
  resources: { requests: { cpu: '200m', memory: '256Mi', 'ephemeral-storage': '128Mi' }, limits: { cpu: '2', memory: '1Gi', 'ephemeral-storage': '2Gi' } },
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'control-plane', effect: 'NoSchedule' }],
  affinity: {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'cloudplane' } } } },
      ],
    },
  },
  priorityClassName: 'system-cluster-critical',
  topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }],
  podLabels: { 'team.example.com/cost-center': 'platform' },
  serviceAccount: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/cloudplane' } },
};

function valuesFile(values: unknown): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-values-')), 'values.yaml');
  fs.writeFileSync(file, stringify(values));
  return file;
}

/** `helm template` with a values file. */
function renderValues(values: unknown): string {
  const result = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, '-f', valuesFile(values)]);
  if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return result.stdout;
}

function none(objects: any[], kind: string): void {
  expect(objects.filter((o) => o.kind === kind)).toEqual([]);
}

/** The `helm test` Pod (the one Pod with the test hook; its NetworkPolicy has the hook too). */
function testPod(objects: any[]): any {
  const pods = objects.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === 'test' && o.kind === 'Pod');
  expect(pods).toHaveLength(1);
  return pods[0];
}

function envOf(container: any): Record<string, any> {
  return Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
}

describeWithHelm('Helm chart charts/cloudplane', () => {
  it('passes helm lint', () => {
    const result = runHelm(['lint', CHART]);
    expect(result.stderr).not.toMatch(/\[ERROR\]/);
    expect(result.status).toBe(0);
  });

  it('carries exactly the generated CRDs (scripts/sync-chart-crds.sh copies them)', () => {
    const generated = fs
      .readdirSync(path.join(REPO, 'crds'))
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    const inChart = fs.readdirSync(path.join(CHART, 'crds')).sort();
    expect(inChart).toEqual(generated);
    expect(generated.length).toBeGreaterThan(0);
    for (const file of generated) {
      expect(`${file}:\n${fs.readFileSync(path.join(CHART, 'crds', file), 'utf8')}`).toBe(
        `${file}:\n${fs.readFileSync(path.join(REPO, 'crds', file), 'utf8')}`,
      );
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
      // Logs and the emptyDirs count against it: without one, the kubelet evicts by its own order.
      expect(container.resources[kind]['ephemeral-storage']).toBeDefined();
      expect(testPod(objects).spec.containers[0].resources[kind]['ephemeral-storage']).toBeDefined();
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

    // A generated key has the form the service accepts (docs/api.md: cpk_ + 32+ letters/digits).
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
    const objects = manifests(
      render([
        'leaseDurationSeconds=30',
        'drivers.job=simulated',
        'servers.startTimeoutSeconds=60',
        'servers.images.alpine.image=registry.example/alpine:3',
        'loadBalancers.haproxyImage=registry.example/haproxy:2.8',
        'vpnGateways.agentImage=registry.example/cloudplane:vpn',
        'extraEnv[0].name=CLOUDPLANE_SMTP_URL',
        'extraEnv[0].value=smtp://mail:25',
      ]),
    );
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

  it("passes the s3 bucket driver its endpoint, and its keys from a Secret: one of yours, or the chart's own", () => {
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

    const theirs = manifests(
      render([...settings, 's3.credentials.existingSecret=minio-keys', 's3.credentials.accessKeyIdKey=user', 's3.credentials.secretAccessKeyKey=password']),
    );
    expect(envOf(only(theirs, 'Deployment').spec.template.spec.containers[0])).toMatchObject({
      CLOUDPLANE_S3_ACCESS_KEY_ID: { secretKeyRef: { name: 'minio-keys', key: 'user' } },
      CLOUDPLANE_S3_SECRET_ACCESS_KEY: { secretKeyRef: { name: 'minio-keys', key: 'password' } },
    });
    expect(only(theirs, 'Secret').data['s3-access-key-id']).toBeUndefined();

    // The notification secret (data.* events) comes from a Secret of yours, or is not set at all.
    expect(envOf(only(own, 'Deployment').spec.template.spec.containers[0]).CLOUDPLANE_S3_NOTIFICATION_SECRET).toBeUndefined();
    const notified = manifests(render([...settings, 's3.notifications.existingSecret=s3-hooks']));
    expect(envOf(only(notified, 'Deployment').spec.template.spec.containers[0]).CLOUDPLANE_S3_NOTIFICATION_SECRET).toEqual({
      secretKeyRef: { name: 's3-hooks', key: 'notification-secret' },
    });

    // Without the s3 driver, no S3 setting; without keys, the SDK's own chain (a Pod role).
    expect(Object.keys(envOf(only(manifests(render()), 'Deployment').spec.template.spec.containers[0])).filter((n) => n.startsWith('CLOUDPLANE_S3_'))).toEqual(
      [],
    );
    const chain = envOf(only(manifests(render(settings)), 'Deployment').spec.template.spec.containers[0]);
    expect(chain.CLOUDPLANE_S3_ENDPOINT).toBe('http://minio.storage:9000');
    expect(chain.CLOUDPLANE_S3_ACCESS_KEY_ID).toBeUndefined();
  });

  it('keeps the data directory (the embedded event bus) on a PersistentVolumeClaim by default, and replaces the pod with Recreate', () => {
    const objects = manifests(render());
    const claim = only(objects, 'PersistentVolumeClaim');
    expect(claim.metadata).toMatchObject({ name: 'cp-cloudplane-data', namespace: NAMESPACE });
    expect(claim.spec).toEqual({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });
    const deployment = only(objects, 'Deployment');
    // Two pods must never have the event log open at once (nor can they share a ReadWriteOnce claim).
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    const dataDir = envOf(container).CLOUDPLANE_DATA_DIR;
    const mount = container.volumeMounts.find((m: any) => m.mountPath === dataDir);
    expect(mount).toBeDefined();
    expect(pod.volumes.find((v: any) => v.name === mount.name)).toEqual({ name: mount.name, persistentVolumeClaim: { claimName: claim.metadata.name } });
    // The image's user can write to a volume that root owns.
    expect(pod.securityContext.fsGroup).toBe(1000);
  });

  it("puts the data directory on a claim of yours, or the chart's with the given class, modes, size and annotations", () => {
    const theirs = manifests(render(['persistence.existingClaim=cloudplane-events']));
    none(theirs, 'PersistentVolumeClaim');
    const deployment = only(theirs, 'Deployment');
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    expect(deployment.spec.template.spec.volumes).toContainEqual({ name: 'data', persistentVolumeClaim: { claimName: 'cloudplane-events' } });

    const tuned = only(
      manifests(
        render([
          'persistence.storageClass=fast-ssd',
          'persistence.accessModes[0]=ReadWriteOncePod',
          'persistence.size=5Gi',
          'persistence.annotations.helm\\.sh/resource-policy=keep',
        ]),
      ),
      'PersistentVolumeClaim',
    );
    expect(tuned.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(tuned.spec).toEqual({ accessModes: ['ReadWriteOncePod'], storageClassName: 'fast-ssd', resources: { requests: { storage: '5Gi' } } });
    // "-": no class at all (a statically provisioned volume), not the cluster's default.
    expect(only(manifests(render(['persistence.storageClass=-'])), 'PersistentVolumeClaim').spec.storageClassName).toBe('');
  });

  it('leaves the data directory an emptyDir, updated rolling, with NATS (the stream is in JetStream) or with persistence off', () => {
    for (const sets of [['nats.url=nats://nats:4222'], ['replicas=3', 'nats.url=nats://nats:4222'], ['persistence.enabled=false']]) {
      const objects = manifests(render(sets));
      none(objects, 'PersistentVolumeClaim');
      const deployment = only(objects, 'Deployment');
      expect({ sets, strategy: deployment.spec.strategy }).toEqual({ sets, strategy: undefined });
      expect(deployment.spec.template.spec.volumes).toContainEqual({ name: 'data', emptyDir: {} });
    }
  });

  it('refuses several replicas without NATS: the embedded bus would leave the others blind to events', () => {
    const result = runHelm(['template', 'cp', CHART, '--set', 'replicas=2']);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/replicas > 1 needs nats.url/);
  });

  it('passes helm lint with every option turned on', () => {
    const result = runHelm(['lint', CHART, '-f', valuesFile(EVERY_OPTION)]);
    expect(result.stderr).not.toMatch(/\[ERROR\]/);
    expect(result.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(result.status).toBe(0);
  });

  it('reads the bootstrap key from an existing Secret and then makes none (stable under helm template, for GitOps)', () => {
    const objects = manifests(render(['bootstrapApiKeySecret.existingSecret=cloudplane-bootstrap', 'bootstrapApiKeySecret.key=token']));
    // Nothing random rendered: two renders are the same, so Argo CD sees no drift.
    expect(render(['bootstrapApiKeySecret.existingSecret=cloudplane-bootstrap', 'bootstrapApiKeySecret.key=token'])).toBe(
      render(['bootstrapApiKeySecret.existingSecret=cloudplane-bootstrap', 'bootstrapApiKeySecret.key=token']),
    );
    none(objects, 'Secret');
    const ref = { secretKeyRef: { name: 'cloudplane-bootstrap', key: 'token' } };
    expect(envOf(only(objects, 'Deployment').spec.template.spec.containers[0]).CLOUDPLANE_BOOTSTRAP_API_KEY).toEqual(ref);
    expect(envOf(testPod(objects).spec.containers[0]).CLOUDPLANE_API_KEY).toEqual(ref);

    // The chart's Secret stays for the S3 keys, without a bootstrap key.
    const withS3 = manifests(
      render([
        'bootstrapApiKeySecret.existingSecret=cloudplane-bootstrap',
        'drivers.bucket=s3',
        's3.credentials.accessKeyId=AKID',
        's3.credentials.secretAccessKey=s3cr3t',
      ]),
    );
    expect(Object.keys(only(withS3, 'Secret').data).sort()).toEqual(['s3-access-key-id', 's3-secret-access-key']);
    expect(envOf(only(withS3, 'Deployment').spec.template.spec.containers[0]).CLOUDPLANE_BOOTSTRAP_API_KEY).toEqual({
      secretKeyRef: { name: 'cloudplane-bootstrap', key: 'bootstrap-api-key' },
    });

    // Without it, helm template (no cluster to look the Secret up in) makes a new key each time: what the README warns of.
    const keyOf = (out: string) => only(manifests(out), 'Secret').data['bootstrap-api-key'];
    expect(keyOf(render())).not.toBe(keyOf(render()));

    const both = runHelm([
      'template',
      'cp',
      CHART,
      '--set',
      `bootstrapApiKey=cpk_${'a1B2'.repeat(10)}`,
      '--set',
      'bootstrapApiKeySecret.existingSecret=cloudplane-bootstrap',
    ]);
    expect(both.status).toBe(1);
    expect(both.stderr).toMatch(/set bootstrapApiKey or bootstrapApiKeySecret.existingSecret, not both/);
  });

  it('takes security contexts, resources and scheduling from values, keeping the secure defaults it is not told to change', () => {
    const objects = manifests(renderValues(EVERY_OPTION));
    const pod = only(objects, 'Deployment').spec.template.spec;
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 2000, runAsGroup: 2000, fsGroup: 2000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0].securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 2000,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.containers[0].resources).toEqual(EVERY_OPTION.resources);
    expect(pod.nodeSelector).toEqual(EVERY_OPTION.nodeSelector);
    expect(pod.tolerations).toEqual(EVERY_OPTION.tolerations);
    expect(pod.affinity).toEqual(EVERY_OPTION.affinity);
    expect(pod.priorityClassName).toBe(EVERY_OPTION.priorityClassName);
    expect(pod.topologySpreadConstraints).toEqual([
      { ...EVERY_OPTION.topologySpreadConstraints[0], labelSelector: { matchLabels: only(objects, 'Deployment').spec.selector.matchLabels } },
    ]);
    expect(only(objects, 'Deployment').spec.template.metadata.labels).toMatchObject(EVERY_OPTION.podLabels);
    expect(only(objects, 'ServiceAccount').metadata.annotations).toEqual(EVERY_OPTION.serviceAccount.annotations);
    // The helm test Pod runs as hardened as the operator, on the same nodes.
    const test = testPod(objects).spec;
    expect(test.securityContext).toEqual(pod.securityContext);
    expect(test.containers[0].securityContext).toEqual(pod.containers[0].securityContext);
    expect(test.nodeSelector).toEqual(pod.nodeSelector);
    expect(test.tolerations).toEqual(pod.tolerations);

    // A field set to null is dropped (e.g. a platform's admission sets the uid itself).
    const unset = only(manifests(render(['podSecurityContext.runAsUser=null', 'securityContext.runAsUser=null'])), 'Deployment').spec.template.spec;
    expect(unset.securityContext.runAsUser).toBeUndefined();
    expect(unset.containers[0].securityContext).toEqual({
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('renders a PodDisruptionBudget of minAvailable 1 with several replicas, or when told to', () => {
    const pdbOf = (sets: string[]) => manifests(render(sets)).filter((o) => o.kind === 'PodDisruptionBudget');
    expect(pdbOf([])).toEqual([]);
    const ha = manifests(render(['replicas=3', 'nats.url=nats://nats:4222']));
    const pdb = only(ha, 'PodDisruptionBudget');
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.spec).toEqual({ minAvailable: 1, selector: only(ha, 'Deployment').spec.selector });
    expect(pdbOf(['replicas=3', 'nats.url=nats://nats:4222', 'podDisruptionBudget.enabled=false'])).toEqual([]);
    expect(pdbOf(['podDisruptionBudget.enabled=true', 'podDisruptionBudget.minAvailable=50%'])[0].spec.minAvailable).toBe('50%');
  });

  it("renders a ServiceMonitor of /metrics on the Service's http port only when asked", () => {
    none(manifests(render()), 'ServiceMonitor');
    const objects = manifests(renderValues(EVERY_OPTION));
    const monitor = only(objects, 'ServiceMonitor');
    const service = only(objects, 'Service');
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata.labels.release).toBe('kube-prometheus-stack');
    expect(monitor.spec.namespaceSelector).toEqual({ matchNames: [NAMESPACE] });
    // Its selector picks the Service (and no other object of the release carries these labels on a Service).
    for (const [label, value] of Object.entries(monitor.spec.selector.matchLabels)) expect(service.metadata.labels[label]).toBe(value);
    expect(monitor.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', scheme: 'http', interval: '15s', scrapeTimeout: '10s' }]);
    expect(service.spec.ports.map((p: any) => p.name)).toContain('http');
  });

  it('renders a NetworkPolicy by default: the API port from anywhere, egress open by one allow-all rule; peers and egress rules as given; none when disabled', () => {
    const defaults = manifests(render());
    const open = defaults.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'cp-cloudplane');
    expect(open.spec.podSelector).toEqual(only(defaults, 'Deployment').spec.selector);
    expect(open.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(open.spec.ingress).toEqual([{ ports: [{ port: 8080, protocol: 'TCP' }] }]);
    // Webhook receivers are any URL a team subscribes: no default list of destinations would be right.
    expect(open.spec.egress).toEqual([{}]);

    const objects = manifests(renderValues(EVERY_OPTION));
    const policy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'cp-cloudplane');
    const deployment = only(objects, 'Deployment');
    expect(policy.spec.podSelector).toEqual(deployment.spec.selector);
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.ingress).toEqual([
      {
        ports: [{ port: 8080, protocol: 'TCP' }],
        from: [...EVERY_OPTION.networkPolicy.ingressFrom, { podSelector: { matchLabels: expect.any(Object) } }],
      },
    ]);
    // The added peer selects the helm test Pod, and the operator's selector does not (the Service must not route to it).
    const testLabels = testPod(objects).metadata.labels;
    for (const [label, value] of Object.entries(policy.spec.ingress[0].from[2].podSelector.matchLabels)) expect(testLabels[label]).toBe(value);
    expect(Object.entries(deployment.spec.selector.matchLabels).every(([l, v]) => testLabels[l] === v)).toBe(false);
    expect(policy.spec.egress).toEqual(EVERY_OPTION.networkPolicy.egress);

    // The helm test Pod's own policy, a test hook created before it: no ingress, egress open.
    const testPolicy = defaults.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'cp-cloudplane-test');
    expect(testPolicy.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'test', 'helm.sh/hook-weight': '-1' });
    expect(testPolicy.spec).toEqual({ podSelector: { matchLabels: expect.any(Object) }, policyTypes: ['Ingress', 'Egress'], egress: [{}] });
    for (const [label, value] of Object.entries(testPolicy.spec.podSelector.matchLabels)) expect(testPod(defaults).metadata.labels[label]).toBe(value);

    none(manifests(render(['networkPolicy.enabled=false'])), 'NetworkPolicy');
  });

  it("helm test hook: the rendered Pod's node -e check passes against the real service with the bootstrap key, and fails on a wrong key or an unreachable service", async () => {
    const pod = testPod(manifests(render()));
    expect(pod.spec.restartPolicy).toBe('Never');
    const [container] = pod.spec.containers;
    // The operator's own image: no extra image to pull or pin.
    expect(container.image).toBe(only(manifests(render()), 'Deployment').spec.template.spec.containers[0].image);
    expect(container.command.slice(0, 2)).toEqual(['node', '-e']);
    expect(envOf(container).CLOUDPLANE_URL).toBe(`http://cp-cloudplane.${NAMESPACE}.svc:80`);

    // The service runs in this process: the check must run asynchronously, or it would wait on a blocked event loop.
    const run = (url: string, key: string) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          container.command[0],
          container.command.slice(1),
          { encoding: 'utf8', env: { PATH: process.env.PATH, CLOUDPLANE_URL: url, CLOUDPLANE_API_KEY: key }, timeout: 30_000 },
          (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
        );
      });
    const service = await startTestService();
    try {
      const passed = await run(service.url, service.key);
      expect({ status: passed.status, stderr: passed.stderr }).toEqual({ status: 0, stderr: '' });
      expect(passed.stdout).toMatch(/^ok: .* is ready and lists \d+ regions with the bootstrap key/);

      const wrongKey = await run(service.url, `cpk_${'x'.repeat(40)}`);
      expect(wrongKey.status).toBe(1);
      expect(wrongKey.stderr).toMatch(/GET \/api\/v1\/regions with the bootstrap key answered 401/);

      // What the ServiceMonitor scrapes answers without a key.
      const metrics = await fetch(`${service.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toMatch(/^# HELP /m);
    } finally {
      await service.stop();
    }
    const down = await run('http://127.0.0.1:1', 'x');
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/^helm test failed: fetch failed/);
  }, 60_000);

  it('rejects values its schema forbids', () => {
    for (const bad of [
      'replicas=abc',
      'replicas=0',
      'drivers.job=docker',
      'servers.startTimeoutSeconds=0',
      'loadBalancers.replicas=0',
      'fileShares.storageClass=Not_A_Name',
      'leaseDurationSeconds=1',
      'bootstrapApiKey=not-a-key',
      'service.port=70000',
      'unknownSetting=1',
      'drivers.bucket=minio',
      's3.endpoint=minio:9000',
      's3.bucketPrefix=Prod',
      's3.credentials.unknown=1',
    ]) {
      const result = runHelm(['template', 'cp', CHART, '--set', bad]);
      expect({ bad, status: result.status }).toEqual({ bad, status: 1 });
      expect(result.stderr).toMatch(/values don't meet the specifications of the schema/);
    }
  });

  it('refuses bad values of the new options, naming the value at fault', () => {
    const refusals: Array<[string, string]> = [
      ['bootstrapApiKeySecret.existingSecret=Not_A_Name', '/bootstrapApiKeySecret/existingSecret'],
      ['bootstrapApiKeySecret.key=', '/bootstrapApiKeySecret/key'],
      ['bootstrapApiKeySecret.other=1', '/bootstrapApiKeySecret'],
      ['podSecurityContext.runAsUser=-1', '/podSecurityContext/runAsUser'],
      ['podSecurityContext.unknownField=1', '/podSecurityContext'],
      ['podSecurityContext.seccompProfile.type=Lax', '/podSecurityContext/seccompProfile/type'],
      ['securityContext.readOnlyRootFilesystem=maybe', '/securityContext/readOnlyRootFilesystem'],
      ['securityContext.capabilities.drop=ALL', '/securityContext/capabilities/drop'],
      ['podDisruptionBudget.enabled=sometimes', '/podDisruptionBudget/enabled'],
      ['podDisruptionBudget.minAvailable=-1', '/podDisruptionBudget/minAvailable'],
      ['podDisruptionBudget.minAvailable=150%', '/podDisruptionBudget/minAvailable'],
      ['serviceMonitor.enabled=yes', '/serviceMonitor/enabled'],
      ['serviceMonitor.interval=30', '/serviceMonitor/interval'],
      ['serviceMonitor.interval=often', '/serviceMonitor/interval'],
      ['networkPolicy.enabled=1', '/networkPolicy/enabled'],
      ['networkPolicy.ingressFrom[0].pods=x', '/networkPolicy/ingressFrom/0'],
      ['networkPolicy.egress[0].toPorts=x', '/networkPolicy/egress/0'],
      ['resources.limits.gpu=1', '/resources/limits'],
      ['tolerations=x', '/tolerations'],
      ['nodeSelector.disk=1', '/nodeSelector/disk'],
      ['persistence.enabled=maybe', '/persistence/enabled'],
      ['persistence.size=big', '/persistence/size'],
      ['persistence.accessModes[0]=ReadOnlyMany', '/persistence/accessModes/0'],
      ['persistence.existingClaim=Not_A_Name', '/persistence/existingClaim'],
      ['persistence.storageClass=Fast SSD', '/persistence/storageClass'],
      ['persistence.path=/data', '/persistence'],
    ];
    for (const [bad, at] of refusals) {
      const result = runHelm(['template', 'cp', CHART, '--set', bad]);
      expect({ bad, status: result.status }).toEqual({ bad, status: 1 });
      expect({ bad, stderr: result.stderr }).toEqual({ bad, stderr: expect.stringContaining(`values don't meet the specifications of the schema`) });
      expect({ bad, stderr: result.stderr }).toEqual({ bad, stderr: expect.stringContaining(`- at '${at}'`) });
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

    it('accepts the manifests of every option in a server-side dry run (the ServiceMonitor too when its CRD is installed)', () => {
      const hasServiceMonitorCrd =
        spawnSync(kubectlBinary(), ['--kubeconfig', kube.kubeconfigPath, 'get', 'crd', 'servicemonitors.monitoring.coreos.com']).status === 0;
      const objects = manifests(renderValues(EVERY_OPTION));
      // The harness has no Prometheus Operator CRDs; the ServiceMonitor's shape is checked by the render test above.
      const applied = objects.filter((o) => hasServiceMonitorCrd || o.kind !== 'ServiceMonitor');
      const kinds = applied.map((o) => o.kind).sort();
      expect(kinds).toEqual(expect.arrayContaining(['Deployment', 'NetworkPolicy', 'Pod', 'PodDisruptionBudget']));
      const rendered = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-helm-')), 'every-option.yaml');
      fs.writeFileSync(rendered, applied.map((o) => stringify(o)).join('---\n'));
      // Strict: a field the server does not know is an error, not silently dropped.
      const out = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '-n', NAMESPACE, '-f', rendered]);
      for (const kind of ['poddisruptionbudget', 'networkpolicy', 'deployment']) {
        expect(out).toMatch(new RegExp(`^${kind}[^ ]*/cp-cloudplane serverside-applied \\(server dry run\\)$`, 'm'));
      }
      expect(out).toMatch(/^pod\/cp-cloudplane-test serverside-applied \(server dry run\)$/m);
      if (hasServiceMonitorCrd) expect(out).toMatch(/^servicemonitor[^ ]*\/cp-cloudplane serverside-applied/m);
      expect(out.trim().split('\n')).toHaveLength(applied.length);
    }, 120_000);

    it("installs with an existing bootstrap Secret: helm makes no key of its own and the operator reads the user's", () => {
      const namespace = 'cloudplane-existing';
      kubectl(['create', 'namespace', namespace]);
      const key = `cpk_${'Z9y8'.repeat(10)}`;
      kubectl(['create', 'secret', 'generic', 'cloudplane-bootstrap', '-n', namespace, `--from-literal=token=${key}`]);
      // A release of its own name: the ClusterRole of release cp belongs to another namespace's test.
      helmOnCluster([
        'install',
        'gitops',
        CHART,
        '--namespace',
        namespace,
        '--skip-crds',
        '--set',
        'bootstrapApiKeySecret.existingSecret=cloudplane-bootstrap',
        '--set',
        'bootstrapApiKeySecret.key=token',
      ]);
      // Helm's own release records aside (type helm.sh/release.v1), the only Secret is the user's.
      expect(
        kubectl(['get', 'secrets', '-n', namespace, '--field-selector', 'type!=helm.sh/release.v1', '-o', 'jsonpath={.items[*].metadata.name}']).trim(),
      ).toBe('cloudplane-bootstrap');
      const env = JSON.parse(kubectl(['get', 'deployment', 'gitops-cloudplane', '-n', namespace, '-o', 'jsonpath={.spec.template.spec.containers[0].env}']));
      expect(env.find((e: any) => e.name === 'CLOUDPLANE_BOOTSTRAP_API_KEY').valueFrom).toEqual({
        secretKeyRef: { name: 'cloudplane-bootstrap', key: 'token' },
      });
      // helm status tells how to read the key from the user's Secret.
      expect(helmOnCluster(['status', 'gitops', '--namespace', namespace])).toContain(`get secret cloudplane-bootstrap -o jsonpath='{.data.token}'`);
      // An upgrade leaves the user's Secret (and its key) alone.
      helmOnCluster(['upgrade', 'gitops', CHART, '--namespace', namespace, '--skip-crds', '--reuse-values', '--set', 'logLevel=debug']);
      expect(Buffer.from(kubectl(['get', 'secret', 'cloudplane-bootstrap', '-n', namespace, '-o', 'jsonpath={.data.token}']), 'base64').toString()).toBe(key);
    }, 120_000);

    it('moves an install between an emptyDir (with NATS) and the data claim (Recreate) on helm upgrade, both ways', () => {
      const namespace = 'cloudplane-persistence';
      const deployment = () => JSON.parse(kubectl(['get', 'deployment', 'events-cloudplane', '-n', namespace, '-o', 'json'])).spec;
      const claims = () => kubectl(['get', 'persistentvolumeclaims', '-n', namespace, '-o', 'name']).trim();
      helmOnCluster(['install', 'events', CHART, '--namespace', namespace, '--create-namespace', '--skip-crds', '--set', 'nats.url=nats://nats:4222']);
      expect(deployment().strategy.type).toBe('RollingUpdate');
      expect(claims()).toBe('');
      // The API server filled in rollingUpdate; the upgrade to Recreate must clear it, or the API server refuses the Deployment.
      helmOnCluster(['upgrade', 'events', CHART, '--namespace', namespace, '--skip-crds', '--reset-values']);
      expect(deployment().strategy).toEqual({ type: 'Recreate' });
      expect(claims()).toBe('persistentvolumeclaim/events-cloudplane-data');
      expect(deployment().template.spec.volumes).toContainEqual({ name: 'data', persistentVolumeClaim: { claimName: 'events-cloudplane-data' } });
      helmOnCluster(['upgrade', 'events', CHART, '--namespace', namespace, '--skip-crds', '--set', 'nats.url=nats://nats:4222']);
      expect(deployment().strategy.type).toBe('RollingUpdate');
      expect(deployment().template.spec.volumes).toContainEqual({ name: 'data', emptyDir: {} });
    }, 120_000);

    it('keeps a generated bootstrap key across helm upgrade', () => {
      const namespace = 'cloudplane-upgrade';
      const keyOf = () =>
        Buffer.from(kubectl(['get', 'secret', 'cp-cloudplane', '-n', namespace, '-o', 'jsonpath={.data.bootstrap-api-key}']), 'base64').toString();
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
