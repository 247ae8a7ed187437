/**
 * The served OpenAPI document is a valid OpenAPI 3 document, lists every /api/v1 route
 * the service registers, and documents a success response for every operation, so a
 * client generated from it can reach the whole API.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import Fastify from 'fastify';
import { requireOperationIds } from '../../src/api/plugins/openapi-links';
import { startTestService, TestService } from '../helpers/service';

interface RegisteredRoute {
  method: string;
  url: string;
}

/** Words generators put before a model's name for helpers of their own: New<Model>(), Nullable<Model>. */
const GENERATOR_PREFIXES = /^(New|Nullable)[A-Z]/;

const ROUTE_LINE = /^([│ ]*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?$/;

/** Reads Fastify's route tree (printRoutes without common prefixes) back into method + URL pairs. */
function registeredRoutes(tree: string): RegisteredRoute[] {
  const parents: string[] = [];
  const routes: RegisteredRoute[] = [];
  for (const line of tree.split('\n')) {
    const match = ROUTE_LINE.exec(line.trimEnd());
    if (!match) continue;
    const depth = match[1].length / 4;
    parents.length = depth;
    const url = (parents[depth - 1] ?? '') + match[2];
    parents[depth] = url;
    for (const method of (match[3] ?? '')
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean))
      routes.push({ method, url });
  }
  return routes;
}

/** `/api/v1/servers/:id/stop` -> `/api/v1/servers/{id}/stop`, the OpenAPI spelling. */
function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

