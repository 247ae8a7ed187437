/**
 * Adoption of custom resources made outside the API, on a real kube-apiserver with the
 * real service in cluster mode: a CR is judged by the family's create rules as the same
 * POST would be, gets the rules' defaults in its spec and its generated secret, or ends
 * `failed` with the API's message; a refused CR whose spec is edited is judged again,
 * one that failed at the provider is not. A kubectl-made CR is adopted at once, whatever
 * first status it claims; only one an earlier version's store marked as the API's (left
 * without its status, as by an API that crashed between its two writes) waits for the
 * grace, set long here so that no clock is read. The API's own creates are one write,
 * their first status sealed in annotations.
 */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { installCrds, kubeConfigOf, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { eventsOf, Receiver, startReceiver } from '../helpers/receiver';
import { newId, objectNameForId } from '../../src/lib/ids';

jest.setTimeout(60_000);

const GROUP = 'cloudplane.dev';
const VERSION = 'v1alpha1';
const UNAVAILABLE_REGION = 'sgp1';
/** Adoption is immediate and the provider's simulated work short: far less than GRACE_S. */
const SETTLE_MS = 30_000;
/** Far longer than the whole file: what is adopted before it passed was not held back. */
const GRACE_S = 600;
const STATUS_PENDING = `${GROUP}/status-pending`;
const FIRST_STATUS = `${GROUP}/first-status`;
const FIRST_STATUS_SEAL = `${GROUP}/first-status-seal`;

let cluster: KubeApiServer;
let t: TestService;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let namespace: string;
let receiver: Receiver;

const CRS = {
  ipsec: {
    plural: 'vpngateways',
    kind: 'VpnGateway',
    name: 'office-ipsec',
    spec: {
      name: 'office-ipsec',
      region: 'fra1',
      tunnel_type: 'ipsec',
      local_network_cidr: '10.10.0.0/16',
      remote_network_cidr: '192.168.10.0/24',
      remote_peer_ip: '93.184.216.34',
      psk_version: 1,
    },
  },
  wireguard: {
    plural: 'vpngateways',
    kind: 'VpnGateway',
    name: 'office-wg',
    spec: {
      name: 'office-wg',
      region: 'fra1',
      tunnel_type: 'wireguard',
      local_network_cidr: '10.10.0.0/16',
      remote_network_cidr: '192.168.20.0/24',
      remote_peer_ip: '93.184.216.35',
      psk_version: 1,
    },
  },
  overlapping: {
    plural: 'vpngateways',
    kind: 'VpnGateway',
    name: 'overlapping',
    spec: {
      name: 'overlapping',
      region: 'fra1',
      tunnel_type: 'ipsec',
      local_network_cidr: '10.10.0.0/16',
      remote_network_cidr: '10.10.4.0/24',
      remote_peer_ip: '93.184.216.36',
      psk_version: 1,
    },
  },
  unavailable: {
    plural: 'buckets',
    kind: 'Bucket',
    name: 'far-away',
    spec: { name: 'far-away', region: UNAVAILABLE_REGION, public: false },
  },
  // ssl_certificate_id left out: client-side kubectl apply drops a null, and the CRD allows it.
  defaulted: {
    plural: 'loadbalancers',
    kind: 'LoadBalancer',
    name: 'no-cert',
    spec: {
      name: 'no-cert',
      region: 'fra1',
      algorithm: 'round_robin',
      protocol: 'http',
      port: 80,
      health_check_path: '/health',
      sticky_sessions: false,
      backends: [],
    },
  },
  nameTaken: {
    plural: 'buckets',
    kind: 'Bucket',
    name: 'twin',
    spec: { name: 'api-made-first', region: 'fra1', public: false },
  },
  // Refused, then fixed with an edit of the spec.
  fixable: {
    plural: 'loadbalancers',
    kind: 'LoadBalancer',
    name: 'fix-me',
    spec: {
      name: 'fix-me',
      region: UNAVAILABLE_REGION,
      algorithm: 'round_robin',
      protocol: 'http',
      port: 80,
      health_check_path: '/health',
      sticky_sessions: false,
      backends: [],
    },
  },
  // Refused, edited into another refusal, then fixed.
  refusedTwice: {
    plural: 'vpngateways',
    kind: 'VpnGateway',
    name: 'twice',
    spec: {
      name: 'twice',
      region: 'fra1',
      tunnel_type: 'ipsec',
      local_network_cidr: '10.20.0.0/16',
      remote_network_cidr: '10.20.4.0/24',
      remote_peer_ip: '93.184.216.37',
      psk_version: 1,
    },
  },
  // Accepted, then failed at the provider (CLOUDPLANE_SIM_FAILURES): an edit does not start it over.
  providerFailed: {
    plural: 'fileshares',
    kind: 'FileShare',
    name: 'broken-share',
    spec: { name: 'broken-share', region: 'fra1', size_gb: 100 },
  },
  // Refused; its fix is accepted and then fails at the provider too.
  refusedShare: {
    plural: 'fileshares',
    kind: 'FileShare',
    name: 'far-share',
    spec: { name: 'far-share', region: UNAVAILABLE_REGION, size_gb: 100 },
  },
} as const;
type CrKey = keyof typeof CRS;

/**
 * Load balancers as an earlier version's Kubernetes store created them for the API (id
 * name and label, status-pending mark, creation stamp, finalizer; the status a second
 * write), whose status write never came: one just now, one longer ago than the grace (the
 * API crashed between its two writes). A rolling upgrade can leave such an object.
 */
const HALF_MADE = {
  recent: { id: newId('lb'), name: 'crashed-just-now', ageMs: 0 },
  old: { id: newId('lb'), name: 'crashed-long-ago', ageMs: 2 * GRACE_S * 1000 },
} as const;
const halfMadeBody = ({ id, name, ageMs }: (typeof HALF_MADE)[keyof typeof HALF_MADE]) => {
  const at = new Date(Date.now() - ageMs).toISOString();
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'LoadBalancer',
    metadata: {
      name: objectNameForId(id),
      labels: { [`${GROUP}/id`]: id, [STATUS_PENDING]: 'true' },
      annotations: { [`${GROUP}/created-at`]: at, [`${GROUP}/updated-at`]: at },
      finalizers: [`${GROUP}/finalizer`],
    },
    spec: { ...CRS.defaulted.spec, name, ssl_certificate_id: null },
  };
};

