/**
 * WebhookSubscription custom resources made with kubectl, on a real kube-apiserver with
 * the real service in cluster mode: taken in like every other family's (judged by the
 * create rules, a refused spec `failed`), its signing secret generated into a Kubernetes
 * Secret named in its status (never in the custom resource, a log line or an event), and
 * it delivers signed events to a real receiver. A kubectl edit and a kubectl delete act
 * as PATCH and DELETE do.
 */
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { CoreV1Api } from '@kubernetes/client-node';
import { installCrds, kubeConfigOf, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer, kubectlOn } from '../helpers/kube-apiserver';
import { eventually, FAST_ENV, request } from '../helpers/service';
import { eventsOf, Receiver, startReceiver } from '../helpers/receiver';
import { formsOf } from '../helpers/secret-scan';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { RunningService, startService } from '../../src/service';

jest.setTimeout(120_000);

const SETTLE_MS = 40_000;

let cluster: KubeApiServer;
let service: RunningService;
let key: string;
let receiver: Receiver;
let core: CoreV1Api;
let namespace: string;
let workDir: string;
/** Every line the service logged, at debug level. */
const logLines: string[] = [];

const api = (method: string, urlPath: string, body?: unknown) => request(service.url, method, urlPath, body, { key });

const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);

async function apply(yaml: string): Promise<string> {
  const file = path.join(workDir, `manifest-${Date.now()}-${Math.random().toString(36).slice(2)}.yaml`);
  fs.writeFileSync(file, yaml);
  return kubectl('apply', '-n', namespace, '-f', file);
}

const getJson = async (name: string) => JSON.parse(await kubectl('get', 'cpwh', name, '-n', namespace, '-o', 'json'));
const adopted = (name: string) => eventually(async () => ((await getJson(name)).status?.status ? getJson(name) : null), SETTLE_MS, 100);
const idOf = (object: any): string => object.metadata.labels['cloudplane.dev/id'];

const subscription = (name: string, spec: string) => `
apiVersion: cloudplane.dev/v1alpha1
kind: WebhookSubscription
metadata:
  name: ${name}
spec:
${spec}`;

/** Whether the X-Service-Signature header verifies with `secret`, as a receiver using Stripe's scheme checks it. */
function signedWith(secret: string, headers: Record<string, unknown>, body: string): boolean {
  const header = String(headers['x-service-signature']);
  const t = /t=(\d+)/.exec(header)![1];
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return header.split(',').includes(`v1=${expected}`);
}

beforeAll(async () => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-webhook-adoption-'));
  [cluster, receiver] = await Promise.all([startKubeApiServer(), startReceiver()]);
  await installCrds(cluster);
  const config = loadConfig({
    ...FAST_ENV,
    CLOUDPLANE_PORT: '0',
    CLOUDPLANE_DATA_DIR: workDir,
    ...storeEnvFor(cluster),
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
    CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
    CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  });
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  service = await startService(config, createLogger('debug', sink));
  key = service.bootstrap!.token;
  namespace = service.bootstrap!.teamId.replace('_', '-');
  core = kubeConfigOf(cluster).makeApiClient(CoreV1Api);
  await kubectl('create', 'namespace', namespace).catch((err: Error) => {
    if (!/AlreadyExists/.test(err.message)) throw err;
  });
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await cluster?.stop();
  await receiver?.close();
  if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
});

