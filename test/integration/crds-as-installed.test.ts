/**
 * The CRDs as users install them: `kubectl apply -f crds/` with the real kubectl (which
 * reads YAML 1.1) into a real kube-apiserver + etcd, not created from the generator's JSON.
 * Every CRD must pass the API server's structural-schema validation and be Established;
 * then every manifest in examples/, applied with `kubectl apply -f`, must be accepted and
 * reach its ready state (examples/README.md) with the operator running on the Kubernetes
 * store against that API server. The data planes are the simulated drivers, as in
 * kubectl.test.ts: this API server has no nodes, controller manager or storage backend
 * (the real drivers have their own cluster tests: cluster-drivers, server-pods,
 * file-shares-cluster, s3-bucket-driver, load-balancer-haproxy). The API server checks
 * every status write, so each condition the controllers wrote there passed
 * metav1.Condition's schema.
 */
import fs from 'node:fs';
import { allCrds } from '../../src/resources/crd';
import { CRD_FILES_DIR, storeEnvFor } from '../helpers/cluster';
import { EXAMPLES, EXAMPLES_BY_FILE, exampleFiles } from '../helpers/examples';
import { KubeApiServer, kubectlOn, startKubeApiServer } from '../helpers/kube-apiserver';
import { eventually, startTestService, TestService } from '../helpers/service';

jest.setTimeout(180_000);

let cluster: KubeApiServer;
let t: TestService | undefined;
const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);
const crdFiles = () => fs.readdirSync(CRD_FILES_DIR).filter((f) => f.endsWith('.yaml'));

beforeAll(async () => {
  cluster = await startKubeApiServer();
});

afterAll(async () => {
  await t?.stop();
  await cluster?.stop();
});

describe('CRDs installed with kubectl apply -f crds/', () => {
  test('every CRD file applies, passes structural-schema validation and is Established', async () => {
    const out = await kubectl('apply', '-f', CRD_FILES_DIR);
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(crdFiles().length);
    for (const line of lines) expect(line).toMatch(/^customresourcedefinition\.apiextensions\.k8s\.io\/\S+ created$/);

    const names = allCrds()
      .map((crd) => crd.metadata.name)
      .sort();
    const conditionsOf = async () => {
      // name, Established, NonStructuralSchema (empty when absent), one line per CRD.
      const text = await kubectl(
        'get',
        'crd',
        ...names,
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.conditions[?(@.type=="Established")].status}{"\\t"}{.status.conditions[?(@.type=="NonStructuralSchema")].status}{"\\n"}{end}',
      );
      return text
        .trim()
        .split('\n')
        .map((line) => line.split('\t'));
    };
    const rows = await eventually(
      async () => {
        const current = await conditionsOf();
        return current.length === names.length && current.every(([, established]) => established === 'True') ? current : null;
      },
      30_000,
      200,
    );
    expect(rows.map(([name, established, nonStructural]) => [name, established, nonStructural ?? ''])).toEqual(names.map((name) => [name, 'True', '']));
  });

  test('the installed servers CRD offers the power states as strings, as the API does', async () => {
    const enumText = await kubectl(
      'get',
      'crd',
      'servers.cloudplane.dev',
      '-o',
      'jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.power_state.enum}',
    );
    expect(JSON.parse(enumText)).toEqual(['on', 'off']);
  });

  test('kubectl apply -f examples/ is accepted, and each object reaches its ready state with Ready=True', async () => {
    t = await startTestService({
      ...storeEnvFor(cluster),
      CLOUDPLANE_SIM_DELAY_MS: '50',
      // The waits below poll the API server, not the service; this lifts nothing they rely on.
      CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
    });
    const namespace = t.teamId.replace('_', '-');
    await kubectl('create', 'namespace', namespace).catch((err: Error) => {
      if (!/AlreadyExists/.test(err.message)) throw err;
    });

    expect(EXAMPLES_BY_FILE.map((e) => e.file).sort()).toEqual(exampleFiles().sort());
    const out = await kubectl('apply', '-n', namespace, '-f', EXAMPLES);
    for (const example of EXAMPLES_BY_FILE) expect(out).toContain(`/${example.name} created`);

    const settled = await Promise.all(
      EXAMPLES_BY_FILE.map((example) =>
        eventually(
          async () => {
            const object = JSON.parse(await kubectl('get', example.short, example.name, '-n', namespace, '-o', 'json'));
            const ready = object.status?.conditions?.find((c: { type: string }) => c.type === 'Ready');
            return object.status?.status === example.ready && ready?.status === 'True' ? object : null;
          },
          60_000,
          250,
        ),
      ),
    );
    for (const object of settled) {
      // One condition per type, each complete, as the CRD's metav1.Condition schema requires.
      const types = object.status.conditions.map((c: { type: string }) => c.type);
      expect(new Set(types).size).toBe(types.length);
      for (const condition of object.status.conditions) {
        expect(condition).toEqual(
          expect.objectContaining({
            type: expect.any(String),
            status: expect.stringMatching(/^(True|False|Unknown)$/),
            reason: expect.stringMatching(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
            message: expect.any(String),
            lastTransitionTime: expect.any(String),
          }),
        );
      }
    }
    // The server was applied with power_state "on" and runs.
    expect(settled[EXAMPLES_BY_FILE.findIndex((e) => e.file === 'server.yaml')].spec.power_state).toBe('on');
  });
});