/** A custom resource the API made, by its plural and API id. */
const readById = async (plural: string, id: string): Promise<any> =>
  custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name: objectNameForId(id) });
const readHalfMade = (key: keyof typeof HALF_MADE) => readById('loadbalancers', HALF_MADE[key].id);
const where = (key: CrKey) => ({ group: GROUP, version: VERSION, namespace, plural: CRS[key].plural, name: CRS[key].name });
const read = async (key: CrKey): Promise<any> => custom.getNamespacedCustomObject(where(key));
/** The API id the operator gave the CR, once it has a status (adopted). */
const adoptedId = (key: CrKey) =>
  eventually(
    async () => {
      const object = await read(key);
      return object.status?.status ? (object.metadata.labels?.[`${GROUP}/id`] as string) : null;
    },
    SETTLE_MS,
    100,
  );
/** Changes the CR's spec as kubectl edit does: a replace of the object read, retried if the operator wrote in between. */
const editSpec = (key: CrKey, changes: Record<string, unknown>) =>
  eventually(
    async () => {
      const object = await read(key);
      const body = { ...object, spec: { ...object.spec, ...changes } };
      return (await custom.replaceNamespacedCustomObject({ ...where(key), body })) as any;
    },
    10_000,
    100,
  );
const syncedOf = (object: any) => object.status.conditions.find((c: { type: string }) => c.type === 'Synced');
const eventTypesOf = (id: string) =>
  eventsOf(receiver)
    .filter((e) => e.data.id === id)
    .map((e) => e.type as string);
const secretName = (id: string) => `vpn-psk-${id.replace('_', '-')}`;

