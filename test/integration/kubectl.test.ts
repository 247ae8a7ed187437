/**
 * The kubectl side of cluster mode, with the real kubectl (scripts/build-kubectl.sh, the
 * same release as the API server), a real kube-apiserver + etcd, and the real service on
 * the Kubernetes store: what users do with kubectl and what the API shows must agree.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { families } from '../../src/resources/registry';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer, kubectlOn } from '../helpers/kube-apiserver';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { EXAMPLES, EXAMPLES_BY_FILE, exampleFiles } from '../helpers/examples';

jest.setTimeout(120_000);

const REPO = path.resolve(__dirname, '../..');
const RETENTION_SECONDS = 2;

let cluster: KubeApiServer;
let t: TestService;
let namespace: string;

/** Runs kubectl asynchronously (the service under test shares this event loop); rejects with its stderr. */
const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);

const getJson = async (short: string, name: string) => JSON.parse(await kubectl('get', short, name, '-n', namespace, '-o', 'json'));
const idOf = (object: any): string | undefined => object.metadata.labels?.['cloudplane.dev/id'];

/** The id a kubectl-created object is given by the operator. */
const idAssigned = (short: string, name: string) => eventually(async () => idOf(await getJson(short, name)), 15_000, 100);

beforeAll(async () => {
  cluster = await startKubeApiServer();
  await installCrds(cluster);
  t = await startTestService({
    ...storeEnvFor(cluster),
    CLOUDPLANE_SIM_DELAY_MS: '50',
    CLOUDPLANE_DELETED_RETENTION_SECONDS: String(RETENTION_SECONDS),
    // Several waits poll the API at once; the per-key limit is not what this file tests.
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
  });
  // A team is a namespace: team_x7k2... lives in team-x7k2...
  namespace = t.teamId.replace('_', '-');
  await kubectl('create', 'namespace', namespace).catch((err: Error) => {
    if (!/AlreadyExists/.test(err.message)) throw err;
  });
});

afterAll(async () => {
  await t?.stop();
  await cluster?.stop();
});

