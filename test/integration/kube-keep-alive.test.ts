/**
 * The operator's API calls reuse connections (src/store/kubernetes/keep-alive-config.ts):
 * the client used to give every call an agent of its own, so every call to the API server
 * was a new TCP connection and TLS handshake. Each call is counted there too, by verb and
 * resource (cloudplane_kube_api_requests_total).
 */
import type { Socket } from 'node:net';
import type https from 'node:https';
import { CoreV1Api, HttpMethod, RequestContext } from '@kubernetes/client-node';
import { KeepAliveKubeConfig } from '../../src/store/kubernetes/keep-alive-config';
import { kubeApiRequests } from '../../src/metrics';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';

jest.setTimeout(120_000);

let server: KubeApiServer;
beforeAll(async () => {
  server = await startKubeApiServer();
});
afterAll(async () => {
  await server?.stop();
});

const agentOf = async (kc: KeepAliveKubeConfig) => {
  const context = new RequestContext(`${kc.getCurrentCluster()!.server}/api/v1/namespaces`, HttpMethod.GET);
  await kc.applySecurityAuthentication(context);
  return context.getAgent() as https.Agent;
};

it('gives every call one keep-alive agent, over which sequential calls to the real API server share one connection', async () => {
  const kc = new KeepAliveKubeConfig();
  kc.loadFromString(server.kubeconfigYaml);
  const agent = await agentOf(kc);
  expect(await agentOf(kc)).toBe(agent);
  expect((agent as https.Agent & { keepAlive?: boolean }).keepAlive).toBe(true);

  const core = kc.makeApiClient(CoreV1Api);
  const sockets = new Set<Socket>();
  for (let i = 0; i < 5; i++) {
    await core.listNamespace();
    for (const free of Object.values(agent.freeSockets)) for (const socket of free ?? []) sockets.add(socket as Socket);
  }
  expect(sockets.size).toBe(1);
});

it('counts each call made to the real API server once, by verb and resource', async () => {
  const kc = new KeepAliveKubeConfig();
  kc.loadFromString(server.kubeconfigYaml);
  const core = kc.makeApiClient(CoreV1Api);
  const count = async (verb: string, resource: string) =>
    (await kubeApiRequests.get()).values.find((v) => v.labels.verb === verb && v.labels.resource === resource)?.value ?? 0;
  const before = { list: await count('list', 'namespaces'), create: await count('create', 'configmaps'), update: await count('update', 'configmaps') };

  await core.createNamespace({ body: { metadata: { name: 'counted' } } });
  const made = await core.createNamespacedConfigMap({ namespace: 'counted', body: { metadata: { name: 'one' }, data: { a: '1' } } });
  await core.replaceNamespacedConfigMap({ namespace: 'counted', name: 'one', body: { ...made, data: { a: '2' } } });
  await core.replaceNamespacedConfigMap({ namespace: 'counted', name: 'one', body: { ...made, data: { a: '3' } } }).catch(() => undefined); // a 409: still a call
  await core.listNamespace();

  expect(await count('list', 'namespaces')).toBe(before.list + 1);
  expect(await count('create', 'configmaps')).toBe(before.create + 1);
  expect(await count('update', 'configmaps')).toBe(before.update + 2);
});