beforeAll(async () => {
  [cluster, receiver] = await Promise.all([startKubeApiServer(), startReceiver()]);
  await installCrds(cluster);
  t = await startTestService({
    ...storeEnvFor(cluster),
    CLOUDPLANE_SIM_DELAY_MS: '50',
    CLOUDPLANE_REGIONS_UNAVAILABLE: UNAVAILABLE_REGION,
    CLOUDPLANE_SIM_FAILURES: 'file_share=1',
    // Several waits poll the API at once; the per-key limit is not what this file tests.
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
    CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
    CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    CLOUDPLANE_ADOPTION_GRACE_SECONDS: String(GRACE_S),
  });
  const kc = kubeConfigOf(cluster);
  custom = kc.makeApiClient(CustomObjectsApi);
  core = kc.makeApiClient(CoreV1Api);
  namespace = t.teamId.replace('_', '-');
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });

  const hook = await t.api('POST', '/api/v1/webhooks', {
    url: receiver.url,
    events: [
      'vpn_gateway.created',
      'vpn_gateway.failed',
      'vpn_gateway.updated',
      'vpn_gateway.active',
      'bucket.created',
      'bucket.failed',
      'load_balancer.created',
      'load_balancer.failed',
      'load_balancer.updated',
      'load_balancer.running',
    ],
  });
  expect(hook.status).toBe(201);
  // The name the kubectl-made "twin" asks for is held already.
  expect((await t.api('POST', '/api/v1/object-storage', { name: 'api-made-first', region: 'fra1' })).status).toBe(201);

  // Before the kubectl-made CRs: those are adopted while the recent one still waits.
  for (const half of Object.values(HALF_MADE)) {
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'loadbalancers', body: halfMadeBody(half) });
  }
  for (const key of Object.keys(CRS) as CrKey[]) {
    const { plural, kind, name, spec } = CRS[key];
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name }, spec },
    });
  }
}, 120_000);

afterAll(async () => {
  await t?.stop();
  await cluster?.stop();
  await receiver?.close();
});