describe('kubectl-made webhook subscriptions', () => {
  let id: string;
  let secret: string;

  test('one applied with kubectl is adopted, its signing secret generated into the Secret its status names, and it delivers signed events', async () => {
    await apply(subscription('deploy-hooks', `  url: ${receiver.url}\n  events: ['bucket.*']\n`));
    const object = await adopted('deploy-hooks');
    id = idOf(object);
    expect(object.status.status).toBe('active');
    // The create rules' defaults are written into the spec, as for every adopted family.
    expect(object.spec).toEqual({ url: receiver.url, events: ['bucket.*'], filter: null, active: true, rate_limit_per_minute: 100 });

    const secretName = await eventually(async () => (await getJson('deploy-hooks')).status.signing_secret_name as string | undefined, SETTLE_MS, 100);
    const stored = await core.readNamespacedSecret({ name: secretName, namespace });
    secret = Buffer.from(stored.data!.current, 'base64').toString('utf8');
    expect(secret).toMatch(/^whsec_/);

    const shown = await api('GET', `/api/v1/webhooks/${id}`);
    expect(shown.status).toBe(200);
    expect(shown.body.data).toMatchObject({ id, url: receiver.url, events: ['bucket.*'], active: true, status: 'active' });

    const bucket = await api('POST', '/api/v1/object-storage', { name: 'hooked-bucket', region: 'fra1' });
    expect(bucket.status).toBe(201);
    const delivery = await eventually(
      async () => receiver.received.find((r) => JSON.parse(r.body).type === 'bucket.created' && JSON.parse(r.body).data.id === bucket.body.data.id),
      SETTLE_MS,
      100,
    );
    expect(signedWith(secret, delivery.headers, delivery.body)).toBe(true);
    const deliveries = await api('GET', `/api/v1/webhooks/${id}/deliveries`);
    expect(deliveries.body.data.map((d: { event_type: string; status: string }) => d.event_type)).toContain('bucket.created');
  });

  test('the secret is in no custom resource, Kubernetes Event, delivered event or log line', async () => {
    const crs = await kubectl('get', 'cpwh', '-n', namespace, '-o', 'json');
    const events = await kubectl('get', 'events', '-n', namespace, '-o', 'json');
    const places = { 'custom resources': crs, 'Kubernetes events': events, 'delivered events': JSON.stringify(eventsOf(receiver)), logs: logLines.join('\n') };
    expect(logLines.length).toBeGreaterThan(0);
    for (const [where, text] of Object.entries(places)) {
      for (const { form, bytes } of formsOf(secret)) expect({ where, form, found: text.includes(bytes.toString()) }).toEqual({ where, form, found: false });
    }
  });

  test('a kubectl edit is settled as a PATCH would be: inactive delivers nothing, active again delivers', async () => {
    await kubectl('patch', 'cpwh', 'deploy-hooks', '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { active: false } }));
    await eventually(async () => (await api('GET', `/api/v1/webhooks/${id}`)).body.data.status === 'inactive', SETTLE_MS, 100);
    expect((await getJson('deploy-hooks')).status.status).toBe('inactive');
    const unheard = await api('POST', '/api/v1/object-storage', { name: 'unheard-bucket', region: 'fra1' });
    expect(unheard.status).toBe(201);

    await kubectl('patch', 'cpwh', 'deploy-hooks', '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { active: true } }));
    await eventually(async () => (await api('GET', `/api/v1/webhooks/${id}`)).body.data.status === 'active', SETTLE_MS, 100);
    const heard = await api('POST', '/api/v1/object-storage', { name: 'heard-bucket', region: 'fra1' });
    await eventually(async () => receiver.received.some((r) => JSON.parse(r.body).data.id === heard.body.data.id), SETTLE_MS, 100);
    // Events are matched in order: the one made while inactive was passed over before this one was delivered.
    expect(receiver.received.some((r) => JSON.parse(r.body).data.id === unheard.body.data.id)).toBe(false);
  });

  test('a spec the create rules refuse ends failed with the reason; fixing it with an edit adopts it', async () => {
    await apply(subscription('broken-filter', `  url: ${receiver.url}\n  events: ['server.*']\n  filter: { region: fra1 }\n`));
    const refused = await adopted('broken-filter');
    expect(refused.status.status).toBe('failed');
    const record = (await api('GET', `/api/v1/webhooks/${idOf(refused)}`)).body.data;
    expect(record).toMatchObject({ status: 'failed', active: false });
    expect(record.disabled_reason).toMatch(/filter/);

    await kubectl(
      'patch',
      'cpwh',
      'broken-filter',
      '-n',
      namespace,
      '--type',
      'merge',
      '-p',
      JSON.stringify({ spec: { filter: { region: null, 'server.region': 'fra1' } } }),
    );
    await eventually(async () => (await api('GET', `/api/v1/webhooks/${idOf(refused)}`)).body.data.status === 'active', SETTLE_MS, 100);
  });

  test('a kubectl delete ends the subscription as DELETE does: deleted, and its secret gone', async () => {
    const secretName = (await getJson('deploy-hooks')).status.signing_secret_name;
    await kubectl('delete', 'cpwh', 'deploy-hooks', '-n', namespace, '--wait=false');
    // Kept, deleted, like one deleted through the API, until the retention sweep removes it.
    await eventually(async () => (await api('GET', `/api/v1/webhooks/${id}`)).body.data.status === 'deleted', SETTLE_MS, 100);
    await eventually(
      async () => {
        try {
          await core.readNamespacedSecret({ name: secretName, namespace });
          return false;
        } catch (err) {
          return (err as { code?: number }).code === 404;
        }
      },
      SETTLE_MS,
      100,
    );
  });
});
