/**
 * Which Kubernetes Events are written and which raise a count (controllers/event-correlator.ts):
 * a repeat counts into its Event, a burst of similar changes is combined past the limit,
 * and the window and the bound on what is remembered hold.
 */
import { COMBINED_PREFIX, CorrelatedEvent, EventCorrelator, MAX_SERIES } from '../../src/controllers/event-correlator';

const change = (uid: string, reason = 'Running', namespace = 'cp-team-a'): CorrelatedEvent => ({
  namespace,
  kind: 'LoadBalancer',
  uid,
  type: 'Normal',
  reason,
  message: `The load balancer ${uid} went from creating to running.`,
});

it('creates an Event for each of the first similar changes, then one combined Event whose count rises', () => {
  const correlator = new EventCorrelator(() => 1_000, 3);
  const outcomes = ['a', 'b', 'c', 'd', 'e', 'f'].map((uid) => correlator.correlate(change(uid)));
  expect(outcomes.slice(0, 3).every((o) => 'create' in o)).toBe(true);
  expect('create' in outcomes[3]).toBe(true);
  const combined = 'create' in outcomes[3] ? outcomes[3].create : null;
  // It says the latest change.
  expect(combined?.message).toBe(`${COMBINED_PREFIX}${change('f').message}`);
  expect(outcomes.slice(4).map((o) => ('counted' in o ? o.counted : null))).toEqual([combined, combined]);
  expect(combined?.count).toBe(3);
  expect(combined?.latest.uid).toBe('f');
  // One update is due for all the changes counted.
  expect(correlator.takeDue()).toEqual([combined]);
  expect(correlator.takeDue()).toEqual([]);
});

it('keeps namespaces and reasons apart: one team’s burst does not combine another’s Events', () => {
  const correlator = new EventCorrelator(() => 1_000, 1);
  expect('create' in correlator.correlate(change('a', 'Running', 'cp-team-a'))).toBe(true);
  expect('create' in correlator.correlate(change('b', 'Running', 'cp-team-b'))).toBe(true);
  expect('create' in correlator.correlate(change('a', 'Creating', 'cp-team-a'))).toBe(true);
});

it('counts a repeat of the same change of the same object into its Event', () => {
  const correlator = new EventCorrelator(() => 1_000);
  const first = correlator.correlate(change('a'));
  const again = correlator.correlate(change('a'));
  expect('create' in first && 'counted' in again && again.counted === first.create).toBe(true);
  expect('counted' in again ? again.counted.count : 0).toBe(2);
});

it('starts afresh once the window has passed', () => {
  let now = 0;
  const correlator = new EventCorrelator(() => now, 1, 600_000);
  correlator.correlate(change('a'));
  expect('create' in correlator.correlate(change('b'))).toBe(true); // the combined Event
  now = 600_001;
  const later = correlator.correlate(change('c'));
  expect('create' in later && !later.create.message.startsWith(COMBINED_PREFIX)).toBe(true);
});

it('remembers a bounded number of Events, the oldest forgotten first', () => {
  const correlator = new EventCorrelator(() => 1_000, Number.MAX_SAFE_INTEGER);
  const first = correlator.correlate(change('u0'));
  for (let i = 1; i <= MAX_SERIES; i++) correlator.correlate(change(`u${i}`));
  // The first was forgotten: its repeat is a new Event.
  const repeat = correlator.correlate(change('u0'));
  expect('create' in repeat && 'create' in first && repeat.create !== first.create).toBe(true);
});
