/**
 * What the drivers that run a Deployment per resource (load balancers on HAProxy, VPN
 * gateways' agents) read the same way: which of its Pods serve, where to reach one, and
 * whether its rollout stopped.
 */
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { known } from '../../lib/known';

/** A label selector's text from its labels. */
export function selectorOf(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** A Pod that takes traffic: Ready, with an IP, not being deleted. */
export function isServing(pod: V1Pod): boolean {
  const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  return Boolean(ready && pod.status?.podIP && !pod.metadata?.deletionTimestamp);
}

/** `http://<podIP>:<port>` of a serving Pod (an IPv6 address in brackets). */
export function podBaseUrl(pod: V1Pod, port: number): string {
  const ip = known(pod.status?.podIP, 'the IP of a serving Pod');
  return `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
}

/** Why the Deployment's rollout stopped (its progress deadline passed), or null; `what` names it. */
export function stalledRollout(deployment: V1Deployment | null, what: string): string | null {
  const progressing = deployment?.status?.conditions?.find((c) => c.type === 'Progressing');
  if (progressing?.status !== 'False') return null;
  return `${what} did not roll out: ${[progressing.reason, progressing.message].filter(Boolean).join(': ')}`;
}

/** Whether the Deployment has an available Pod and is not being deleted. */
export function isAvailable(deployment: V1Deployment | null): boolean {
  return (deployment?.status?.availableReplicas ?? 0) > 0 && !deployment?.metadata?.deletionTimestamp;
}
