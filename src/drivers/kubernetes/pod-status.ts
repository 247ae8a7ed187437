/**
 * How far a Pod is, read from its status as the scheduler and the kubelet write it: ready,
 * still coming, gone for good (its containers exited or it was evicted), or stuck in a way
 * that fails it: no node can take it, or its image cannot be pulled. A stuck Pod fails
 * once it has been stuck for the start timeout, counted from its creation (a time the
 * cluster keeps, so a restart of the operator does not reset it); a malformed image name
 * fails it at once.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';

/** Waiting reasons of the kubelet that no retry can fix. */
const PERMANENT_IMAGE_REASONS: Record<string, string> = {
  InvalidImageName: 'is not a valid image name',
  ErrImageNeverPull: 'is not on the node and its pull policy forbids pulling it',
};
/** Waiting reasons of a pull that may still succeed (a registry down for a while). */
const RETRIED_IMAGE_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'RegistryUnavailable', 'SignatureValidationFailed']);

export type PodProgress =
  | { state: 'ready'; ip: string | null }
  | { state: 'coming'; ip: string | null; failure: string | null; failsInMs: number | null }
  | { state: 'terminating' }
  | { state: 'ended'; reason: string };

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

export function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export function podProgress(pod: V1Pod, startTimeoutMs: number, now = Date.now()): PodProgress {
  if (pod.metadata?.deletionTimestamp) return { state: 'terminating' };
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') {
    const why = [pod.status?.reason, pod.status?.message].filter(Boolean).join(': ');
    return { state: 'ended', reason: `the Pod ${phase === 'Failed' ? 'failed' : 'exited'}${why ? ` (${why})` : ''}` };
  }
  const ip = pod.status?.podIP ?? null;
  if (phase === 'Running' && isReady(pod)) return { state: 'ready', ip };

  const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : now;
  const remaining = created + startTimeoutMs - now;
  const stuck = stuckReason(pod, startTimeoutMs);
  if (!stuck) return { state: 'coming', ip, failure: null, failsInMs: null };
  if (stuck.permanent || remaining <= 0) return { state: 'coming', ip, failure: stuck.reason, failsInMs: 0 };
  return { state: 'coming', ip, failure: null, failsInMs: remaining };
}

/** Why the Pod is not coming up by itself, if it is stuck. */
function stuckReason(pod: V1Pod, startTimeoutMs: number): { reason: string; permanent: boolean } | null {
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return { reason: `no node could take its Pod within ${seconds(startTimeoutMs)}: ${scheduled.message ?? 'unschedulable'}`, permanent: false };
  }
  for (const status of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
    const waiting = status.state?.waiting;
    if (!waiting?.reason) continue;
    // As the API server reports it: a container waiting for its image may not name it yet.
    const reported: Partial<V1ContainerStatus> = status;
    const image = reported.image ?? pod.spec?.containers.find((c) => c.name === status.name)?.image ?? 'its image';
    const permanent = PERMANENT_IMAGE_REASONS[waiting.reason];
    if (permanent) return { reason: `the image ${image} ${permanent}${waiting.message ? `: ${waiting.message}` : ''}`, permanent: true };
    if (RETRIED_IMAGE_REASONS.has(waiting.reason)) {
      return {
        reason: `the image ${image} could not be pulled within ${seconds(startTimeoutMs)} (${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''})`,
        permanent: false,
      };
    }
  }
  return null;
}
