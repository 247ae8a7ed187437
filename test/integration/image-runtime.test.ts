/**
 * The service on the Node.js line the image ships (the Dockerfile's `FROM node:<major>`),
 * which may differ from the node running the tests: started as `make run` starts it, it
 * serves a load balancer with a server behind it, records the audit trail, and keeps both
 * across a restart on the same data directory.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startChildService, ChildService } from '../helpers/child-service';
import { eventually, tempDataDir, waitForStatus } from '../helpers/service';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'cpk_ImageRuntimeTestKey0123456789abcdefXYZ';
const ENV = { CLOUDPLANE_SIM_DELAY_MS: '50' };

/** Every Node.js major the Dockerfile's stages are built FROM; they must be one line. */
function imageNodeMajors(): string[] {
  const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  return [...new Set([...dockerfile.matchAll(/^FROM node:(\d+)[-\w.]*/gm)].map((m) => m[1]))];
}

describe("the service on the image's Node.js line", () => {
  let node: string;
  let version: string;
  const dataDir = tempDataDir();
  const running: ChildService[] = [];
  const start = async () => {
    const svc = await startChildService({ dataDir, key: KEY, env: ENV, node, startTimeoutMs: 60_000 });
    running.push(svc);
    return svc;
  };

  beforeAll(async () => {
    const majors = imageNodeMajors();
    expect(majors).toHaveLength(1);
    node = (await promisify(execFile)(path.join(ROOT, 'scripts/ensure-node.sh'), [majors[0]], { encoding: 'utf8' })).stdout.trim();
    version = (await promisify(execFile)(node, ['--version'], { encoding: 'utf8' })).stdout.trim();
    expect(version.startsWith(`v${majors[0]}.`)).toBe(true);
  }, 300_000);

  afterAll(async () => {
    for (const svc of running) await svc.kill();
  });

  it('serves, reconciles and audits, and keeps it all across a restart', async () => {
    const first = await start();
    const server = (await first.api('POST', '/api/v1/servers', { name: 'app-1', region: 'fra1' })).body.data;
    const balancer = (await first.api('POST', '/api/v1/load-balancers', { name: 'web', region: 'fra1' })).body.data;
    await waitForStatus(first, `/api/v1/servers/${server.id}`, 'running', 30_000);
    await waitForStatus(first, `/api/v1/load-balancers/${balancer.id}`, 'running', 30_000);
    expect((await first.api('POST', `/api/v1/load-balancers/${balancer.id}/attach`, { server_id: server.id })).status).toBe(200);
    const audited = async (svc: ChildService) => (await svc.api('GET', '/api/v1/audit-log?limit=100')).body.data.map((event: { type: string }) => event.type);
    const before = await eventually(async () => {
      const types = await audited(first);
      return types.includes('load_balancer.running') && types.includes('server.running') && types;
    }, 30_000);
    expect(before).toEqual(expect.arrayContaining(['server.created', 'server.running', 'load_balancer.created', 'load_balancer.running']));
    expect(await first.stop()).toBe(0);

    const second = await start();
    const after = await waitForStatus(second, `/api/v1/load-balancers/${balancer.id}`, 'running', 30_000);
    expect(after.backends.map((backend: { server_id: string }) => backend.server_id)).toEqual([server.id]);
    expect(await audited(second)).toEqual(expect.arrayContaining(before));
  });
});
