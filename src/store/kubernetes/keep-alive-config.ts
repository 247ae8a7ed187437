/**
 * A KubeConfig whose API calls share one keep-alive HTTPS agent. The client (1.x) gives
 * every call an agent of its own, so every call opened a TCP connection and did a TLS
 * handshake (the API server answered `Connection: close`): the operator's reconcilers,
 * the store and the outbox relay each paid a handshake on both ends per write, which
 * bounded how fast resources went from `creating` to `running` more than the writes did.
 * Watches keep their own long-lived connections (they do not come through here).
 *
 * Every call passes here once, so it is also where they are counted
 * (cloudplane_kube_api_requests_total, by verb and resource).
 */
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { kubeApiRequests } from '../../metrics';
import { requestKindOf } from './request-kind';

type RequestContext = Parameters<KubeConfig['applySecurityAuthentication']>[0];

export class KeepAliveKubeConfig extends KubeConfig {
  /** One agent per context and cluster, with the TLS options the client computed for it. */
  private readonly agents = new Map<string, https.Agent>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    const { verb, resource } = requestKindOf(context.getHttpMethod(), context.getUrl());
    kubeApiRequests.inc({ verb, resource });
    await super.applySecurityAuthentication(context);
    const fresh = context.getAgent();
    const cluster = this.getCurrentCluster();
    // Proxy agents and plain HTTP are left as the client made them.
    if (!(fresh instanceof https.Agent) || fresh.constructor !== https.Agent || !cluster || cluster.proxyUrl) return;
    const key = `${this.getCurrentContext()}\u0000${cluster.server}`;
    let agent = this.agents.get(key);
    if (!agent) {
      agent = new https.Agent({ ...fresh.options, keepAlive: true });
      this.agents.set(key, agent);
    }
    context.setAgent(agent);
  }
}
