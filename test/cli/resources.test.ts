/**
 * The CLI's API commands, run as the built CLI in child processes against one real
 * service: every family's list/get/create/update/delete and actions, --wait, the three
 * outputs, pagination, webhook deliveries with a real receiver, the agent, settings and
 * the audit log, and the API's errors with their exit codes. The first test holds the
 * command table to the OpenAPI document the service serves.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { startTestService, TestService, eventually } from '../helpers/service';
import { startReceiver, Receiver } from '../helpers/receiver';
import { allOperations, placeholdersOf } from '../../src/api/operations';
import { takesIfMatch } from '../../src/cli/api-commands';
import { boundCli, cliInTerminal, freshConfigPath, hasStackTrace } from './run-cli';

const WEBHOOK_ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  // The 15 attempts of the retry schedule in well under a second or two.
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.0002',
  CLOUDPLANE_WEBHOOK_TIMEOUT_MS: '2000',
};

let t: TestService;
let run: ReturnType<typeof boundCli>['run'];
let json: ReturnType<typeof boundCli>['json'];
beforeAll(async () => {
  // The simulation API on, so that the document has every operation a command runs.
  t = await startTestService({ ...WEBHOOK_ENV, CLOUDPLANE_SIMULATION_API: 'true' });
  ({ run, json } = boundCli(t.url, t.key));
});
afterAll(async () => t.stop());

/** The API's own view of a resource, to compare the CLI's output with. */
const apiData = async (path: string) => (await t.api('GET', `/api/v1${path}`)).body.data;

describe('the command table and the OpenAPI document', () => {
  it('every command is an operation of the document with the same fields, and every operation has a command', async () => {
    const doc = (await t.api('GET', '/api/v1/openapi.json')).body;
    const shape = (path: string) => path.replace(/\{[^}]+\}/g, '{}');
    const operations = new Map<string, any>();
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        if (operation?.responses) operations.set(`${method.toUpperCase()} ${shape(path)}`, operation);
      }
    }
    const covered = new Set<string>();
    for (const command of allOperations()) {
      const key = `${command.method} ${shape(`/api/v1${command.path}`)}`;
      const operation = operations.get(key);
      expect({ command: command.command.join(' '), found: Boolean(operation) }).toEqual({ command: command.command.join(' '), found: true });
      covered.add(key);
      const bodyFields = Object.keys(operation.requestBody?.content?.['application/json']?.schema?.properties ?? {}).sort();
      expect({ key, body: Object.keys(command.body?.properties ?? {}).sort() }).toEqual({ key, body: bodyFields });
      // A watch's parameters are not flags: the CLI follows watches through --wait (test/cli/wait.test.ts).
      const queryFields = (operation.parameters ?? [])
        .filter((p: any) => p.in === 'query' && p.name !== 'watch' && p.name !== 'timeout_seconds')
        .map((p: any) => p.name)
        .sort();
      expect({ key, query: Object.keys(command.query?.properties ?? {}).sort() }).toEqual({ key, query: queryFields });
      expect(placeholdersOf(command.path)).toHaveLength((shape(command.path).match(/\{\}/g) ?? []).length);
      // --show-version where the answer names the version (ETag), --if-match where the change takes it.
      const success = Object.entries<any>(operation.responses).find(([status]) => status.startsWith('2'))?.[1];
      const tagged = Object.keys(success?.headers ?? {}).includes('ETag');
      const takes = (operation.parameters ?? []).some((p: any) => p.in === 'header' && p.name === 'if-match');
      expect({ key, versioned: Boolean(command.versioned), ifMatch: takesIfMatch(command) }).toEqual({ key, versioned: tagged, ifMatch: takes });
    }
    // The session routes of the console's sign-in are for browsers, not this CLI; neither
    // is anything outside the API (the console's files, sign-in redirects). The listener's
    // three operations are the protocol `cloudplane listen` speaks (test/cli/listen.test.ts).
    const listenProtocol = new Set(['POST /api/v1/webhooks/listeners', 'GET /api/v1/webhooks/{}/stream', 'POST /api/v1/webhooks/{}/deliveries/{}/answer']);
    // The MCP endpoint is the protocol `cloudplane mcp` speaks, whose tools are these very operations (test/api/mcp.test.ts).
    listenProtocol.add('POST /api/v1/mcp');
    const missing = [...operations.keys()].filter(
      (key) => !covered.has(key) && !listenProtocol.has(key) && / \/api\/v1\//.test(key) && !/ \/api\/v1\/session\b/.test(key),
    );
    expect(missing).toEqual([]);
  });
});

