/**
 * podProgress (src/drivers/kubernetes/pod-status.ts) on Pod statuses as the scheduler and
 * the kubelet write them; the integration test (server-pods.test.ts) sees the same on the
 * workload cluster, where KWOK plays only some of them.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { podProgress } from '../../src/drivers/kubernetes/pod-status';

const NOW = Date.parse('2026-11-24T10:00:00Z');
const TIMEOUT = 60_000;

function pod(status: V1PodStatus, createdSecondsAgo = 10, extra: Partial<V1Pod['metadata']> = {}): V1Pod {
  return {
    metadata: { name: 'svr-x', creationTimestamp: new Date(NOW - createdSecondsAgo * 1000), ...extra },
    spec: { containers: [{ name: 'server', image: 'docker.io/library/ubuntu:24.04' }] },
    status,
  };
}

const waiting = (reason: string, message?: string): V1PodStatus => ({
  phase: 'Pending',
  conditions: [{ type: 'PodScheduled', status: 'True' }],
  containerStatuses: [
    { name: 'server', image: 'docker.io/library/ubuntu:24.04', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message } } },
  ],
});

const unschedulable: V1PodStatus = {
  phase: 'Pending',
  conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes are available: 2 Insufficient cpu.' }],
};

describe('podProgress', () => {
  test('a Running Pod with Ready=True is ready, with its IP', () => {
    const ready = pod({ phase: 'Running', podIP: '10.244.1.5', conditions: [{ type: 'Ready', status: 'True' }] });
    expect(podProgress(ready, TIMEOUT, NOW)).toEqual({ state: 'ready', ip: '10.244.1.5' });
  });

  test('a Pod still being made is coming, with no failure and no deadline', () => {
    expect(podProgress(pod(waiting('ContainerCreating')), TIMEOUT, NOW)).toEqual({ state: 'coming', ip: null, failure: null, failsInMs: null });
  });

  test("an unschedulable Pod fails once it is as old as the timeout, with the scheduler's message", () => {
    expect(podProgress(pod(unschedulable, 10), TIMEOUT, NOW)).toEqual({ state: 'coming', ip: null, failure: null, failsInMs: 50_000 });
    const late = podProgress(pod(unschedulable, 60), TIMEOUT, NOW);
    expect(late).toMatchObject({ state: 'coming', failsInMs: 0 });
    expect(late.state === 'coming' && late.failure).toBe('no node could take its Pod within 60 s: 0/2 nodes are available: 2 Insufficient cpu.');
  });

  test("a failing pull fails once it is as old as the timeout, naming the image and the kubelet's reason", () => {
    expect(podProgress(pod(waiting('ImagePullBackOff', 'Back-off pulling image')), TIMEOUT, NOW)).toMatchObject({ failure: null, failsInMs: 50_000 });
    const late = podProgress(pod(waiting('ErrImagePull', 'no such host'), 61), TIMEOUT, NOW);
    expect(late.state === 'coming' && late.failure).toBe(
      'the image docker.io/library/ubuntu:24.04 could not be pulled within 60 s (ErrImagePull: no such host)',
    );
  });

  test('a malformed image name fails at once', () => {
    const progress = podProgress(pod(waiting('InvalidImageName', "couldn't parse image name"), 1), TIMEOUT, NOW);
    expect(progress).toMatchObject({ state: 'coming', failsInMs: 0 });
    expect(progress.state === 'coming' && progress.failure).toMatch(/is not a valid image name/);
  });

  test('a Pod being deleted is terminating; an evicted or exited Pod has ended, saying how', () => {
    expect(podProgress(pod({ phase: 'Running' }, 10, { deletionTimestamp: new Date(NOW) }), TIMEOUT, NOW)).toEqual({ state: 'terminating' });
    expect(podProgress(pod({ phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' }), TIMEOUT, NOW)).toEqual({
      state: 'ended',
      reason: 'the Pod failed (Evicted: The node was low on resource: memory.)',
    });
  });
});
