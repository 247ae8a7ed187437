/**
 * The Kubernetes Events of a status change (transitions.ts objectEventsForChange), as
 * `kubectl describe` lists them: a change of state, a failure, a refused spec, a refused
 * update, a degradation, a configuration applied; none for a family that reports no states.
 */
import { objectEventsForChange, SPEC_REFUSED } from '../../src/resources/transitions';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import { deliveryFamily } from '../../src/resources/webhook';
import type { AnyFamily, Resource } from '../../src/resources/family';

const resourceOf = (status: { status: string } & Record<string, unknown>, generation = 1): Resource =>
  ({
    meta: {
      kind: 'LoadBalancer',
      id: 'lb_events00000000000',
      team: 'team_events000000000',
      resourceVersion: '1',
      generation,
      createdAt: '',
      updatedAt: '',
      labels: {},
    },
    spec: {},
    status: { status_reason: null, observed_generation: generation, observed_config: 'c1', deleted_at: null, conditions: [], pending_events: [], ...status },
  }) as Resource;

const eventsOf = (family: AnyFamily, previous: Resource | undefined, next: Resource) => objectEventsForChange(family, previous, next);

describe('Kubernetes Events of a status change', () => {
  it('tells a first state and each change of state, Normal', () => {
    expect(eventsOf(loadBalancerFamily, undefined, resourceOf({ status: 'creating' }))).toEqual([
      { type: 'Normal', reason: 'Creating', message: 'The load balancer was accepted; it is creating.' },
    ]);
    expect(eventsOf(loadBalancerFamily, resourceOf({ status: 'creating' }), resourceOf({ status: 'running' }))).toEqual([
      { type: 'Normal', reason: 'Running', message: 'The load balancer went from creating to running.' },
    ]);
  });

  it('tells a failure as a Warning with its reason', () => {
    expect(
      eventsOf(loadBalancerFamily, resourceOf({ status: 'creating' }), resourceOf({ status: 'failed', status_reason: 'Provisioning failed: no capacity.' })),
    ).toEqual([{ type: 'Warning', reason: 'Failed', message: 'Provisioning failed: no capacity.' }]);
  });

  it('tells a spec refused at adoption, and again when an edited spec is refused for another reason', () => {
    const refused = (reason: string) =>
      resourceOf({
        status: 'failed',
        status_reason: reason,
        conditions: [{ type: 'Synced', status: 'False', reason: SPEC_REFUSED, message: reason, lastTransitionTime: '', observedGeneration: 1 }],
      });
    expect(eventsOf(loadBalancerFamily, undefined, refused('Region "x" does not exist.'))).toEqual([
      { type: 'Warning', reason: SPEC_REFUSED, message: 'The spec was refused: Region "x" does not exist.' },
    ]);
    expect(eventsOf(loadBalancerFamily, refused('Region "x" does not exist.'), refused('Port 0 is out of range.'))).toEqual([
      { type: 'Warning', reason: SPEC_REFUSED, message: 'The spec was refused: Port 0 is out of range.' },
    ]);
  });

  it('tells an update the provider refused apart from a degradation, and a configuration applied', () => {
    const running = resourceOf({ status: 'running' });
    const rejected = resourceOf({ status: 'running', observed_generation: 2, status_reason: 'The last configuration change was not applied: too big.' }, 2);
    expect(eventsOf(loadBalancerFamily, running, rejected)).toEqual([
      { type: 'Warning', reason: 'UpdateRefused', message: 'The last configuration change was not applied: too big.' },
    ]);
    expect(eventsOf(loadBalancerFamily, running, resourceOf({ status: 'running', status_reason: 'A backend is unhealthy.' }))).toEqual([
      { type: 'Warning', reason: 'Degraded', message: 'A backend is unhealthy.' },
    ]);
    expect(eventsOf(loadBalancerFamily, running, resourceOf({ status: 'running', observed_generation: 2, observed_config: 'c2' }, 2))).toEqual([
      { type: 'Normal', reason: 'Updated', message: 'Generation 2 of the spec was applied.' },
    ]);
    expect(eventsOf(loadBalancerFamily, running, resourceOf({ status: 'running' }))).toEqual([]);
  });

  it('tells nothing of the states of a family that reports none (webhook deliveries)', () => {
    expect(eventsOf(deliveryFamily, undefined, resourceOf({ status: 'pending' }))).toEqual([]);
    expect(eventsOf(deliveryFamily, resourceOf({ status: 'pending' }), resourceOf({ status: 'succeeded' }))).toEqual([]);
  });
});