describe('the simulation API', () => {
  it('adds a fault that fails the next create --wait, lists it until it is used up, and clears the rest', async () => {
    const added = await json(['simulation', 'faults', 'add', '--family', 'server', '--operation', 'provision', '--error', 'no capacity', '--count', '2']);
    expect(added).toMatchObject({ family: 'server', operation: 'provision', remaining: 2, error: 'no capacity' });
    const failed = await run(['servers', 'create', '--name', 'cli-doomed', '--region', 'fra1', '--wait']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/Provisioning failed: no capacity/);
    const listed = await run(['simulation', 'faults', 'list']);
    expect(listed.stdout).toMatch(new RegExp(`^${added.id}\\s+server\\s+provision\\s+1\\s+no capacity\\s+-$`, 'm'));
    const cleared = await run(['simulation', 'faults', 'clear']);
    expect(cleared.code).toBe(0);
    expect(cleared.stderr).toMatch(/^Done: simulation faults clear\.$/m);
    expect(await json(['simulation', 'faults', 'list'])).toEqual([]);
  });
});

describe('families', () => {
  it('load balancers and servers: create --wait, get, update, attach/detach, power actions, delete', async () => {
    const lb = await json(['load-balancers', 'create', '--name', 'cli-web', '--region', 'fra1', '--port', '8080', '--sticky-sessions', '--wait']);
    expect(lb).toMatchObject({ name: 'cli-web', status: 'running', port: 8080, sticky_sessions: true });
    // json prints the API's data exactly.
    expect(await json(['load-balancers', 'get', lb.id])).toEqual(await apiData(`/load-balancers/${lb.id}`));

    // A dry run says so, waits for nothing and changes nothing.
    const tried = await run(['load-balancers', 'update', lb.id, '--port', '9999', '--dry-run', '--wait', '-o', 'json']);
    expect(tried.code).toBe(0);
    expect(tried.stderr).toMatch(/^Dry run: nothing was changed/m);
    expect(JSON.parse(tried.stdout)).toMatchObject({ id: lb.id, port: 9999 });
    expect((await apiData(`/load-balancers/${lb.id}`)).port).toBe(8080);
    const triedCreate = await json(['load-balancers', 'create', '--name', 'cli-tried', '--region', 'fra1', '--dry-run']);
    expect(triedCreate).toMatchObject({ name: 'cli-tried', status: 'creating' });
    expect((await t.api('GET', `/api/v1/load-balancers/${triedCreate.id}`)).status).toBe(404);

    const updated = await run(['load-balancers', 'update', lb.id, '--port', '8443', '--sticky-sessions', 'false', '-o', 'yaml']);
    expect(updated.code).toBe(0);
    expect(YAML.parse(updated.stdout)).toMatchObject({ id: lb.id, port: 8443, sticky_sessions: false });

    const server = await json(['servers', 'create', '--name', 'cli-svr', '--region', 'fra1', '--wait']);
    expect(server.status).toBe('running');
    const attached = await json(['load-balancers', 'attach', lb.id, '--server-id', server.id]);
    expect(attached.backends).toEqual([expect.objectContaining({ server_id: server.id, port: 8443 })]);
    const again = await run(['load-balancers', 'attach', lb.id, '--server-id', server.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^Error: backend_already_attached: /);
    const table = await run(['load-balancers', 'get', lb.id]);
    expect(table.stdout.split('\n')[0].split(/\s+/)).toEqual(['ID', 'NAME', 'STATUS', 'REGION', 'PROTOCOL', 'PORT', 'IPV4', 'BACKENDS']);
    expect(table.stdout).toMatch(new RegExp(`^${lb.id}\\s+cli-web\\s+running\\s+fra1\\s+http\\s+8443\\s+\\S+\\s+${server.id}$`, 'm'));
    // The traffic counters, live: json prints the API's answer, the table its counters (a simulated load balancer passes none).
    const stats = await json(['load-balancers', 'stats', lb.id]);
    expect(stats).toMatchObject({ sessions_total: 0, bytes_in: 0, bytes_out: 0, instances: 0, backends: [{ server_id: server.id, port: 8443 }] });
    const statsTable = await run(['load-balancers', 'stats', lb.id]);
    expect(statsTable.stdout.split('\n')[0].split(/\s+/)).toEqual(['SESSIONS_TOTAL', 'CURRENT_SESSIONS', 'BYTES_IN', 'BYTES_OUT', 'INSTANCES', 'OBSERVED_AT']);
    expect(statsTable.stdout.split('\n')[1]).toMatch(/^0\s+0\s+0\s+0\s+0\s+\d{4}-\d\d-\d\dT/);
    // Why it is ready: its conditions as a table; and a pass asked for now, once per 10 s.
    const described = await run(['load-balancers', 'describe', lb.id]);
    expect(described.code).toBe(0);
    const describedLines = described.stdout.trim().split('\n');
    expect(describedLines[0].split(/\s+/)).toEqual(['TYPE', 'STATUS', 'REASON', 'MESSAGE', 'LAST_TRANSITION_TIME']);
    expect(describedLines.slice(1).map((line) => line.split(/\s+/).slice(0, 3))).toContainEqual(['Ready', 'True', 'Running']);
    expect(await json(['load-balancers', 'reconcile', lb.id])).toMatchObject({ id: lb.id, status: 'running' });
    const tooSoon = await run(['load-balancers', 'reconcile', lb.id]);
    expect([tooSoon.code, tooSoon.stderr]).toEqual([5, expect.stringMatching(/^Error: rate_limit_exceeded: .*\(retry after \d+ s\)/)]);
    // A detached backend drains for a grace period before it goes.
    const detached = await json(['load-balancers', 'detach', lb.id, '--server-id', server.id]);
    expect(detached.backends.filter((b: any) => b.status !== 'draining')).toEqual([]);

    expect(await json(['servers', 'stop', server.id, '--wait'])).toMatchObject({ status: 'stopped' });
    expect(await json(['servers', 'start', server.id, '--wait'])).toMatchObject({ status: 'running' });
    expect(await json(['servers', 'reboot', server.id, '--wait'])).toMatchObject({ status: 'running' });
    expect(await json(['servers', 'update', server.id, '--name', 'cli-svr-2'])).toMatchObject({ name: 'cli-svr-2' });

    expect(await json(['load-balancers', 'delete', lb.id])).toMatchObject({ status: 'deleted' });
    expect((await json(['load-balancers', 'list', '--status', 'deleted'])).map((r: any) => r.id)).toContain(lb.id);
    expect(await json(['servers', 'delete', server.id, '--wait'])).toMatchObject({ status: 'deleted' });
    // About thirty CLI processes one after another, each a Node start: on a loaded CI machine
    // that took past the default 60 s once.
  }, 180_000);

  it('--wait shows a spinner on a terminal, and nothing on stderr otherwise', async () => {
    const quiet = await run(['servers', 'create', '--name', 'quiet-svr', '--region', 'fra1', '--wait']);
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
    expect(quiet.stdout).toMatch(/^svr_\w+\s+quiet-svr\s+running\s/m);
    const env = { CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: t.key, CLOUDPLANE_CONFIG: freshConfigPath() };
    const shown = await cliInTerminal(['servers', 'create', '--name', 'tty-svr', '--region', 'fra1', '--wait'], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/⠋ svr_\w+: creating -> running/);
    expect(shown.stdout).toMatch(/\x1b\[2K/);
    expect(shown.stdout).toMatch(/svr_\w+\s+tty-svr\s+running\s/);
  });

  it('VPN gateways: create from a YAML body on stdin, tunnel status, key rotation, background delete --wait', async () => {
    const body =
      'name: cli-vpn\nregion: fra1\ntunnel_type: ipsec\nremote_network_cidr: 10.50.0.0/16\nremote_peer_ip: 93.184.216.34\npre_shared_key: first-secret-key-0123456789\n';
    const created = await run(['vpn-gateways', 'create', '-f', '-', '--name', 'cli-vpn-flag', '--wait', '-o', 'json'], { input: body });
    expect(created.code).toBe(0);
    expect(created.stdout).not.toContain('first-secret-key');
    const vpn = JSON.parse(created.stdout);
    // Flags override the file's fields.
    expect(vpn).toMatchObject({ name: 'cli-vpn-flag', status: 'active', remote_peer_ip: '93.184.216.34' });
    expect(await json(['vpn-gateways', 'status', vpn.id])).toHaveProperty('tunnel_status');
    expect(await json(['vpn-gateways', 'update', vpn.id, '--pre-shared-key', 'second-secret-key-0123456789', '--wait'])).toMatchObject({
      id: vpn.id,
      status: 'active',
    });
    const deleted = await json(['vpn-gateways', 'delete', vpn.id, '--wait']);
    expect(deleted).toMatchObject({ id: vpn.id, status: 'deleted' });
  });

  it('object storage and file storage: create, update, attach a share to a server, --force delete', async () => {
    const bucket = await json(['object-storage', 'create', '--name', 'cli-bucket', '--region', 'fra1', '--wait']);
    expect(bucket).toMatchObject({ status: 'available', public: false });
    expect(await json(['object-storage', 'update', bucket.id, '--public'])).toMatchObject({ public: true });
    expect(await json(['object-storage', 'delete', bucket.id, '--force'])).toMatchObject({ status: 'deleted' });

    const share = await json(['file-storage', 'create', '--name', 'cli-share', '--region', 'fra1', '--size-gb', '20', '--wait']);
    expect(share).toMatchObject({ status: 'available', size_gb: 20 });
    expect(await json(['file-storage', 'update', share.id, '--size-gb', '40'])).toMatchObject({ size_gb: 40 });
    const server = await json(['servers', 'create', '--name', 'cli-mount', '--region', 'fra1', '--wait']);
    const mounted = await json(['file-storage', 'attach', share.id, '--server-id', server.id, '--wait']);
    expect(mounted).toMatchObject({ id: server.id, status: 'running' });
    expect(JSON.stringify(mounted.mounts)).toContain(share.id);
    const busy = await run(['file-storage', 'delete', share.id]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/^Error: resource_busy: /);
    expect(JSON.stringify((await json(['file-storage', 'detach', share.id, '--server-id', server.id, '--wait'])).mounts)).not.toContain(share.id);
    expect(await json(['file-storage', 'delete', share.id])).toMatchObject({ status: 'deleted' });
  });

  it('Kubernetes clusters: create --wait, kubeconfig printed and written 0600, node pools, upgrade --wait, rotate', async () => {
    const pools = JSON.stringify([{ name: 'workers', size: 's-2vcpu-4gb', count: 2 }]);
    const cluster = await json([
      'kubernetes-clusters',
      'create',
      '--name',
      'cli-k8s',
      '--region',
      'fra1',
      '--version',
      '1.33',
      '--node-pools',
      pools,
      '--wait',
    ]);
    expect(cluster).toMatchObject({ status: 'running', version: '1.33', node_pools: [{ name: 'workers', ready_nodes: 2 }] });

    const printed = await run(['kubernetes-clusters', 'kubeconfig', cluster.id]);
    expect(printed.code).toBe(0);
    const kubeconfig = YAML.parse(printed.stdout);
    expect(kubeconfig).toMatchObject({ kind: 'Config', clusters: [{ cluster: { server: cluster.endpoint } }] });
    expect(await json(['kubernetes-clusters', 'kubeconfig', cluster.id])).toEqual(kubeconfig);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cli-kubeconfig-')), 'config.yaml');
    const written = await run(['kubernetes-clusters', 'kubeconfig', cluster.id, '--output-file', file]);
    expect([written.code, written.stdout, written.stderr.trim()]).toEqual([0, '', `Wrote ${file}.`]);
    expect(fs.readFileSync(file, 'utf8')).toBe(printed.stdout);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    const added = await run(['kubernetes-clusters', 'node-pools', 'create', cluster.id, '--name', 'gpu', '--size', 's-8vcpu-16gb', '--count', '1']);
    expect(added.code).toBe(0);
    expect(added.stdout.split('\n')[0].split(/\s+/)).toEqual(['NAME', 'SIZE', 'COUNT', 'READY_NODES', 'AUTO_SCALE']);
    expect(await json(['kubernetes-clusters', 'node-pools', 'update', cluster.id, 'gpu', '--count', '3'])).toMatchObject({ name: 'gpu', count: 3 });
    expect((await json(['kubernetes-clusters', 'node-pools', 'list', cluster.id])).map((p: { name: string }) => p.name)).toEqual(['workers', 'gpu']);
    const deleted = await run(['kubernetes-clusters', 'node-pools', 'delete', cluster.id, 'gpu']);
    expect([deleted.code, deleted.stderr.trim()]).toEqual([0, `Done: kubernetes-clusters node-pools delete ${cluster.id} gpu.`]);
    const last = await run(['kubernetes-clusters', 'node-pools', 'delete', cluster.id, 'workers']);
    expect([last.code, last.stderr]).toEqual([1, expect.stringMatching(/^Error: invalid_state: /)]);

    expect(await json(['kubernetes-clusters', 'upgrade', cluster.id, '--version', '1.34', '--wait'])).toMatchObject({ status: 'running', version: '1.34' });
    expect(await json(['kubernetes-clusters', 'rotate-kubeconfig', cluster.id, '--wait'])).toMatchObject({ id: cluster.id, status: 'running' });
    const rotated = YAML.parse((await run(['kubernetes-clusters', 'kubeconfig', cluster.id])).stdout);
    expect(rotated.users[0].user.token).not.toBe(kubeconfig.users[0].user.token);

    const missing = await run(['kubernetes-clusters', 'kubeconfig', 'k8s_00000000000000000000']);
    expect([missing.code, missing.stderr]).toEqual([3, expect.stringMatching(/^Error: kubernetes_cluster_not_found: /)]);
  });

  it('jobs: --wait completed, a failed job and a wait that times out, cancel', async () => {
    expect(await json(['jobs', 'create', '--name', 'cli-ok', '--command', 'echo hello', '--wait'])).toMatchObject({ status: 'completed', exit_code: 0 });
    const failing = await run(['jobs', 'create', '--name', 'cli-fails', '--command', 'exit 3', '--wait']);
    expect(failing.code).toBe(1);
    expect(failing.stderr).toMatch(/^Error: wait_failed: job_\w+ is failed: the command exited with code 3; it will not become completed or scheduled\n$/);

    const slow = await run(['jobs', 'create', '--name', 'cli-slow', '--command', 'sleep 600', '--wait', '--wait-timeout', '1', '-o', 'json']);
    expect(slow.code).toBe(6);
    expect(slow.stderr).toMatch(
      /^Error: wait_timeout: (job_\w+) is still (queued|running) after \d+ s; it did not become completed or scheduled \(--wait-timeout\)\n$/,
    );
    const id = /(job_\w+)/.exec(slow.stderr)![1];
    expect(await json(['jobs', 'cancel', id])).toMatchObject({ id, status: 'cancelled' });
    const twice = await run(['jobs', 'cancel', id]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/^Error: invalid_state: /);
    // Jobs have no DELETE, so no delete command.
    expect((await run(['jobs', 'delete', id])).code).toBe(2);
  });

  it('jobs: create --schedule --wait ends once the job is scheduled, its steady state (it never completes)', async () => {
    const created = await run([
      'jobs',
      'create',
      '--name',
      'cli-nightly',
      '--command',
      'echo tick',
      '--schedule',
      '0 3 * * *',
      '--timezone',
      'Europe/Berlin',
      '--wait',
      '--wait-timeout',
      '15',
      '-o',
      'json',
    ]);
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' });
    const job = JSON.parse(created.stdout);
    expect(job).toMatchObject({ status: 'scheduled', schedule: '0 3 * * *', timezone: 'Europe/Berlin', exit_code: null });
    // The answer comes before the controller has looked at the schedule; it then shows the next time.
    await eventually(async () => (await json(['jobs', 'get', job.id])).next_run_at !== null);
    expect(await json(['jobs', 'cancel', job.id])).toMatchObject({ id: job.id, status: 'cancelled' });
  });
});

describe('outputs and lists', () => {
  it('list --watch prints the resources, then each change as it happens, as a table or one JSON line per event', async () => {
    const before = await json(['file-storage', 'create', '--name', 'watched-before', '--region', 'fra1', '--wait']);
    const watching = run(['file-storage', 'list', '--watch', '--watch-timeout', '6']);
    const lines = () => watching.then((r) => r.stdout.trim().split('\n'));
    // The new share comes while the watch is open (its first rows, then the change).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const made = await json(['file-storage', 'create', '--name', 'watched-new', '--region', 'fra1']);
    const table = await lines();
    expect((await watching).code).toBe(0);
    expect(table[0].split(/\s+/).slice(0, 4)).toEqual(['EVENT', 'ID', 'NAME', 'STATUS']);
    expect(table).toContainEqual(expect.stringMatching(new RegExp(`^ADDED\\s+${before.id}\\s+watched-before\\s+available`)));
    expect(table).toContainEqual(expect.stringMatching(new RegExp(`^ADDED\\s+${made.id}\\s+watched-new\\s+creating`)));
    expect(table).toContainEqual(expect.stringMatching(new RegExp(`^MODIFIED\\s+${made.id}\\s+watched-new\\s+available`)));

    const asJson = await run(['file-storage', 'list', '--watch', '--watch-timeout', '2', '-o', 'json']);
    const events = asJson.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events).toContainEqual({ type: 'added', object: await apiData(`/file-storage/${made.id}`) });

    const paged = await run(['file-storage', 'list', '--watch', '--limit', '5']);
    expect([paged.code, paged.stderr]).toEqual([2, expect.stringMatching(/--watch takes no --limit/)]);
  });

  it('json and yaml are the API data; table has the columns; --limit pages and --all walks every page', async () => {
    for (const name of ['page-a', 'page-b', 'page-c']) await json(['object-storage', 'create', '--name', name, '--region', 'ams3']);
    // Compared with what the CLI prints next: the buckets first settle (none still creating), so the data holds still.
    const everything = await eventually(async () => {
      const data = (await t.api('GET', '/api/v1/object-storage?limit=100')).body.data as Array<{ status: string }>;
      return data.every((bucket) => bucket.status !== 'creating') ? data : null;
    }, 30_000);
    expect(await json(['object-storage', 'list', '--all', '--limit', '1'])).toEqual(everything);
    const yaml = await run(['object-storage', 'list', '-o', 'yaml']);
    expect(YAML.parse(yaml.stdout)).toEqual(everything);

    const onePage = await run(['object-storage', 'list', '--limit', '1', '-o', 'json']);
    expect(JSON.parse(onePage.stdout)).toEqual([everything[0]]);
    const cursor = /--cursor (\S+),/.exec(onePage.stderr)![1];
    expect(await json(['object-storage', 'list', '--limit', '1', '--cursor', cursor])).toEqual([everything[1]]);

    const table = await run(['object-storage', 'list', '--sort', 'name', '--order', 'asc']);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0].split(/\s+/)).toEqual(['ID', 'NAME', 'STATUS', 'REGION', 'PUBLIC', 'ENDPOINT']);
    const names = lines.slice(1).map((line) => line.split(/\s+/)[1]);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['page-a', 'page-b', 'page-c']));
  });
});