describe('adoption of kubectl-made custom resources', () => {
  test("a kubectl-made CR is adopted well inside the grace; one the API left without its status waits for the grace, then is adopted as kubectl's", async () => {
    // Created after the recent half-made CR, adopted within SETTLE_MS, far less than the grace.
    const id = await adoptedId('wireguard');
    expect((await t.api('GET', `/api/v1/vpn-gateways/${id}`)).status).toBe(200);

    // Past its grace: taken in as kubectl's would be, first status, creation event and all.
    const old = await waitForStatus(t, `/api/v1/load-balancers/${HALF_MADE.old.id}`, 'running', SETTLE_MS);
    expect(old.name).toBe(HALF_MADE.old.name);
    await eventually(async () => eventTypesOf(HALF_MADE.old.id).includes('load_balancer.created'));

    // Within its grace, after both: no status yet, so the API does not show it.
    expect((await readHalfMade('recent')).status?.status).toBeUndefined();
    expect((await t.api('GET', `/api/v1/load-balancers/${HALF_MADE.recent.id}`)).status).toBe(404);
    const listed = await t.api('GET', '/api/v1/load-balancers?limit=100');
    const ids = listed.body.data.map((r: { id: string }) => r.id);
    expect(ids).toContain(HALF_MADE.old.id);
    expect(ids).not.toContain(HALF_MADE.recent.id);
  });

  test("the API's create is one write: its first status rides sealed in annotations until the operator writes one, and no answer shows the seal", async () => {
    const { backends: _backends, ...body } = CRS.defaulted.spec;
    const created = await t.api('POST', '/api/v1/load-balancers', { ...body, name: 'made-by-the-api' });
    expect(created.status).toBe(201);
    const object: any = await readById('loadbalancers', created.body.data.id);
    // What the create wrote: the first status, with its creation event, in the annotation.
    const first = JSON.parse(object.metadata.annotations[FIRST_STATUS]);
    expect(first).toMatchObject({ status: 'creating', observedGeneration: 1 });
    expect(first.pending_events.map((e: { type: string }) => e.type)).toEqual(['load_balancer.created']);
    expect(object.metadata.annotations[FIRST_STATUS_SEAL]).toMatch(/^[\w-]{43}\.[\w-]{43}$/);
    expect(object.metadata.labels[STATUS_PENDING]).toBeUndefined();
    await waitForStatus(t, `/api/v1/load-balancers/${created.body.data.id}`, 'running', SETTLE_MS);
    await eventually(async () => eventTypesOf(created.body.data.id).join() === 'load_balancer.created,load_balancer.running');

    const one = await t.api('GET', `/api/v1/load-balancers/${created.body.data.id}`);
    const list = await t.api('GET', '/api/v1/load-balancers?limit=100');
    for (const answer of [created, one, list]) expect(JSON.stringify(answer.body)).not.toMatch(/first-status|status-pending/);

    // A kind nothing writes again after its create (a webhook subscription at rest): the
    // store writes the first status itself after a few seconds, so kubectl shows it too.
    const hook = await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['bucket.created'] });
    expect(hook.status).toBe(201);
    const written = await eventually(
      async () => {
        const cr: any = await readById('webhooksubscriptions', hook.body.data.id);
        return cr.status?.status ? cr : null;
      },
      SETTLE_MS,
      200,
    );
    expect(written.status.status).toBe(hook.body.data.status);
    expect(written.status.observedGeneration).toBe(1);
  });

  test("a first status a kubectl user writes, copies or replays is not believed: the object is judged as kubectl's", async () => {
    const { backends: _backends, ...body } = CRS.defaulted.spec;
    const original = await t.api('POST', '/api/v1/load-balancers', { ...body, name: 'sealed-original' });
    expect(original.status).toBe(201);
    const sealed: any = await readById('loadbalancers', original.body.data.id);
    const claimed = { ...JSON.parse(sealed.metadata.annotations[FIRST_STATUS]), status: 'running', ipv4: '203.0.113.66' };
    // Each asks for a region that takes no new resources: judged by the create rules, it is refused.
    const spec = { ...CRS.defaulted.spec, region: UNAVAILABLE_REGION, ssl_certificate_id: null };
    const forgeries = {
      // The original's seal and annotations on an object of its own, under an id of its own.
      copied: { id: newId('lb'), annotations: sealed.metadata.annotations },
      // A status of the user's choosing, with a seal made up.
      forged: {
        id: newId('lb'),
        annotations: { ...sealed.metadata.annotations, [FIRST_STATUS]: JSON.stringify(claimed), [FIRST_STATUS_SEAL]: 'A'.repeat(43) },
      },
    };
    for (const [name, { id, annotations }] of Object.entries(forgeries)) {
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: 'loadbalancers',
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'LoadBalancer',
          metadata: { name: objectNameForId(id), labels: { [`${GROUP}/id`]: id }, annotations },
          spec: { ...spec, name },
        },
      });
    }
    for (const { id } of Object.values(forgeries)) {
      const refused = await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'failed', SETTLE_MS);
      expect(refused.ipv4).toBeNull();
      expect(refused.status_reason).toMatch(/region/i);
    }
    // The original, whose seal held, was not judged again.
    await waitForStatus(t, `/api/v1/load-balancers/${original.body.data.id}`, 'running', SETTLE_MS);
  });

  test('an IPsec VPN gateway without a key gets a generated one in its Secret, psk_version 1, and the key shows nowhere else', async () => {
    const id = await adoptedId('ipsec');
    const record = await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'active', SETTLE_MS);
    expect(record.tunnel_type).toBe('ipsec');

    const secret = await core.readNamespacedSecret({ name: secretName(id), namespace });
    const key = Buffer.from(secret.data!.value, 'base64').toString('utf8');
    expect(key).toMatch(/^[A-Za-z0-9]{40}$/);

    const object = await read('ipsec');
    expect(object.spec.psk_version).toBe(1);
    expect(JSON.stringify(object)).not.toContain(key);
    const one = await t.api('GET', `/api/v1/vpn-gateways/${id}`);
    const list = await t.api('GET', '/api/v1/vpn-gateways?limit=100');
    expect(JSON.stringify(one.body)).not.toContain(key);
    expect(JSON.stringify(list.body)).not.toContain(key);
    // Its creation event went out, without the key either.
    const created = await eventually(async () => eventsOf(receiver).find((e) => e.type === 'vpn_gateway.created' && e.data.id === id));
    expect(JSON.stringify(created)).not.toContain(key);
  });

  test('a WireGuard VPN gateway gets no key, as through the API', async () => {
    const id = await adoptedId('wireguard');
    await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'active', SETTLE_MS);
    await expect(core.readNamespacedSecret({ name: secretName(id), namespace })).rejects.toMatchObject({ code: 404 });
  });

  test("a CR in an unavailable region ends failed with the API's reason, a Crossplane-like condition and the failed event", async () => {
    const refusedByApi = await t.api('POST', '/api/v1/object-storage', CRS.unavailable.spec);
    expect(refusedByApi.status).toBe(422);
    const reason: string = refusedByApi.body.error.message;
    expect(reason).toContain(UNAVAILABLE_REGION);

    const id = await adoptedId('unavailable');
    const record = await waitForStatus(t, `/api/v1/object-storage/${id}`, 'failed', SETTLE_MS);
    expect(record.status_reason).toBe(reason);
    expect(record.endpoint).toBeNull();

    const object = await read('unavailable');
    expect(object.status.status_reason).toBe(reason);
    expect(object.status.external).toBeUndefined(); // the driver was never asked for anything
    const synced = object.status.conditions.find((c: { type: string }) => c.type === 'Synced');
    // SpecRefused, not a provider's ReconcileError: a change of the spec has it judged again.
    expect(synced).toMatchObject({ status: 'False', reason: 'SpecRefused', message: reason });
    expect(object.status.conditions.find((c: { type: string }) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Failed' });

    const failed = await eventually(async () => eventsOf(receiver).find((e) => e.type === 'bucket.failed' && e.data.id === id));
    expect(failed.data.status_reason).toBe(reason);
  });

  test("a VPN gateway whose networks overlap is refused with the API's message and gets no key", async () => {
    const id = await adoptedId('overlapping');
    const record = await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'failed', SETTLE_MS);
    expect(record.status_reason).toBe('The remote network 10.10.4.0/24 overlaps the local network 10.10.0.0/16.');
    await expect(core.readNamespacedSecret({ name: secretName(id), namespace })).rejects.toMatchObject({ code: 404 });
  });

  test('a CR asking for a name another bucket holds is refused as name_taken', async () => {
    const id = await adoptedId('nameTaken');
    const record = await waitForStatus(t, `/api/v1/object-storage/${id}`, 'failed', SETTLE_MS);
    expect(record.status_reason).toBe('A bucket named "api-made-first" already exists in this team.');
  });

  test('a valid CR without an optional field gets the default written into its spec and reaches its ready state', async () => {
    const before = { ...CRS.defaulted.spec } as Record<string, unknown>;
    expect('ssl_certificate_id' in before).toBe(false);
    const id = await adoptedId('defaulted');
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', SETTLE_MS);

    const object = await read('defaulted');
    expect(object.spec).toEqual({ ...before, ssl_certificate_id: null });
    // Written once, before the first status: the status has seen that generation.
    expect(object.metadata.generation).toBe(2);
    expect(object.status.observedGeneration).toBe(2);
  });

  test('a refused CR whose spec is fixed is judged again and proceeds as a fresh adoption: defaults, updated event, ready state', async () => {
    const { backends: _backends, ...body } = CRS.fixable.spec;
    const refusedByApi = await t.api('POST', '/api/v1/load-balancers', body);
    expect(refusedByApi.status).toBe(422);
    const id = await adoptedId('fixable');
    const refused = await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'failed', SETTLE_MS);
    expect(refused.status_reason).toBe(refusedByApi.body.error.message);
    const before = await read('fixable');
    expect(syncedOf(before).reason).toBe('SpecRefused');
    expect(before.status.observedGeneration).toBe(before.metadata.generation);
    expect('ssl_certificate_id' in before.spec).toBe(false); // a refusal writes no defaults
    await eventually(async () => eventTypesOf(id).includes('load_balancer.failed'));

    const edited = await editSpec('fixable', { region: 'fra1' });
    const running = await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', SETTLE_MS);
    expect(running.region).toBe('fra1');
    expect(running.status_reason).toBeNull();

    const after = await read('fixable');
    // The default is written into the spec once (a generation of its own), and the status has seen it.
    expect(after.spec).toEqual({ ...CRS.fixable.spec, region: 'fra1', ssl_certificate_id: null });
    expect(after.metadata.generation).toBe(edited.metadata.generation + 1);
    expect(after.status.observedGeneration).toBe(after.metadata.generation);
    expect(syncedOf(after)).toMatchObject({ status: 'True', reason: 'ReconcileSuccess' });

    // One creation event (the refusal's); the fix is an update, as a PATCH would be.
    await eventually(async () => eventTypesOf(id).includes('load_balancer.running'));
    const types = eventTypesOf(id);
    expect(types.filter((type) => type === 'load_balancer.created')).toHaveLength(1);
    expect(types.filter((type) => type === 'load_balancer.updated')).toHaveLength(1);
  });

  test('a fix that is still refused stays failed with the new message; the next fix gets the gateway its generated key', async () => {
    const id = await adoptedId('refusedTwice');
    const first = await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'failed', SETTLE_MS);
    expect(first.status_reason).toBe('The remote network 10.20.4.0/24 overlaps the local network 10.20.0.0/16.');

    const stillBad = await editSpec('refusedTwice', { remote_network_cidr: '10.20.8.0/24' });
    const newReason = 'The remote network 10.20.8.0/24 overlaps the local network 10.20.0.0/16.';
    const refusedAgain = await eventually(
      async () => {
        const object = await read('refusedTwice');
        return object.status.status_reason === newReason ? object : null;
      },
      SETTLE_MS,
      100,
    );
    expect(refusedAgain.status.status).toBe('failed');
    expect(refusedAgain.status.observedGeneration).toBe(stillBad.metadata.generation);
    expect(syncedOf(refusedAgain)).toMatchObject({ status: 'False', reason: 'SpecRefused', message: newReason });
    expect((await t.api('GET', `/api/v1/vpn-gateways/${id}`)).body.data.status_reason).toBe(newReason);
    await expect(core.readNamespacedSecret({ name: secretName(id), namespace })).rejects.toMatchObject({ code: 404 });
    // Staying failed is no state change, and nothing was applied: no event.
    expect(eventTypesOf(id).filter((type) => type !== 'vpn_gateway.created' && type !== 'vpn_gateway.failed')).toEqual([]);

    await editSpec('refusedTwice', { remote_network_cidr: '192.168.30.0/24' });
    await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'active', SETTLE_MS);
    const secret = await core.readNamespacedSecret({ name: secretName(id), namespace });
    const key = Buffer.from(secret.data!.value, 'base64').toString('utf8');
    expect(key).toMatch(/^[A-Za-z0-9]{40}$/);
    const updated = await eventually(async () => eventsOf(receiver).find((e) => e.type === 'vpn_gateway.updated' && e.data.id === id));
    expect(JSON.stringify(updated)).not.toContain(key);
  });

  test('a resource that failed at the provider is not judged again when its spec changes', async () => {
    const brokenId = await adoptedId('providerFailed');
    const broken = await waitForStatus(t, `/api/v1/file-storage/${brokenId}`, 'failed', SETTLE_MS);
    expect(broken.status_reason).toMatch(/^Provisioning failed: /);
    const before = await read('providerFailed');
    expect(syncedOf(before).reason).toBe('ReconcileError');

    const refusedId = await adoptedId('refusedShare');
    await waitForStatus(t, `/api/v1/file-storage/${refusedId}`, 'failed', SETTLE_MS);

    // The provider-failed share is edited first; once the later edit of the refused one has
    // been judged, accepted and provisioned (and failed there), the first edit was seen too.
    const edited = await editSpec('providerFailed', { size_gb: 200 });
    await editSpec('refusedShare', { region: 'fra1' });
    const accepted = await eventually(
      async () => {
        const object = await read('refusedShare');
        return object.status.status === 'failed' && /^Provisioning failed: /.test(object.status.status_reason) ? object : null;
      },
      SETTLE_MS,
      100,
    );
    expect(syncedOf(accepted).reason).toBe('ReconcileError');

    const after = await read('providerFailed');
    expect(after.metadata.generation).toBe(edited.metadata.generation);
    expect(after.status.status).toBe('failed');
    expect(after.status.status_reason).toBe(before.status.status_reason);
    expect(after.status.observedGeneration).toBe(before.status.observedGeneration);
    expect(after.status.external).toEqual(before.status.external);
    expect(after.status.conditions).toEqual(before.status.conditions);
  });
});