describe('kubectl against cluster mode', () => {
  test("the checked-in CRDs (crds/) and every example pass the API server's validation", async () => {
    // The CRD files are what users and the chart install; check them, not only the generator.
    const crdFiles = fs.readdirSync(path.join(REPO, 'crds')).filter((f) => f.endsWith('.yaml'));
    const crdOut = await kubectl('apply', '--dry-run=server', '-f', path.join(REPO, 'crds'));
    expect(crdOut.trim().split('\n')).toHaveLength(crdFiles.length);

    // A namespace no object exists in yet: every example is a create.
    await kubectl('create', 'namespace', 'dry-run-only');
    const out = await kubectl('apply', '--server-side', '--dry-run=server', '-n', 'dry-run-only', '-f', EXAMPLES);
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(exampleFiles().length);
    for (const line of lines) expect(line).toMatch(/serverside-applied \(server dry run\)$/);
    expect(await kubectl('get', 'cloudplane', '-n', 'dry-run-only', '-o', 'name')).toBe('');
  });

  test('client-side kubectl apply --dry-run=server accepts every example', async () => {
    const out = await kubectl('apply', '--dry-run=server', '-n', 'dry-run-only', '-f', EXAMPLES);
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(exampleFiles().length);
    for (const line of lines) expect(line).toMatch(/created \(server dry run\)$/);
  });

  test('kubectl apply -f examples/: every object gets an id, reaches its ready state and is served by the API', async () => {
    // Plain client-side apply, which leaves null fields out of what it sends.
    const out = await kubectl('apply', '-n', namespace, '-f', EXAMPLES);
    expect(EXAMPLES_BY_FILE.map((e) => e.file).sort()).toEqual(exampleFiles().sort());
    for (const example of EXAMPLES_BY_FILE) expect(out).toContain(`/${example.name} created`);

    await Promise.all(
      EXAMPLES_BY_FILE.map(async (example) => {
        const id = await idAssigned(example.short, example.name);
        expect(id).toMatch(/^[a-z]+_[0-9a-z]{16,26}$/);
        const record = await waitForStatus(t, `/api/v1/${example.path}/${id}`, example.ready, 30_000);
        expect(record.id).toBe(id);
        expect(record.name).toBe(example.name);
        const object = await getJson(example.short, example.name);
        expect(object.metadata.finalizers).toContain('cloudplane.dev/finalizer');
        expect(object.status.status).toBe(example.ready);
        // Listed with the team's resources too.
        const list = await t.api('GET', `/api/v1/${example.path}`);
        expect(list.body.data.map((r: { id: string }) => r.id)).toContain(id);
      }),
    );
  });

  test('a kubectl-created object is not shown until it has its first status, and never as an error', async () => {
    const manifest = [
      'apiVersion: cloudplane.dev/v1alpha1',
      'kind: Bucket',
      'metadata: {name: fresh-one}',
      'spec: {name: fresh-one, region: fra1, public: false}',
    ].join('\n');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cp-kubectl-')), 'bucket.yaml');
    fs.writeFileSync(file, manifest);
    await kubectl('create', '-n', namespace, '-f', file);
    // Right after creation adoption may not have run: the list answers without it, not 500.
    const early = await t.api('GET', '/api/v1/object-storage?limit=100');
    expect(early.status).toBe(200);
    const id = await idAssigned('cpbkt', 'fresh-one');
    const record = await waitForStatus(t, `/api/v1/object-storage/${id}`, 'available', 30_000);
    expect(record).toMatchObject({ id, name: 'fresh-one' });
  });

  test('a kubectl-created VPN gateway holds no key; the key set through the API lands in a Secret', async () => {
    const id = await idAssigned('cpvpn', 'office-link');
    await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'active', 30_000);
    const key = 'kubectl-example-psk-0123456789';
    const patched = await t.api('PATCH', `/api/v1/vpn-gateways/${id}`, { pre_shared_key: key });
    expect(patched.status).toBe(200);
    expect(JSON.stringify(patched.body)).not.toContain(key);

    const secretName = `vpn-psk-${id.replace('_', '-')}`;
    const secret = await eventually(async () => JSON.parse(await kubectl('get', 'secret', secretName, '-n', namespace, '-o', 'json')), 10_000, 100);
    expect(Buffer.from(secret.data.value, 'base64').toString('utf8')).toBe(key);
    const object = await eventually(async () => {
      const current = await getJson('cpvpn', 'office-link');
      return current.spec.psk_version === 2 ? current : null;
    });
    expect(JSON.stringify(object)).not.toContain(key);
  });

  test('a resource created through the API shows in kubectl get <short name> and kubectl get cloudplane, with the printer columns', async () => {
    const created = await t.api('POST', '/api/v1/load-balancers', { name: 'api-made', region: 'ams3' });
    expect(created.status).toBe(201);
    const id: string = created.body.data.id;
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running');
    const objectName = id.replace('_', '-');

    const table = (await kubectl('get', 'cplb', '-n', namespace)).trim().split('\n');
    expect(table[0].split(/\s+/)).toEqual(['NAME', 'ID', 'NAME', 'STATUS', 'READY', 'REGION', 'AGE']);
    const row = table.find((line) => line.startsWith(`${objectName} `));
    expect(row?.split(/\s+/).slice(0, 6)).toEqual([objectName, id, 'api-made', 'running', 'True', 'ams3']);

    const all = await eventually(async () => {
      const text = await kubectl('get', 'cloudplane', '-n', namespace);
      return text.includes(`loadbalancer.cloudplane.dev/${objectName}`) ? text : null;
    });
    const allRow = all.split('\n').find((line) => line.startsWith(`loadbalancer.cloudplane.dev/${objectName} `));
    expect(allRow?.split(/\s+/).slice(1, 6)).toEqual([id, 'api-made', 'running', 'True', 'ams3']);
    // The kubectl-made examples are in the same listing.
    expect(all).toContain('server.cloudplane.dev/app-1');
    expect(all).toContain('cloudjob.cloudplane.dev/nightly-report');
  });

  test('kubectl explain documents the spec fields from the family schemas', async () => {
    const lb = await kubectl('explain', 'loadbalancer.spec');
    expect(lb).toContain('GROUP:      cloudplane.dev');
    // Required is what a POST body must hold; the rest gets the API's defaults.
    expect(lb).toMatch(/name\s+<string> -required-/);
    expect(lb).toMatch(/algorithm\s+<string>\n/);
    expect(lb).toContain('Balancing algorithm: round_robin, least_connections or ip_hash.');
    expect(lb).toMatch(/Fields left out get the\s+defaults the API would give them/);

    const vpn = await kubectl('explain', 'vpngateway.spec');
    expect(vpn).toContain('psk_version');
    expect(vpn).toMatch(/The key is in the\s+Secret vpn-psk-<id>/);
    expect(vpn).not.toContain('pre_shared_key');

    const server = await kubectl('explain', 'cpsvr.spec.power_state');
    expect(server).toContain('Desired power state');
  });

  test('a spec change with kubectl patch is reconciled like a PATCH and shows in the API', async () => {
    const id = await idAssigned('cplb', 'web-frontend');
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', 30_000);
    const before = await getJson('cplb', 'web-frontend');
    await kubectl(
      'patch',
      'cplb',
      'web-frontend',
      '-n',
      namespace,
      '--type',
      'merge',
      '-p',
      JSON.stringify({ spec: { port: 8080, algorithm: 'least_connections' } }),
    );

    const record = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/load-balancers/${id}`);
      return res.body.data.port === 8080 ? res.body.data : null;
    });
    expect(record.algorithm).toBe('least_connections');
    // The reconciler has the driver apply the change and records the new generation once it observes it applied.
    const after = await eventually(async () => {
      const current = await getJson('cplb', 'web-frontend');
      return current.status.observedGeneration === current.metadata.generation ? current : null;
    });
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    expect(after.status.observed_config).not.toBe(before.status.observed_config);
    expect(after.status.status).toBe('running');
  });

  test('status is written only through the status subresource', async () => {
    const id = await idAssigned('cpfs', 'shared-home');
    await waitForStatus(t, `/api/v1/file-storage/${id}`, 'available', 30_000);

    const ignored = await kubectl(
      'patch',
      'cpfs',
      'shared-home',
      '-n',
      namespace,
      '--type',
      'merge',
      '-p',
      JSON.stringify({ status: { status: 'failed', status_reason: 'forged' } }),
    );
    expect(ignored).toContain('(no change)');
    const still = await t.api('GET', `/api/v1/file-storage/${id}`);
    expect(still.body.data.status).toBe('available');
    expect((await getJson('cpfs', 'shared-home')).status.status_reason).toBeNull();

    const note = 'maintenance window 02:00-03:00';
    const written = await kubectl(
      'patch',
      'cpfs',
      'shared-home',
      '-n',
      namespace,
      '--subresource=status',
      '--type',
      'merge',
      '-p',
      JSON.stringify({ status: { status_reason: note } }),
    );
    expect(written).toContain('patched');
    expect((await getJson('cpfs', 'shared-home')).status.status_reason).toBe(note);
    await eventually(async () => (await t.api('GET', `/api/v1/file-storage/${id}`)).body.data.status_reason === note);
  });

  test('kubectl delete is a soft delete: deleting/deleted in the API, the finalizer goes last', async () => {
    const id = await idAssigned('cpvpn', 'office-link');
    await waitForStatus(t, `/api/v1/vpn-gateways/${id}`, 'active', 30_000);
    await kubectl('delete', 'cpvpn', 'office-link', '-n', namespace, '--wait=false');

    // Seen through the API: deleting (provider teardown) then deleted, with the time of the request.
    const seen = new Set<string>();
    const deleted = await eventually(
      async () => {
        const res = await t.api('GET', `/api/v1/vpn-gateways/${id}`);
        seen.add(res.body.data?.status);
        return res.body.data?.status === 'deleted' ? res.body.data : null;
      },
      10_000,
      10,
    );
    expect(deleted.deleted_at).toEqual(expect.any(String));
    expect([...seen].every((s) => ['active', 'deleting', 'deleted'].includes(s))).toBe(true);

    // During the retention period the object is still there, held by the finalizer.
    const held = await getJson('cpvpn', 'office-link');
    expect(held.metadata.deletionTimestamp).toEqual(expect.any(String));
    expect(held.metadata.finalizers).toEqual(['cloudplane.dev/finalizer']);

    // Then it is destroyed, the finalizer removed, and the object and its key are gone.
    await eventually(
      async () => {
        const err = await kubectl('get', 'cpvpn', 'office-link', '-n', namespace).then(
          () => null,
          (e: Error) => e,
        );
        return err && /NotFound/.test(err.message);
      },
      RETENTION_SECONDS * 1000 + 15_000,
      100,
    );
    expect((await t.api('GET', `/api/v1/vpn-gateways/${id}`)).status).toBe(404);
    await expect(kubectl('get', 'secret', `vpn-psk-${id.replace('_', '-')}`, '-n', namespace)).rejects.toThrow(/NotFound/);
  });

  test('no kind, plural or short name of ours collides with a built-in resource', async () => {
    const lines = (await kubectl('api-resources')).trimEnd().split('\n');
    // A tabwriter table: slice each row at the header's column starts (SHORTNAMES may be empty).
    const header = lines[0];
    const starts = ['NAME', 'SHORTNAMES', 'APIVERSION', 'NAMESPACED', 'KIND'].map((column) => header.indexOf(column));
    const rows = lines.slice(1).map((line) => {
      const [name, shortNames, apiVersion, , kind] = starts.map((start, i) => line.slice(start, starts[i + 1]).trim());
      return { name, shortNames: shortNames ? shortNames.split(',') : [], apiVersion, kind };
    });
    const ours = rows.filter((r) => r.apiVersion.startsWith('cloudplane.dev/'));
    const builtIn = rows.filter((r) => !r.apiVersion.startsWith('cloudplane.dev/'));
    expect(builtIn.length).toBeGreaterThan(40);
    expect(ours.map((r) => r.kind).sort()).toEqual(families.map((f) => f.kind).sort());

    const taken = new Set(builtIn.flatMap((r) => [r.name, r.kind.toLowerCase(), ...r.shortNames]));
    for (const family of families) {
      const row = ours.find((r) => r.kind === family.kind)!;
      expect(row.shortNames).toEqual(family.shortNames);
      for (const word of [family.plural, family.kind.toLowerCase(), ...family.shortNames]) expect(taken.has(word)).toBe(false);
    }
  });
});

/**
 * Kills this test's kube-apiserver (a child of this process, found by its port) with
 * SIGKILL: the harness's stopApiServer sends SIGTERM, and kube-apiserver then waits about
 * a minute for the service's open watches to drain. A crash is also the harsher case.
 */
async function killApiServer(): Promise<void> {
  const port = new URL(cluster.url).port;
  const pid = fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .find((entry) => {
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
        const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
        return parent === process.pid && args.includes('--secure-port') && args[args.indexOf('--secure-port') + 1] === port;
      } catch {
        return false; // gone meanwhile
      }
    });
  if (!pid) throw new Error(`no kube-apiserver child on port ${port}`);
  process.kill(Number(pid), 'SIGKILL');
  await eventually(async () => !fs.existsSync(`/proc/${pid}`) || /\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')), 10_000, 20);
  await cluster.stopApiServer(); // the harness notices the exit (a no-op kill once it has)
}

// Last: it takes the API server away from under the service.
describe('the operator across an API server restart', () => {
  test('reads stay served (stale), writes answer 503, and a kubectl change right after the restart reaches the API', async () => {
    const created = await t.api('POST', '/api/v1/servers', { name: 'survivor', region: 'fra1' });
    expect(created.status).toBe(201);
    const id: string = created.body.data.id;
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running');
    expect((await t.api('GET', `/api/v1/servers/${id}`)).body.meta.persistence).toBe('synced');

    await killApiServer();
    const stale = await eventually(
      async () => {
        const res = await t.api('GET', `/api/v1/servers/${id}`);
        return res.status === 200 && res.body.meta.persistence === 'stale' ? res : null;
      },
      20_000,
      100,
    );
    expect(stale.body.data.name).toBe('survivor');
    const refused = await t.api('POST', '/api/v1/object-storage', { name: 'while-down', region: 'fra1' });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('persistence_unavailable');

    await cluster.startApiServer();
    // kubectl writes at once, before the operator has necessarily noticed the server is back.
    await kubectl('patch', 'cpsvr', id.replace('_', '-'), '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { name: 'renamed-by-kubectl' } }));
    const renamed = await eventually(
      async () => {
        const res = await t.api('GET', `/api/v1/servers/${id}`);
        return res.body.data?.name === 'renamed-by-kubectl' && res.body.meta.persistence === 'synced' ? res : null;
      },
      30_000,
      100,
    );
    expect(renamed.status).toBe(200);

    // Writes work again.
    const bucket = await eventually(
      async () => {
        const res = await t.api('POST', '/api/v1/object-storage', { name: 'after-restart', region: 'fra1' });
        return res.status === 201 ? res : null;
      },
      15_000,
      200,
    );
    await waitForStatus(t, `/api/v1/object-storage/${bucket.body.data.id}`, 'available');
  });
});