describe('errors', () => {
  it('shows the API code, message and fields, with exit codes by kind', async () => {
    const invalid = await run(['load-balancers', 'create', '--name', 'bad-port', '--region', 'fra1', '--port', '70000']);
    expect(invalid).toMatchObject({ code: 1, stdout: '', stderr: 'Error: validation_failed: port: must be <= 65535\n' });
    const fields = await run(['load-balancers', 'create', '--port', '70000']);
    expect(fields.code).toBe(1);
    expect(fields.stderr.trim().split('\n')).toEqual(
      expect.arrayContaining(['Error: validation_failed: name: is required', 'Error: validation_failed: port: must be <= 65535']),
    );
    const missing = await run(['vpn-gateways', 'get', 'vpn_doesnotexist000000']);
    expect(missing).toMatchObject({ code: 3, stderr: 'Error: vpn_gateway_not_found: No vpn gateway with id vpn_doesnotexist000000.\n' });
    const reader = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'reader', scope: 'read_only' })).body.data.key as string;
    const notAdmin = await run(['servers', 'create', '--name', 'nope', '--region', 'fra1'], { env: { CLOUDPLANE_API_KEY: reader } });
    expect(notAdmin.code).toBe(4);
    expect(notAdmin.stderr).toMatch(/^Error: forbidden: /);
    const badKey = await run(['servers', 'list'], { env: { CLOUDPLANE_API_KEY: 'cpk_0000000000000000000000000000000000' } });
    expect(badKey.code).toBe(4);
    expect(badKey.stderr).toMatch(/^Error: unauthorized: /);
    for (const r of [invalid, fields, missing, notAdmin, badKey]) expect(hasStackTrace(r.stderr)).toBe(false);
  });

  it('changes a resource only at the version --if-match names; get --show-version prints it', async () => {
    const lb = await json(['load-balancers', 'create', '--name', 'versioned', '--region', 'fra1', '--wait']);
    const version = async () => {
      const shown = await run(['load-balancers', 'get', lb.id, '--show-version']);
      expect(shown.code).toBe(0);
      return /^Version: ("[^"]+")/m.exec(shown.stderr)![1];
    };
    const stale = await version();
    expect((await t.api('PATCH', `/api/v1/load-balancers/${lb.id}`, { health_check_path: '/changed-elsewhere' })).status).toBe(200);
    const refused = await run(['load-balancers', 'update', lb.id, '--health-check-path', '/mine', '--if-match', stale]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Error: precondition_failed: The load balancer changed since the version If-Match names/);
    expect((await apiData(`/load-balancers/${lb.id}`)).health_check_path).toBe('/changed-elsewhere');
    // At the version just read it goes through (read again if the service itself wrote in between).
    await eventually(
      async () => (await run(['load-balancers', 'update', lb.id, '--health-check-path', '/mine', '--if-match', await version()])).code === 0,
      20_000,
    );
    expect((await apiData(`/load-balancers/${lb.id}`)).health_check_path).toBe('/mine');
  });
});

