/**
 * Alert policies and incidents: a policy's condition over the team's resources fires
 * (alert.triggered) and opens an incident, which a person acknowledges and resolves, or
 * which resolves with its alert (alert.resolved). Every alert.* and incident.* event is
 * received at a real receiver; runs on both stores.
 */
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { eventually, startTestService, TestService } from '../helpers/service';
import { eventsOf, receiversOfThisFile, Receiver } from '../helpers/receiver';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { clusterFor, clusterMode, kubeConfigOf } from '../helpers/cluster';
import { newId } from '../../src/lib/ids';
import { eventCatalog } from '../../src/events/catalog';
import { alertThreadId } from '../../src/agent/alert-feed';

const ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  // File shares always fail to provision and tunnels are always down here, so resource_failed and tunnel_down have something to see.
  CLOUDPLANE_SIM_FAILURES: 'file_share=1,tunnel=1',
};
const POLICIES = '/api/v1/alert-policies';
const INCIDENTS = '/api/v1/incidents';
const ALL_TYPES = [
  'alert.created',
  'alert.updated',
  'alert.triggered',
  'alert.resolved',
  'alert.deleted',
  'incident.opened',
  'incident.acknowledged',
  'incident.resolved',
];

describe('alert policies and incidents', () => {
  const receiver = receiversOfThisFile();
  let t: TestService;
  let hook: Receiver;
  let readOnly: string;
  beforeAll(async () => {
    t = await startTestService(ENV);
    hook = await receiver();
    expect((await t.api('POST', '/api/v1/webhooks', { url: hook.url, events: ['alert.*', 'incident.*'] })).status).toBe(201);
    const key = await t.api('POST', '/api/v1/settings/api-keys', { name: 'reader', scope: 'read_only' });
    readOnly = key.body.data.key;
  });
  afterAll(async () => t.stop());

  const created = async (url: string, body: unknown): Promise<any> => {
    const res = await t.api('POST', url, body);
    expect([res.status, res.body.error]).toEqual([201, undefined]);
    return res.body.data;
  };
  /** Polled four times a second: a test's requests count against the key's 1000 a minute. */
  const reaches = (url: string, status: string) =>
    eventually(
      async () => {
        const res = await t.api('GET', url);
        return res.status === 200 && res.body.data.status === status ? res.body.data : null;
      },
      30_000,
      250,
    );
  const received = (type: string, id: string) => eventsOf(hook).filter((e) => e.type === type && e.data.id === id);
  const incidentsOf = async (policyId: string, status?: string): Promise<any[]> =>
    (await t.api('GET', `${INCIDENTS}?limit=100${status ? `&status=${status}` : ''}`)).body.data.filter((i: any) => i.policy_id === policyId);
  const openIncident = (policyId: string) => eventually(async () => (await incidentsOf(policyId, 'open'))[0], 30_000, 250);
  const refused = async (body: unknown, fields: string[]) => {
    const res = await t.api('POST', POLICIES, body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.map((d: any) => d.field)).toEqual(expect.arrayContaining(fields));
  };

  it("refuses a condition that breaks its type's rules, naming the field", async () => {
    await refused({ name: 'x', condition: { type: 'cpu_high' } }, ['condition.type']);
    await refused({ name: 'bad', condition: { type: 'job_failed', for_minutes: 5 } }, ['condition.for_minutes']);
    await refused({ name: 'bad', condition: { type: 'tunnel_down', resource_id: 'lb_0123456789abcdef' } }, ['condition.resource_id']);
    await refused({ name: 'bad', condition: { type: 'backend_unhealthy', for_minutes: 1, for_seconds: 5 } }, ['condition.for_seconds']);
    await refused({ name: 'bad', condition: { type: 'backend_unhealthy', family: 'server' } }, ['condition.family']);
    await refused({ name: 'bad', condition: { type: 'resource_failed', family: 'server', resource_id: 'lb_0123456789abcdef' } }, ['condition.resource_id']);
    await refused({ name: 'bad', condition: { type: 'backend_unhealthy', for_minutes: 100000 } }, ['condition.for_minutes']);
    await refused({ name: 'bad', condition: { type: 'backend_unhealthy', colour: 'red' } }, ['condition.colour']);
    await refused({ name: 'bad' }, ['condition']);
    const fine = await created(POLICIES, { name: 'any lb', condition: { type: 'backend_unhealthy', for_minutes: 5 } });
    expect(fine).toMatchObject({ status: 'ok', enabled: true, condition: { type: 'backend_unhealthy', for_minutes: 5 }, targets: [], last_transition: null });
    const patched = await t.api('PATCH', `${POLICIES}/${fine.id}`, { condition: { type: 'job_failed', for_seconds: 3 } });
    expect([patched.status, patched.body.error.details]).toEqual([422, [{ field: 'condition.for_seconds', message: expect.any(String) }]]);
    expect((await t.api('GET', `${POLICIES}/alp_0123456789abcdefgh`)).body.error.code).toBe('alert_not_found');
    expect((await t.api('GET', `${INCIDENTS}/inc_0123456789abcdefgh`)).body.error.code).toBe('incident_not_found');
    expect((await t.api('GET', `${INCIDENTS}?status=burning`)).status).toBe(422);
    expect((await t.api('DELETE', `${POLICIES}/${fine.id}`)).status).toBe(200);
  });

  it("opens an incident for a load balancer's unhealthy backend, which is acknowledged and resolved", async () => {
    const server = await created('/api/v1/servers', { name: 'alert-svr', region: 'fra1' });
    await reaches(`/api/v1/servers/${server.id}`, 'running');
    const lb = await created('/api/v1/load-balancers', { name: 'alert-lb', region: 'fra1' });
    await reaches(`/api/v1/load-balancers/${lb.id}`, 'running');
    expect((await t.api('POST', `/api/v1/load-balancers/${lb.id}/attach`, { server_id: server.id })).status).toBe(200);
    await eventually(async () => (await t.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.data.backends[0]?.status === 'healthy', 30_000, 250);

    const policy = await created(POLICIES, { name: 'lb down', condition: { type: 'backend_unhealthy', resource_id: lb.id, for_seconds: 1 } });
    expect(policy).toMatchObject({ status: 'ok', condition: { type: 'backend_unhealthy', resource_id: lb.id, for_seconds: 1 } });
    // A viewer's key reads, and writes nothing.
    const asReader = { key: readOnly };
    expect((await t.api('GET', `${POLICIES}/${policy.id}`, undefined, asReader)).status).toBe(200);
    expect((await t.api('POST', POLICIES, { name: 'nope', condition: { type: 'job_failed' } }, asReader)).status).toBe(403);
    expect((await t.api('PATCH', `${POLICIES}/${policy.id}`, { name: 'nope' }, asReader)).status).toBe(403);
    expect((await t.api('DELETE', `${POLICIES}/${policy.id}`, undefined, asReader)).status).toBe(403);

    // The server stops: its backend fails its health check, and after the policy's second the alert fires.
    expect((await t.api('POST', `/api/v1/servers/${server.id}/stop`)).status).toBe(200);
    const incident = await openIncident(policy.id);
    expect(incident).toMatchObject({ status: 'open', resource_id: lb.id, condition_type: 'backend_unhealthy', acknowledged_at: null, resolved_at: null });
    expect(incident.title).toContain(server.id);
    const triggered = (await t.api('GET', `${POLICIES}/${policy.id}`)).body.data;
    expect(triggered).toMatchObject({ status: 'triggered', targets: [{ resource_id: lb.id, state: 'firing', incident_id: incident.id }] });
    expect(triggered.last_transition).toMatchObject({ resource_id: lb.id, change: 'triggered', incident_id: incident.id });
    expect((await t.api('GET', `${INCIDENTS}/${incident.id}`)).body.data).toEqual(incident);

    expect((await t.api('POST', `${INCIDENTS}/${incident.id}/acknowledge`, undefined, asReader)).status).toBe(403);
    const acked = await t.api('POST', `${INCIDENTS}/${incident.id}/acknowledge`);
    expect([acked.status, acked.body.data?.status]).toEqual([200, 'acknowledged']);
    expect(acked.body.data.acknowledged_by).toMatch(/^(key|usr)_/);
    // Again: nothing changes.
    expect((await t.api('POST', `${INCIDENTS}/${incident.id}/acknowledge`)).body.data).toMatchObject({
      status: 'acknowledged',
      acknowledged_at: acked.body.data.acknowledged_at,
    });
    const resolved = await t.api('POST', `${INCIDENTS}/${incident.id}/resolve`);
    expect([resolved.status, resolved.body.data?.status]).toEqual([200, 'resolved']);
    expect(resolved.body.data.resolved_by).toBe(acked.body.data.acknowledged_by);
    const late = await t.api('POST', `${INCIDENTS}/${incident.id}/acknowledge`);
    expect([late.status, late.body.error?.code]).toEqual([409, 'invalid_state']);
    expect((await t.api('POST', `${INCIDENTS}/${incident.id}/resolve`)).body.error.code).toBe('invalid_state');

    // Resolved by hand while the backend is still down: the alert goes on firing, with no second incident.
    expect((await t.api('GET', `${POLICIES}/${policy.id}`)).body.data.status).toBe('triggered');
    expect(await incidentsOf(policy.id, 'open')).toEqual([]);

    // The server is back: the alert resolves.
    expect((await t.api('POST', `/api/v1/servers/${server.id}/start`)).status).toBe(200);
    await eventually(async () => received('alert.resolved', policy.id).length > 0, 30_000, 250);
    expect((await t.api('GET', `${POLICIES}/${policy.id}`)).body.data).toMatchObject({
      status: 'ok',
      targets: [],
      last_transition: { resource_id: lb.id, change: 'resolved', incident_id: incident.id },
    });

    // It fires again: a new incident, which resolves by itself when the backend recovers.
    expect((await t.api('POST', `/api/v1/servers/${server.id}/stop`)).status).toBe(200);
    const second = await openIncident(policy.id);
    expect(second.id).not.toBe(incident.id);
    expect((await t.api('POST', `/api/v1/servers/${server.id}/start`)).status).toBe(200);
    const closed = await reaches(`${INCIDENTS}/${second.id}`, 'resolved');
    expect(closed).toMatchObject({ resolved_by: 'system', acknowledged_at: null });

    expect((await t.api('PATCH', `${POLICIES}/${policy.id}`, { name: 'lb backend down' })).body.data.name).toBe('lb backend down');
    await eventually(async () => received('alert.updated', policy.id).length > 0, 30_000, 250);
    expect((await t.api('DELETE', `${POLICIES}/${policy.id}`)).body.data.status).toBe('deleted');

    // Every alert and incident event reached the receiver, in order, with data valid by the catalog.
    await eventually(async () => received('alert.deleted', policy.id).length > 0 && received('incident.resolved', second.id).length > 0, 30_000, 250);
    const policyEvents = eventsOf(hook)
      .filter((e) => e.data.id === policy.id)
      .map((e) => e.type);
    expect(policyEvents).toEqual(['alert.created', 'alert.triggered', 'alert.resolved', 'alert.triggered', 'alert.resolved', 'alert.updated', 'alert.deleted']);
    expect(
      eventsOf(hook)
        .filter((e) => e.data.id === incident.id)
        .map((e) => e.type),
    ).toEqual(['incident.opened', 'incident.acknowledged', 'incident.resolved']);
    expect(
      eventsOf(hook)
        .filter((e) => e.data.id === second.id)
        .map((e) => e.type),
    ).toEqual(['incident.opened', 'incident.resolved']);
    // Cause before effect: each alert.triggered was published before the incident.opened it caused.
    const published: Array<{ type: string; data: { id: string } }> = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: typeof published; meta: { next_cursor: string | null } } } = await t.api(
        'GET',
        `/api/v1/audit-log?order=asc&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      published.push(...page.body.data);
      cursor = page.body.meta.next_cursor;
    } while (cursor);
    const causes = published.filter((e) => ['alert.triggered', 'incident.opened'].includes(e.type) && [policy.id, incident.id, second.id].includes(e.data.id));
    expect(causes.map((e) => e.type)).toEqual(['alert.triggered', 'incident.opened', 'alert.triggered', 'incident.opened']);
    const types = new Set(eventsOf(hook).map((e) => e.type));
    expect(ALL_TYPES.filter((type) => !types.has(type))).toEqual([]);
    const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
    for (const event of eventsOf(hook)) {
      const entry = eventCatalog().find((e) => e.type === event.type);
      expect(entry).toBeDefined();
      const validate = ajv.compile(JSON.parse(JSON.stringify(entry!.data_schema)));
      expect([event.type, validate(event.data), ajv.errorsText(validate.errors)]).toEqual([event.type, true, 'No errors']);
    }
  });

  it('fires for a failed job, resolved with its incident; a failed resource; a tunnel down; a disabled webhook', async () => {
    const jobs = await created(POLICIES, { name: 'jobs', condition: { type: 'job_failed' } });
    const shares = await created(POLICIES, { name: 'shares', condition: { type: 'resource_failed', family: 'file_share' } });
    const tunnels = await created(POLICIES, { name: 'tunnels', condition: { type: 'tunnel_down' } });
    const hooks = await created(POLICIES, { name: 'hooks', condition: { type: 'webhook_disabled' } });

    // A receiver that answers 410 Gone: the subscription is disabled at its first delivery (the job's).
    const gone = await receiver(() => ({ status: 410 }));
    const doomedHook = await created('/api/v1/webhooks', { url: gone.url, events: ['job.*'] });
    const job = await created('/api/v1/jobs', { name: 'broken', command: 'exit 3' });
    const share = await created('/api/v1/file-storage', { name: 'doomed', region: 'fra1' });
    const vpn = await created('/api/v1/vpn-gateways', {
      name: 'vpn-down',
      region: 'fra1',
      tunnel_type: 'ipsec',
      remote_network_cidr: '192.168.10.0/24',
      remote_peer_ip: '8.8.4.4',
    });

    const jobIncident = await openIncident(jobs.id);
    expect(jobIncident).toMatchObject({ resource_id: job.id, condition_type: 'job_failed' });
    expect(jobIncident.title).toContain('exit code 3');
    expect(await openIncident(shares.id)).toMatchObject({ resource_id: share.id, condition_type: 'resource_failed' });
    expect(await openIncident(tunnels.id)).toMatchObject({ resource_id: vpn.id, condition_type: 'tunnel_down' });
    expect(await openIncident(hooks.id)).toMatchObject({ resource_id: doomedHook.id, condition_type: 'webhook_disabled' });

    // A job's failure is an occurrence: resolving its incident resolves the alert, and it does not fire again.
    expect((await t.api('POST', `${INCIDENTS}/${jobIncident.id}/resolve`)).status).toBe(200);
    await eventually(async () => (await t.api('GET', `${POLICIES}/${jobs.id}`)).body.data.status === 'ok', 30_000, 250);
    await eventually(async () => received('alert.resolved', jobs.id).length === 1, 30_000, 250);
    expect(await incidentsOf(jobs.id)).toHaveLength(1);

    // Re-enabling the webhook clears its condition: the alert and its incident resolve.
    const hookIncident = (await incidentsOf(hooks.id, 'open'))[0];
    expect((await t.api('PATCH', `/api/v1/webhooks/${doomedHook.id}`, { active: true })).status).toBe(200);
    expect(await reaches(`${INCIDENTS}/${hookIncident.id}`, 'resolved')).toMatchObject({ resolved_by: 'system' });

    // Disabling a policy resolves what it fires for.
    const tunnelIncident = (await incidentsOf(tunnels.id, 'open'))[0];
    expect((await t.api('PATCH', `${POLICIES}/${tunnels.id}`, { enabled: false })).body.data.enabled).toBe(false);
    await reaches(`${INCIDENTS}/${tunnelIncident.id}`, 'resolved');
    expect((await t.api('GET', `${POLICIES}/${tunnels.id}`)).body.data).toMatchObject({ status: 'ok', targets: [] });
  });

  it("posts incidents to the team's Alerts thread and answers questions about them", async () => {
    const policy = await created(POLICIES, { name: 'agent jobs', condition: { type: 'job_failed' } });
    const job = await created('/api/v1/jobs', { name: 'agent-broken', command: 'exit 4' });
    const incident = await eventually(async () => (await incidentsOf(policy.id, 'open')).find((i) => i.resource_id === job.id), 30_000, 250);
    const thread = alertThreadId(t.teamId);
    const posted = await eventually(
      async () => {
        const messages = (await t.api('GET', `/api/v1/agent/threads/${thread}/messages?limit=100`)).body.data as any[];
        return messages.find((m) => m.content.includes(incident.id));
      },
      30_000,
      250,
    );
    expect(posted.role).toBe('event');
    expect(posted.content).toMatch(/Incident .* opened/);
    expect(posted.content).toContain(`POST /api/v1/incidents/${incident.id}/acknowledge`);

    const asked = await created('/api/v1/agent/threads', { title: 'on call' });
    const ask = async (content: string): Promise<string> => {
      const res = await t.api('POST', `/api/v1/agent/threads/${asked.id}/messages`, { content });
      expect(res.status).toBe(201);
      return res.body.data[1].content;
    };
    const answer = await ask('What incidents are open?');
    expect(answer).toContain(incident.id);
    expect(answer).toContain('open');
    expect(answer).toContain(`/api/v1/incidents/${incident.id}`);
    expect((await t.api('POST', `${INCIDENTS}/${incident.id}/resolve`)).status).toBe(200);
    expect(await ask('What incidents are open?')).not.toContain(incident.id);
  });

  it("takes in a policy made with kubectl, judged by the API's rules", async () => {
    /** As kubectl apply makes it: a custom resource without a status (on the embedded store, its equivalent). */
    const apply = async (name: string, spec: unknown): Promise<string> => {
      if (!clusterMode()) {
        const id = newId('alp');
        await t.service.ctx.store.create({ meta: { kind: 'AlertPolicy', id, team: t.teamId }, spec, status: {} });
        return id;
      }
      const custom = kubeConfigOf(await clusterFor(t.dataDir)).makeApiClient(CustomObjectsApi);
      const where = { group: 'cloudplane.dev', version: 'v1alpha1', namespace: t.teamId.replace('_', '-'), plural: 'alertpolicies' };
      await custom.createNamespacedCustomObject({ ...where, body: { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'AlertPolicy', metadata: { name }, spec } });
      return eventually(async () => ((await custom.getNamespacedCustomObject({ ...where, name })) as any).metadata.labels?.['cloudplane.dev/id'], 30_000, 250);
    };
    const refused = await apply('bad-policy', { name: 'kubectl bad', condition: { type: 'job_failed', for_minutes: 5 }, enabled: true });
    expect((await reaches(`${POLICIES}/${refused}`, 'failed')).status_reason).toMatch(
      /condition.for_minutes applies to backend_unhealthy and tunnel_down only/,
    );
    // One webhook that does not exist: the earlier tests' 410 receiver disables its subscription again at each job event.
    const condition = { type: 'webhook_disabled', resource_id: 'wh_0123456789abcdefgh' };
    const accepted = await apply('good-policy', { name: 'kubectl good', condition, enabled: true });
    expect(await reaches(`${POLICIES}/${accepted}`, 'ok')).toMatchObject({ name: 'kubectl good', condition, targets: [] });
    await eventually(async () => received('alert.created', accepted).length > 0, 30_000, 250);
  });
});