describe('GET /api/v1/openapi.json', () => {
  let svc: TestService;
  let document: any;

  beforeAll(async () => {
    svc = await startTestService();
    const response = await svc.api('GET', '/api/v1/openapi.json', undefined, { key: null });
    expect(response.status).toBe(200);
    document = response.body;
  });

  afterAll(async () => {
    await svc.stop();
  });

  it('is a valid OpenAPI 3 document', async () => {
    expect(document.openapi).toMatch(/^3\./);
    // validate() dereferences in place: give it a copy so the other checks see the served document.
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeDefined();
  });

  it('is checked by a validator that does reject a broken document', async () => {
    const broken = structuredClone(document);
    const [firstPath] = Object.keys(broken.paths);
    broken.paths[firstPath].get = { responses: 'none' };
    await expect(SwaggerParser.validate(broken)).rejects.toThrow();
  });

  it('lists every route registered under /api/v1', () => {
    const routes = registeredRoutes(svc.service.app.printRoutes({ commonPrefix: false }))
      .filter((route) => route.url.startsWith('/api/v1/') && route.url !== '/api/v1/openapi.json')
      .filter((route) => route.method !== 'HEAD'); // Fastify adds HEAD to every GET by itself.

    // The tree was read back correctly: Fastify knows every route parsed from it, and there are many.
    expect(routes.length).toBeGreaterThan(30);
    for (const route of routes) expect(svc.service.app.hasRoute({ method: route.method as 'GET', url: route.url })).toBe(true);

    const missing = routes
      .filter((route) => !document.paths?.[openApiPath(route.url)]?.[route.method.toLowerCase()])
      .map((route) => `${route.method} ${openApiPath(route.url)}`);
    expect(missing).toEqual([]);
  });

  it('names the families in proper plurals ("List alert policies", never "policys")', () => {
    const summaries: string[] = [];
    for (const item of Object.values<Record<string, any>>(document.paths))
      for (const operation of Object.values<any>(item)) if (typeof operation?.summary === 'string') summaries.push(operation.summary);
    expect(summaries).toContain('List alert policies');
    expect(summaries.filter((s) => /[^aeiou]ys\b/.test(s))).toEqual([]);
  });

  it('documents at least one 2xx response for every operation', () => {
    const methods = new Set(['get', 'put', 'post', 'patch', 'delete', 'options', 'head', 'trace']);
    const withoutSuccess: string[] = [];
    let operations = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!methods.has(method)) continue;
        operations += 1;
        const codes = Object.keys(operation.responses ?? {});
        if (!codes.some((code) => /^2(\d\d|XX)$/.test(code))) withoutSuccess.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(operations).toBeGreaterThan(30);
    expect(withoutSuccess).toEqual([]);
  });
  describe('operationIds and links', () => {
    const methods = ['get', 'put', 'post', 'patch', 'delete'];
    const operations = () =>
      Object.entries<Record<string, any>>(document.paths).flatMap(([path, item]) =>
        methods.filter((m) => item[m]).map((method) => ({ method, path, operation: item[method] })),
      );

    it('gives every operation a unique operationId', () => {
      const ids = operations().map((o) => o.operation.operationId);
      expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
      expect(new Set(ids).size).toBe(ids.length);
    });

    // The names generated clients give their methods: a verb and the record, as a person would write them.
    it('names every operation as a person would', () => {
      const named = Object.fromEntries(operations().map((o) => [`${o.method.toUpperCase()} ${o.path}`, o.operation.operationId]));
      expect(named).toEqual({
        'GET /api/v1/load-balancers': 'listLoadBalancers',
        'POST /api/v1/load-balancers': 'createLoadBalancer',
        'POST /api/v1/mcp': 'sendMcpMessage',
        'GET /api/v1/load-balancers/{id}': 'getLoadBalancer',
        'GET /api/v1/load-balancers/{id}/stats': 'getLoadBalancerStats',
        'PATCH /api/v1/load-balancers/{id}': 'updateLoadBalancer',
        'DELETE /api/v1/load-balancers/{id}': 'deleteLoadBalancer',
        'POST /api/v1/load-balancers/{id}/attach': 'attachLoadBalancerBackend',
        'POST /api/v1/load-balancers/{id}/detach': 'detachLoadBalancerBackend',
        'POST /api/v1/load-balancers/{id}/reconcile': 'reconcileLoadBalancer',
        'GET /api/v1/vpn-gateways': 'listVpnGateways',
        'POST /api/v1/vpn-gateways': 'createVpnGateway',
        'GET /api/v1/vpn-gateways/{id}': 'getVpnGateway',
        'PATCH /api/v1/vpn-gateways/{id}': 'updateVpnGateway',
        'DELETE /api/v1/vpn-gateways/{id}': 'deleteVpnGateway',
        'POST /api/v1/vpn-gateways/{id}/reconcile': 'reconcileVpnGateway',
        'GET /api/v1/vpn-gateways/{id}/status': 'getVpnTunnelStatus',
        'GET /api/v1/servers': 'listServers',
        'POST /api/v1/servers': 'createServer',
        'GET /api/v1/servers/{id}': 'getServer',
        'PATCH /api/v1/servers/{id}': 'updateServer',
        'DELETE /api/v1/servers/{id}': 'deleteServer',
        'POST /api/v1/servers/{id}/stop': 'stopServer',
        'POST /api/v1/servers/{id}/start': 'startServer',
        'POST /api/v1/servers/{id}/reboot': 'rebootServer',
        'POST /api/v1/servers/{id}/reconcile': 'reconcileServer',
        'POST /api/v1/servers/{id}/backups': 'createServerBackup',
        'GET /api/v1/servers/{id}/backups': 'listServerBackups',
        'GET /api/v1/servers/{id}/backups/{backup_id}': 'getServerBackup',
        'DELETE /api/v1/servers/{id}/backups/{backup_id}': 'deleteServerBackup',
        'POST /api/v1/servers/{id}/restore': 'restoreServer',
        'GET /api/v1/object-storage': 'listBuckets',
        'POST /api/v1/object-storage': 'createBucket',
        'GET /api/v1/object-storage/{id}': 'getBucket',
        'PATCH /api/v1/object-storage/{id}': 'updateBucket',
        'DELETE /api/v1/object-storage/{id}': 'deleteBucket',
        'POST /api/v1/object-storage/{id}/reconcile': 'reconcileBucket',
        'GET /api/v1/file-storage': 'listFileShares',
        'POST /api/v1/file-storage': 'createFileShare',
        'GET /api/v1/file-storage/{id}': 'getFileShare',
        'PATCH /api/v1/file-storage/{id}': 'updateFileShare',
        'DELETE /api/v1/file-storage/{id}': 'deleteFileShare',
        'POST /api/v1/file-storage/{id}/reconcile': 'reconcileFileShare',
        'POST /api/v1/file-storage/{id}/attach': 'attachFileShare',
        'POST /api/v1/file-storage/{id}/detach': 'detachFileShare',
        'GET /api/v1/databases': 'listDatabases',
        'POST /api/v1/databases': 'createDatabase',
        'GET /api/v1/databases/{id}': 'getDatabase',
        'DELETE /api/v1/databases/{id}': 'deleteDatabase',
        'POST /api/v1/databases/{id}/reconcile': 'reconcileDatabase',
        'POST /api/v1/databases/{id}/reset-password': 'resetDatabasePassword',
        'PATCH /api/v1/databases/{id}': 'updateDatabase',
        'GET /api/v1/databases/{id}/users': 'listDatabaseUsers',
        'POST /api/v1/databases/{id}/users': 'createDatabaseUser',
        'GET /api/v1/databases/{id}/users/{name}': 'getDatabaseUser',
        'DELETE /api/v1/databases/{id}/users/{name}': 'deleteDatabaseUser',
        'POST /api/v1/databases/{id}/users/{name}/reset-password': 'resetDatabaseUserPassword',
        'GET /api/v1/databases/{id}/dbs': 'listDatabaseDbs',
        'POST /api/v1/databases/{id}/dbs': 'createDatabaseDb',
        'GET /api/v1/databases/{id}/dbs/{name}': 'getDatabaseDb',
        'DELETE /api/v1/databases/{id}/dbs/{name}': 'deleteDatabaseDb',
        'POST /api/v1/databases/{id}/backups': 'createDatabaseBackup',
        'GET /api/v1/databases/{id}/backups': 'listDatabaseBackups',
        'GET /api/v1/databases/{id}/backups/{backup_id}': 'getDatabaseBackup',
        'DELETE /api/v1/databases/{id}/backups/{backup_id}': 'deleteDatabaseBackup',
        'GET /api/v1/kubernetes-clusters': 'listKubernetesClusters',
        'POST /api/v1/kubernetes-clusters': 'createKubernetesCluster',
        'GET /api/v1/kubernetes-clusters/{id}': 'getKubernetesCluster',
        'DELETE /api/v1/kubernetes-clusters/{id}': 'deleteKubernetesCluster',
        'POST /api/v1/kubernetes-clusters/{id}/reconcile': 'reconcileKubernetesCluster',
        'GET /api/v1/kubernetes-clusters/{id}/kubeconfig': 'getKubernetesClusterKubeconfig',
        'POST /api/v1/kubernetes-clusters/{id}/kubeconfig/rotate': 'rotateKubernetesClusterKubeconfig',
        'POST /api/v1/kubernetes-clusters/{id}/upgrade': 'upgradeKubernetesCluster',
        'GET /api/v1/kubernetes-clusters/{id}/node-pools': 'listKubernetesClusterNodePools',
        'POST /api/v1/kubernetes-clusters/{id}/node-pools': 'createKubernetesClusterNodePool',
        'GET /api/v1/kubernetes-clusters/{id}/node-pools/{pool_name}': 'getKubernetesClusterNodePool',
        'PATCH /api/v1/kubernetes-clusters/{id}/node-pools/{pool_name}': 'updateKubernetesClusterNodePool',
        'DELETE /api/v1/kubernetes-clusters/{id}/node-pools/{pool_name}': 'deleteKubernetesClusterNodePool',
        'GET /api/v1/jobs': 'listJobs',
        'POST /api/v1/jobs': 'createJob',
        'GET /api/v1/jobs/{id}': 'getJob',
        'POST /api/v1/jobs/{id}/cancel': 'cancelJob',
        'GET /api/v1/jobs/{id}/runs': 'listJobRuns',
        'GET /api/v1/jobs/{id}/logs': 'getJobLogs',
        'POST /api/v1/jobs/{id}/pause': 'pauseJob',
        'POST /api/v1/jobs/{id}/reconcile': 'reconcileJob',
        'POST /api/v1/jobs/{id}/resume': 'resumeJob',
        'GET /api/v1/jobs/{id}/runs/{run_id}': 'getJobRun',
        'GET /api/v1/regions': 'listRegions',
        'GET /api/v1/event-types': 'listEventTypes',
        'GET /api/v1/audit-log': 'listAuditEvents',
        'GET /api/v1/usage': 'getUsage',
        'GET /api/v1/usage/limits': 'getUsageLimits',
        'PUT /api/v1/usage/limits': 'updateUsageLimits',
        'GET /api/v1/settings/profile': 'getProfile',
        'PATCH /api/v1/settings/profile': 'updateProfile',
        'GET /api/v1/settings/team': 'getTeam',
        'PATCH /api/v1/settings/team': 'updateTeam',
        'GET /api/v1/settings/api-keys': 'listApiKeys',
        'POST /api/v1/settings/api-keys': 'createApiKey',
        'DELETE /api/v1/settings/api-keys/{id}': 'revokeApiKey',
        'POST /api/v1/settings/api-keys/{id}/rotate': 'rotateApiKey',
        'GET /api/v1/settings/team/members': 'listMembers',
        'POST /api/v1/settings/team/members': 'inviteMember',
        'GET /api/v1/settings/team/members/{id}': 'getMember',
        'PATCH /api/v1/settings/team/members/{id}': 'updateMember',
        'DELETE /api/v1/settings/team/members/{id}': 'removeMember',
        'GET /api/v1/teams': 'listTeams',
        'POST /api/v1/teams': 'createTeam',
        'GET /api/v1/teams/{id}': 'getTeamById',
        'GET /api/v1/agent/threads': 'listAgentThreads',
        'POST /api/v1/agent/threads': 'createAgentThread',
        'GET /api/v1/agent/threads/{id}': 'getAgentThread',
        'GET /api/v1/agent/threads/{id}/messages': 'listAgentThreadMessages',
        'POST /api/v1/agent/threads/{id}/messages': 'askAgent',
        'GET /api/v1/agent/threads/{id}/messages/{message_id}': 'getAgentThreadMessage',
        'GET /api/v1/webhooks': 'listWebhooks',
        'POST /api/v1/webhooks': 'createWebhook',
        'GET /api/v1/webhooks/{id}': 'getWebhook',
        'PATCH /api/v1/webhooks/{id}': 'updateWebhook',
        'DELETE /api/v1/webhooks/{id}': 'deleteWebhook',
        'POST /api/v1/webhooks/{id}/rotate-secret': 'rotateWebhookSecret',
        'GET /api/v1/webhooks/{id}/deliveries': 'listWebhookDeliveries',
        'GET /api/v1/webhooks/{id}/deliveries/{delivery_id}': 'getWebhookDelivery',
        'POST /api/v1/webhooks/{id}/deliveries/{delivery_id}/retry': 'retryWebhookDelivery',
        'POST /api/v1/webhooks/{id}/ping': 'pingWebhook',
        'POST /api/v1/webhooks/{id}/recover': 'recoverWebhook',
        'GET /api/v1/webhook-deliveries': 'listTeamWebhookDeliveries',
        'GET /api/v1/session': 'getSession',
        'PUT /api/v1/session': 'chooseSessionTeam',
        'DELETE /api/v1/session': 'deleteSession',
        'POST /api/v1/webhooks/listeners': 'createWebhookListener',
        'GET /api/v1/webhooks/{id}/stream': 'streamWebhookListener',
        'POST /api/v1/webhooks/{id}/deliveries/{delivery_id}/answer': 'answerWebhookListenerDelivery',
        'GET /api/v1/alert-policies': 'listAlertPolicies',
        'POST /api/v1/alert-policies': 'createAlertPolicy',
        'GET /api/v1/alert-policies/{id}': 'getAlertPolicy',
        'PATCH /api/v1/alert-policies/{id}': 'updateAlertPolicy',
        'DELETE /api/v1/alert-policies/{id}': 'deleteAlertPolicy',
        'GET /api/v1/incidents': 'listIncidents',
        'GET /api/v1/incidents/{id}': 'getIncident',
        'POST /api/v1/incidents/{id}/acknowledge': 'acknowledgeIncident',
        'POST /api/v1/incidents/{id}/resolve': 'resolveIncident',
      });
    });

    it('refuses to register a documented route that names no operationId', async () => {
      const app = Fastify();
      requireOperationIds(app);
      app.get('/named', { schema: { operationId: 'getNamed' } }, async () => 'ok');
      app.get('/hidden', { schema: { hide: true } }, async () => 'ok');
      expect(() => app.get('/unnamed', { schema: { summary: 'no name' } }, async () => 'ok')).toThrow(/GET \/unnamed .*no operationId/);
      await app.close();
    });

    it('links only to real operationIds, filling each of their path parameters', () => {
      const byId = new Map(operations().map((o) => [o.operation.operationId, o]));
      const broken: string[] = [];
      let links = 0;
      for (const { method, path, operation } of operations()) {
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          for (const [name, link] of Object.entries<any>(response.links ?? {})) {
            links += 1;
            const target = byId.get(link.operationId);
            const needed = [...(target?.path ?? '').matchAll(/\{([^}]+)\}/g)].map((m) => `path.${m[1]}`).sort();
            if (!target || JSON.stringify(Object.keys(link.parameters).sort()) !== JSON.stringify(needed)) {
              broken.push(`${method.toUpperCase()} ${path} ${status} -> ${name}`);
            }
          }
        }
      }
      expect(links).toBeGreaterThan(30);
      expect(broken).toEqual([]);
    });

    // The operations a fuzzer only ever reached with made-up ids before the links.
    it.each([
      ['/api/v1/load-balancers', '201', 'attachLoadBalancerBackend', '$response.body#/data/id'],
      ['/api/v1/load-balancers', '201', 'detachLoadBalancerBackend', '$response.body#/data/id'],
      ['/api/v1/load-balancers', '201', 'deleteLoadBalancer', '$response.body#/data/id'],
      ['/api/v1/servers', '201', 'stopServer', '$response.body#/data/id'],
      ['/api/v1/servers', '201', 'startServer', '$response.body#/data/id'],
      ['/api/v1/servers', '201', 'rebootServer', '$response.body#/data/id'],
      ['/api/v1/jobs', '201', 'cancelJob', '$response.body#/data/id'],
      ['/api/v1/settings/api-keys', '201', 'revokeApiKey', '$response.body#/data/id'],
      ['/api/v1/vpn-gateways', '201', 'getVpnTunnelStatus', '$response.body#/data/id'],
      ['/api/v1/webhooks/{id}/deliveries', '200', 'getWebhookDelivery', '$response.body#/data/0/id'],
      ['/api/v1/webhooks/{id}/deliveries', '200', 'retryWebhookDelivery', '$response.body#/data/0/id'],
    ])('%s answers %s with a link to %s', (path, status, operationId, expression) => {
      const operation = document.paths[path][status === '201' ? 'post' : 'get'];
      const link = operation.responses[status].links?.[operationId];
      expect(link?.operationId).toBe(operationId);
      const own = Object.keys(link.parameters).find((name) => !path.includes(`{${name.slice('path.'.length)}}`));
      expect(link.parameters[own!]).toBe(expression);
    });

    const queryOf = (path: string, method: string) =>
      (document.paths[path][method].parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => `${p.name}:${p.schema.type}`);

    it('documents ?force on the DELETE of buckets only, the family that refuses a delete while it holds data', () => {
      expect(queryOf('/api/v1/object-storage/{id}', 'delete')).toEqual(['dry_run:boolean', 'force:boolean']);
      expect(queryOf('/api/v1/file-storage/{id}', 'delete')).toEqual(['dry_run:boolean']);
    });

    it('documents ?dry_run on the create, update and delete of the generic routes, and meta.dry_run on their answers', () => {
      for (const path of ['/api/v1/load-balancers', '/api/v1/servers', '/api/v1/object-storage', '/api/v1/databases']) {
        expect(queryOf(path, 'post')).toEqual(['dry_run:boolean']);
        expect(queryOf(`${path}/{id}`, 'patch')).toEqual(['dry_run:boolean']);
        expect(queryOf(`${path}/{id}`, 'delete')).toContain('dry_run:boolean');
      }
      const schemaOf = (schema: any): any => (schema.$ref ? schemaOf(document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]) : schema);
      const created = schemaOf(document.paths['/api/v1/load-balancers'].post.responses['201'].content['application/json'].schema);
      expect(schemaOf(created.properties.meta).properties.dry_run).toMatchObject({ type: 'boolean' });
    });

    it("never links from the API key list, whose first key may be the caller's own", () => {
      expect(document.paths['/api/v1/settings/api-keys'].get.responses['200'].links).toBeUndefined();
    });
  });

  describe('response descriptions and headers', () => {
    const responses = () =>
      Object.entries<Record<string, any>>(document.paths).flatMap(([path, item]) =>
        Object.entries<any>(item).flatMap(([method, operation]) =>
          Object.entries<any>(operation.responses).map(([status, response]) => ({ where: `${method.toUpperCase()} ${path} ${status}`, status, response })),
        ),
      );
    /** A header object, through its $ref into components.headers. */
    const headerOf = (object: any) => (object?.$ref ? document.components.headers[object.$ref.replace('#/components/headers/', '')] : object);
    const required = (response: any) =>
      Object.keys(response.headers ?? {})
        .filter((name) => headerOf(response.headers[name]).required)
        .sort();

    it('describes every response in words of its own, never "Default Response"', () => {
      const vague = responses()
        .filter(({ response }) => !response.description || response.description === 'Default Response')
        .map((r) => r.where);
      expect(responses().length).toBeGreaterThan(500);
      expect(vague).toEqual([]);
      const lb = document.paths['/api/v1/load-balancers'].post.responses;
      expect(lb['201'].description).toMatch(/^Created/);
      expect(lb['429'].description).toMatch(/^rate_limit_exceeded/);
      expect(document.paths['/api/v1/load-balancers/{id}'].get.responses['404'].description).toMatch(/_not_found/);
    });

    it('documents X-Request-Id on every response, Location on every 201, Retry-After and the rate limit on every 429', () => {
      const gaps: string[] = [];
      for (const { where, status, response } of responses()) {
        const names = required(response);
        const expected = ['X-Request-Id'];
        if (status === '201') expected.push('Location');
        if (status === '429') expected.push('Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset');
        for (const name of expected) if (!names.includes(name)) gaps.push(`${where} ${name}`);
      }
      expect(gaps).toEqual([]);
      expect(headerOf(document.paths['/api/v1/servers'].get.responses['200'].headers['X-RateLimit-Reset'])).toEqual(
        expect.objectContaining({ required: true, schema: { type: 'integer', format: 'int64' } }),
      );
      expect(headerOf(document.paths['/api/v1/servers'].get.responses['503'].headers['Retry-After'])).toEqual(
        expect.objectContaining({ schema: { type: 'integer' } }),
      );
      expect(headerOf(document.paths['/api/v1/servers'].get.responses['503'].headers['Retry-After']).required).toBeUndefined();
    });

    // What the document promises must hold on real answers, or a client that relies on it breaks.
    it('sends every header the document marks required, on real answers of each kind', async () => {
      const limited = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '5' });
      try {
        const created = await limited.api('POST', '/api/v1/load-balancers', { name: 'documented', region: 'fra1' });
        const id = created.body.data.id;
        const answers: [string, string, { status: number; headers: Headers }][] = [
          ['POST', '/api/v1/load-balancers', created],
          ['GET', '/api/v1/load-balancers/{id}', await limited.api('GET', `/api/v1/load-balancers/${id}`)],
          ['GET', '/api/v1/load-balancers/{id}', await limited.api('GET', '/api/v1/load-balancers/lb_0000000000000000')],
          ['POST', '/api/v1/load-balancers/{id}/attach', await limited.api('POST', `/api/v1/load-balancers/${id}/attach`, { server_id: 7 })],
          ['GET', '/api/v1/servers', await limited.api('GET', '/api/v1/servers', undefined, { key: null })],
        ];
        let last = await limited.api('GET', '/api/v1/regions');
        while (last.status !== 429) last = await limited.api('GET', '/api/v1/regions');
        answers.push(['GET', '/api/v1/regions', last]);

        expect(answers.map(([, , res]) => res.status)).toEqual([201, 200, 404, 422, 401, 429]);
        const missing: string[] = [];
        const checked = new Set<string>();
        for (const [method, path, res] of answers) {
          const response = document.paths[path][method.toLowerCase()].responses[String(res.status)];
          for (const name of required(response)) {
            checked.add(name);
            if (!res.headers.get(name)) missing.push(`${method} ${path} ${res.status} ${name}`);
          }
        }
        expect(missing).toEqual([]);
        expect([...checked].sort()).toEqual([
          'ETag',
          'Location',
          'Retry-After',
          'WWW-Authenticate',
          'X-RateLimit-Limit',
          'X-RateLimit-Remaining',
          'X-RateLimit-Reset',
          'X-Request-Id',
        ]);
      } finally {
        await limited.stop();
      }
    });
  });

  describe('named component schemas', () => {
    /** Every schema object in a part of the document, with where it is. */
    const schemasIn = (node: any, where: string, found: { where: string; schema: any }[] = []) => {
      if (!node || typeof node !== 'object') return found;
      if (node.properties) found.push({ where, schema: node });
      for (const [key, value] of Object.entries(node)) schemasIn(value, `${where}/${key}`, found);
      return found;
    };
    const everywhere = () => schemasIn({ paths: document.paths, components: document.components }, '#');
    const jsonAnswers = () =>
      Object.entries<Record<string, any>>(document.paths).flatMap(([path, item]) =>
        Object.entries<any>(item).flatMap(([method, operation]) =>
          Object.entries<any>(operation.responses)
            // A listener's stream answers text/event-stream, not JSON.
            .filter(([, response]) => response.content?.['application/json'])
            .map(([status, response]) => ({ where: `${method.toUpperCase()} ${path} ${status}`, status, schema: response.content['application/json'].schema })),
        ),
      );

    it('holds exactly one LoadBalancer and one error, which every answer refers to', () => {
      const loadBalancers = everywhere().filter(({ schema }) => String(schema.properties.id?.pattern ?? '').startsWith('^lb_'));
      expect(loadBalancers.map((s) => s.where)).toEqual(['#/components/schemas/LoadBalancer']);
      const errors = everywhere().filter(({ schema }) => schema.properties.error && schema.properties.meta); // an envelope of an error
      expect(errors.map((s) => s.where)).toEqual(['#/components/schemas/ErrorEnvelope']);
      expect(document.components.schemas.ErrorEnvelope.properties.error).toEqual({ $ref: '#/components/schemas/Error' });
    });

    it('answers every JSON response with a named schema: an envelope per record, the error envelope for every error', () => {
      const inline = jsonAnswers()
        .filter(({ schema }) => !schema.$ref)
        .map((a) => a.where);
      expect(inline).toEqual([]);
      const errors = jsonAnswers().filter(({ status }) => Number(status) >= 400);
      expect(errors.length).toBeGreaterThan(400);
      expect(errors.filter(({ schema }) => schema.$ref !== '#/components/schemas/ErrorEnvelope').map((a) => a.where)).toEqual([]);
    });

    it.each([
      ['/api/v1/load-balancers', 'LoadBalancer'],
      ['/api/v1/vpn-gateways', 'VpnGateway'],
      ['/api/v1/servers', 'Server'],
      ['/api/v1/object-storage', 'Bucket'],
      ['/api/v1/file-storage', 'FileShare'],
      ['/api/v1/jobs', 'Job'],
      ['/api/v1/webhooks', 'Webhook'],
      ['/api/v1/agent/threads', 'AgentThread'],
    ])('%s: a list answers a <%s>List, a record a <name>Envelope of it', (path, name) => {
      const ref = (schema: any) => schema.$ref;
      const { schemas } = document.components;
      expect(ref(document.paths[path].get.responses['200'].content['application/json'].schema)).toBe(`#/components/schemas/${name}List`);
      expect(ref(document.paths[`${path}/{id}`].get.responses['200'].content['application/json'].schema)).toBe(`#/components/schemas/${name}Envelope`);
      expect(schemas[`${name}Envelope`].properties.data).toEqual({ $ref: `#/components/schemas/${name}` });
      expect(schemas[`${name}List`].properties.data).toEqual({ type: 'array', items: { $ref: `#/components/schemas/${name}` } });
      expect(schemas[`${name}Envelope`].properties.meta).toEqual({ $ref: '#/components/schemas/Meta' });
    });

    it("names a shape two families answer by the words their records share: a server's and a database's Backup", () => {
      const answer = (path: string, status = '200', method = 'get') => document.paths[path][method].responses[status].content['application/json'].schema.$ref;
      for (const source of ['servers', 'databases']) {
        expect(answer(`/api/v1/${source}/{id}/backups`)).toBe('#/components/schemas/BackupList');
        expect(answer(`/api/v1/${source}/{id}/backups/{backup_id}`)).toBe('#/components/schemas/BackupEnvelope');
      }
      expect(document.components.schemas.BackupEnvelope.properties.data).toEqual({ $ref: '#/components/schemas/Backup' });
      // Nothing shared but the role: a job's runs answer the job's own schemas.
      expect(answer('/api/v1/jobs/{id}/runs')).toBe('#/components/schemas/JobList');
    });

    it('names the answers that show a secret once apart from the record', () => {
      const created = (path: string) => document.paths[path].post.responses['201'].content['application/json'].schema.$ref;
      expect(created('/api/v1/settings/api-keys')).toBe('#/components/schemas/ApiKeyCreatedEnvelope');
      expect(created('/api/v1/webhooks')).toBe('#/components/schemas/WebhookCreatedEnvelope');
      expect(created('/api/v1/load-balancers')).toBe('#/components/schemas/LoadBalancerEnvelope');
      expect(document.components.schemas.ApiKeyCreatedEnvelope.properties.data).toEqual({ $ref: '#/components/schemas/ApiKeyCreated' });
    });

    // openapi-generator's Go client writes New<Model>, New<Model>WithDefaults and Nullable<Model>
    // for every model: a schema named NewApiKey beside ApiKey did not compile.
    it('names no schema as a generator names its helpers of another, nor two alike but for case', () => {
      const names = Object.keys(document.components.schemas);
      expect(names.filter((name) => GENERATOR_PREFIXES.test(name) || /WithDefaults$/.test(name))).toEqual([]);
      const folded = names.map((name) => name.toLowerCase().replace(/[^a-z0-9]/g, ''));
      expect(names.filter((_, i) => folded.indexOf(folded[i]) !== i)).toEqual([]);
    });
  });

  describe('integers and enums as a strict client reads them', () => {
    /** Every schema in the document, with the name it is found under (a property's, a header's). */
    const schemasNamed = (node: any, name: string, found: { name: string; where: string; schema: any }[] = [], where = '#') => {
      if (!node || typeof node !== 'object') return found;
      if (Array.isArray(node)) {
        node.forEach((item, i) => schemasNamed(item, name, found, `${where}/${i}`));
        return found;
      }
      if (typeof node.type === 'string' || node.enum) found.push({ name, where, schema: node });
      for (const [key, value] of Object.entries<any>(node)) {
        if (key === 'properties' || key === 'headers')
          for (const [child, schema] of Object.entries(value)) schemasNamed(schema, child, found, `${where}/${key}/${child}`);
        else schemasNamed(value, name, found, `${where}/${key}`);
      }
      return found;
    };
    const INT32_MAX = 2 ** 31 - 1;

    it('marks int64 every integer named for bytes, sizes or a Unix time that may pass 2^31', () => {
      const integers = schemasNamed(document, '').filter(({ schema }) => schema.type === 'integer');
      const large = integers.filter(({ name, schema }) => /bytes|size|octets|reset|unix|epoch/i.test(name) && !(schema.maximum <= INT32_MAX));
      expect(large.filter(({ schema }) => schema.format !== 'int64').map((s) => s.where)).toEqual([]);
      // The ones the rule is there for are found by it: the VPN byte counters and the rate limit's reset.
      const found = large.map(({ where }) => where);
      for (const expected of [
        '#/components/schemas/VpnGateway/properties/bytes_sent',
        '#/components/schemas/VpnGateway/properties/bytes_received',
        '#/components/schemas/VpnTunnelStatus/properties/bytes_sent',
        '#/components/schemas/VpnTunnelStatus/properties/bytes_received',
        '#/components/headers/X-RateLimit-Reset',
      ]) {
        expect(found.some((where) => where.startsWith(expected))).toBe(true);
      }
    });

    it("lists null in the enum of every nullable enum (a backup's method and restore_status among them)", () => {
      const nullableEnums = schemasNamed(document, '').filter(({ schema }) => schema.nullable === true && Array.isArray(schema.enum));
      expect(nullableEnums.filter(({ schema }) => !schema.enum.includes(null)).map((s) => s.where)).toEqual([]);
      const backup = document.components.schemas.Backup.properties;
      expect(backup.method.enum).toContain(null);
      expect(backup.restore_status.enum).toEqual(['restoring', 'succeeded', 'failed', null]);
    });
  });

  // Found by schemathesis (make fuzz): these answers were real but missing from the document.
  describe('documents every status the service answers', () => {
    const documented = (method: string, path: string): string[] => Object.keys(document.paths[path][method.toLowerCase()].responses);

    it.each([
      ['GET', '/api/v1/regions', '/api/v1/regions'],
      ['GET', '/api/v1/vpn-gateways/{id}/status', '/api/v1/vpn-gateways/vpn_0000000000000000/status'],
      ['POST', '/api/v1/servers/{id}/stop', '/api/v1/servers/svr_0000000000000000/stop'],
      ['POST', '/api/v1/jobs/{id}/cancel', '/api/v1/jobs/job_0000000000000000/cancel'],
    ])('401 without a key on %s %s', async (method, path, url) => {
      const res = await svc.api(method, url, undefined, { key: null });
      expect(res.status).toBe(401);
      expect(documented(method, path)).toContain('401');
    });

    it.each([
      ['PATCH', '/api/v1/settings/profile'],
      ['PATCH', '/api/v1/settings/team'],
      ['POST', '/api/v1/settings/api-keys'],
      ['POST', '/api/v1/agent/threads'],
    ])('400 invalid_json for a broken body on %s %s', async (method, path) => {
      const res = await svc.api(method, path, undefined, { rawBody: '\u0000', headers: { 'content-type': 'application/json' } });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'invalid_json' });
      expect(documented(method, path)).toContain('400');
    });

    it('lists the shared error statuses on every operation', () => {
      const gaps: string[] = [];
      for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
        for (const [method, operation] of Object.entries<any>(item)) {
          const expected = ['400', '401', '429', '503'];
          if (['post', 'put', 'patch', 'delete'].includes(method)) expected.push('403', '413', '415', '422');
          if (path.includes('{')) expected.push('404', '422');
          const codes = Object.keys(operation.responses);
          for (const code of expected) if (!codes.includes(code)) gaps.push(`${method.toUpperCase()} ${path} ${code}`);
        }
      }
      expect(gaps).toEqual([]);
    });
  });
});