describe('webhooks', () => {
  let receiver: Receiver;
  afterAll(async () => receiver?.close());

  it('deliveries list --status failed, and retry against a receiver that fails, then succeeds', async () => {
    let healthy = false;
    receiver = await startReceiver(() => ({ status: healthy ? 200 : 500 }));
    const hook = await json(['webhooks', 'create', '--url', receiver.url, '--events', 'bucket.created', '--events', 'bucket.deleted']);
    expect(hook).toMatchObject({ url: receiver.url, events: ['bucket.created', 'bucket.deleted'], status: 'active' });
    expect(hook.secret).toMatch(/^whsec_/);
    await json(['object-storage', 'create', '--name', 'hooked', '--region', 'fra1']);

    const failed = await eventually(
      async () => {
        const rows = await json(['webhooks', 'deliveries', 'list', hook.id, '--status', 'failed']);
        return rows.length === 1 ? rows[0] : null;
      },
      30_000,
      200,
    );
    expect(failed).toMatchObject({ webhook_id: hook.id, event_type: 'bucket.created', status: 'failed', attempt: '15/15', response_status: 500 });
    const table = await run(['webhooks', 'deliveries', 'list', hook.id, '--status', 'failed']);
    expect(table.stdout).toMatch(new RegExp(`^${failed.id}\\s+bucket\\.created\\s+failed\\s+15/15\\s+500\\s+`, 'm'));
    // The subscription's table says its endpoint is failing now.
    const subscriptions = await run(['webhooks', 'get', hook.id]);
    expect(subscriptions.stdout.split('\n')[0].split(/\s+/)).toContain('ENDPOINT_HEALTH');
    expect(subscriptions.stdout).toMatch(new RegExp(`^${hook.id}\\s+\\S+\\s+active\\s+\\S+\\s+failing\\s+15\\s+`, 'm'));

    healthy = true;
    const retried = await json(['webhooks', 'deliveries', 'retry', hook.id, failed.id]);
    expect(retried).toMatchObject({ id: failed.id, status: 'pending' });
    const succeeded = await eventually(
      async () => {
        const delivery = await json(['webhooks', 'deliveries', 'get', hook.id, failed.id]);
        return delivery.status === 'succeeded' ? delivery : null;
      },
      20_000,
      200,
    );
    expect(succeeded).toMatchObject({ attempt: '16/15', response_status: 200 });
    expect(succeeded.attempts).toHaveLength(16);
    expect(succeeded.attempts[15]).toMatchObject({ attempt: 16, response_status: 200, response_body: 'ok', error: null });

    expect(await json(['webhooks', 'deliveries', 'list', hook.id, '--status', 'failed'])).toEqual([]);
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(failed.id);
    const ping = await json(['webhooks', 'ping', hook.id]);
    expect(ping).toMatchObject({ webhook_id: hook.id, event_type: 'webhook.ping', status: 'pending' });
    await eventually(async () => receiver.received.find((r) => r.headers['webhook-id'] === ping.id), 20_000, 200);
    const teamWide = await json(['webhook-deliveries', 'list', '--subscription-id', hook.id, '--event-type', 'bucket.created']);
    expect(teamWide.map((d: any) => d.id)).toEqual([failed.id]);
    expect(await json(['webhook-deliveries', 'list', '--status', 'failed'])).toEqual([]);
    expect(await json(['webhooks', 'recover', hook.id, '--since', '2000-01-01T00:00:00Z', '--until', new Date().toISOString()])).toEqual([]);

    const rotated = await json(['webhooks', 'rotate-secret', hook.id]);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(hook.secret);
    expect(await json(['webhooks', 'update', hook.id, '--active', 'false', '--filter', '{"bucket.region":"fra1"}'])).toMatchObject({
      active: false,
      filter: { 'bucket.region': 'fra1' },
    });
    expect(await json(['webhooks', 'delete', hook.id])).toMatchObject({ status: 'deleted' });
  });
});

describe('agent, settings and audit log', () => {
  it('agent threads: create, ask, read, message, list', async () => {
    const thread = await json(['agent', 'threads', 'create', '--title', 'capacity']);
    const asked = await run(['agent', 'threads', 'ask', thread.id, 'How many servers do I have?']);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toMatch(/^msg_\w+\s+user\s+.*How many servers do I have\?$/m);
    expect(asked.stdout).toMatch(/^msg_\w+\s+assistant\s+/m);
    const messages = await json(['agent', 'threads', 'read', thread.id]);
    expect(messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
    expect(await json(['agent', 'threads', 'message', thread.id, messages[1].id])).toEqual(messages[1]);
    expect(await json(['agent', 'threads', 'get', thread.id])).toMatchObject({ title: 'capacity', message_count: 2 });
    expect((await json(['agent', 'threads', 'list'])).map((x: any) => x.id)).toContain(thread.id);
  });

  it('settings: profile, team, members, API keys shown once and revoked', async () => {
    expect(await json(['settings', 'profile', 'update', '--name', 'Owner Person'])).toMatchObject({ name: 'Owner Person' });
    expect(await json(['settings', 'team', 'update', '--name', 'CLI team'])).toMatchObject({ id: t.teamId, name: 'CLI team' });
    expect(await json(['settings', 'team', 'get'])).toMatchObject({ name: 'CLI team' });
    const member = await json(['settings', 'members', 'invite', '--email', 'dev@example.com', '--role', 'member']);
    expect(member).toMatchObject({ email: 'dev@example.com', role: 'member', status: 'active' });
    expect(await json(['settings', 'members', 'update', member.id, '--role', 'viewer'])).toMatchObject({ role: 'viewer' });
    expect((await json(['settings', 'members', 'list'])).map((m: any) => m.email)).toEqual(expect.arrayContaining(['owner@example.com', 'dev@example.com']));
    expect(await json(['settings', 'members', 'get', member.id])).toMatchObject({ id: member.id });
    expect(await json(['settings', 'members', 'remove', member.id])).toMatchObject({ status: 'removed' });

    const created = await run(['settings', 'api-keys', 'create', '--name', 'ci-key', '--scope', 'read_only']);
    expect(created.code).toBe(0);
    const token = /(cpk_\w+)/.exec(created.stdout)![1];
    const keyId = /^(key_\w+)/m.exec(created.stdout)![1];
    expect(created.stdout.split('\n')[0].split(/\s+/)).toEqual(['ID', 'NAME', 'SCOPE', 'EXPIRES_AT', 'KEY']);
    const listed = await run(['settings', 'api-keys', 'list']);
    expect(listed.stdout).toContain(keyId);
    expect(listed.stdout).not.toContain(token);
    expect((await run(['regions', 'list'], { env: { CLOUDPLANE_API_KEY: token } })).code).toBe(0);
    const rotated = await json(['settings', 'api-keys', 'rotate', keyId]);
    expect(rotated).toMatchObject({ name: 'ci-key', scope: 'read_only', status: 'active' });
    expect((await run(['regions', 'list'], { env: { CLOUDPLANE_API_KEY: token } })).code).toBe(4);
    expect((await run(['regions', 'list'], { env: { CLOUDPLANE_API_KEY: rotated.key } })).code).toBe(0);
    const revoked = await run(['settings', 'api-keys', 'revoke', rotated.id]);
    expect(revoked).toMatchObject({ code: 0, stdout: '' });
    expect((await run(['regions', 'list'], { env: { CLOUDPLANE_API_KEY: rotated.key } })).code).toBe(4);
  });

  it('teams (the first team is the installation admin), audit-log search, regions and event types', async () => {
    expect((await json(['teams', 'list'])).map((team: any) => team.id)).toContain(t.teamId);
    expect(await json(['teams', 'get', t.teamId])).toMatchObject({ id: t.teamId });
    const bucket = await json(['object-storage', 'create', '--name', 'audited', '--region', 'lon1', '--wait']);
    expect(await json(['audit-log', 'search', '--type', 'object_storage.*', '--all'])).toEqual([]);
    const bucketEvents = await eventually(async () => {
      const found = await json(['audit-log', 'search', '--type', 'bucket.*', '--q', 'audited', '--all']);
      return found.some((e: any) => e.type === 'bucket.available') ? found : null;
    });
    expect(bucketEvents.every((e: any) => e.type.startsWith('bucket.') && e.data.id === bucket.id)).toBe(true);
    // The table names the resource and who acted, by name.
    const table = await run(['audit-log', 'search', '--type', 'bucket.created', '--resource-id', bucket.id]);
    expect(table.stdout.split('\n')[0].split(/\s+/)).toEqual(['CREATED_AT', 'TYPE', 'RESOURCE_ID', 'RESOURCE_NAME', 'ACTOR_NAME']);
    expect(table.stdout).toMatch(new RegExp(`bucket\\.created\\s+${bucket.id}\\s+audited\\s+\\S.*\\(.+\\)$`, 'm'));
    const bad = await run(['audit-log', 'search', '--since', 'yesterday']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^Error: validation_failed: since: /);
    // Usage reads as a row per metric; json is the API's answer.
    const usage = await run(['usage', 'get']);
    const usageLines = usage.stdout.trim().split('\n');
    expect(usageLines[0].split(/\s+/)).toEqual(['METRIC', 'PLAN', 'QUANTITY', 'UNIT', 'RESOURCES', 'SINCE', 'UNTIL']);
    expect(usageLines[1]).toMatch(/^resource_hours\s+-\s+[\d.]+\s+hours\s+-\s+\S+Z\s+\S+Z$/);
    expect(usageLines.some((line) => /^bucket_hours\s+\S+\s+[\d.]+\s+hours\s+\d+\s/.test(line))).toBe(true);
    expect(usageLines.at(-1)).toMatch(/^api_requests\s+-\s+\d+\s+requests\s/);
    expect(await json(['usage', 'get'])).toMatchObject({ api_requests: { unit: 'requests' }, resource_hours: { unit: 'hours' } });
    expect((await json(['regions', 'list'])).map((r: any) => r.id)).toContain('fra1');
    const serverTypes = await json(['event-types', 'list', '--category', 'server']);
    expect(serverTypes.map((e: any) => e.type)).toContain('server.running');
    expect(serverTypes.every((e: any) => e.category === 'server' && e.data_schema.properties.region)).toBe(true);
  });
});
