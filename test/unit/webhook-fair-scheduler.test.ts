/**
 * The webhook dispatcher's queue of due deliveries (fair-scheduler.ts): teams take turns,
 * and a team's subscriptions take turns, so a backlog of one never holds back another's
 * single delivery; and the attempts under way stay within the three caps while every
 * queued delivery is started exactly once.
 */
import { FairScheduler, Started } from '../../src/webhooks/fair-scheduler';

const DEFAULTS = { global: 256, perTeam: 32, perSubscription: 4 };

/** Starts deliveries until `count` have started or none may start, finishing each at once when `finishing`. */
function startMany(queue: FairScheduler<string>, count: number, finishing: boolean): Array<Started<string>> {
  const started: Array<Started<string>> = [];
  while (started.length < count) {
    const next = queue.next();
    if (!next) break;
    started.push(next);
    if (finishing) queue.finish(next.team, next.subscription);
  }
  return started;
}

describe('fair webhook scheduler', () => {
  it.each([
    ['one subscription, attempts under way', 1, DEFAULTS, false],
    ['a hundred subscriptions, attempts under way', 100, DEFAULTS, false],
    ['one subscription, attempts over at once', 1, DEFAULTS, true],
    ['a hundred subscriptions, one attempt at a time', 100, { global: 1, perTeam: 1, perSubscription: 1 }, true],
  ])("starts team B's one delivery among the first few after team A queued 10,000 (%s)", (_name, subscriptions, limits, finishing) => {
    const queue = new FairScheduler<string>(limits);
    for (let i = 0; i < 10_000; i++) queue.add('team-a', `wh-a${i % subscriptions}`, `a${i}`, `a${i}`);
    queue.add('team-b', 'wh-b', 'b0', 'b0');
    expect(queue.waiting).toBe(10_001);
    const order = startMany(queue, 3, finishing).map((s) => s.item);
    expect(order.indexOf('b0')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('b0')).toBeLessThanOrEqual(1);
  });

  it("gives a team's other subscription its turn beside a subscription with a backlog", () => {
    const queue = new FairScheduler<string>({ global: 1000, perTeam: 1000, perSubscription: 1000 });
    for (let i = 0; i < 5000; i++) queue.add('team-a', 'wh-dead', `d${i}`, `d${i}`);
    queue.add('team-a', 'wh-live', 'live', 'live');
    const order = startMany(queue, 3, true).map((s) => s.item);
    expect(order.indexOf('live')).toBeLessThanOrEqual(1);
  });

  it('keeps each subscription, team and the process within its cap, and starts every delivery once', () => {
    const limits = { global: 10, perTeam: 4, perSubscription: 2 };
    const queue = new FairScheduler<string>(limits);
    const queued: string[] = [];
    for (let team = 0; team < 5; team++) {
      for (let i = 0; i < 60; i++) {
        const id = `t${team}-d${i}`;
        queue.add(`team-${team}`, `wh-${team}-${i % 3}`, id, id);
        queued.push(id);
      }
    }
    // Adding one already waiting changes nothing.
    queue.add('team-0', 'wh-0-0', 't0-d0', 't0-d0');
    expect(queue.waiting).toBe(queued.length);

    const running: Array<Started<string>> = [];
    const startedIds: string[] = [];
    const within = () => {
      const count = (pick: (s: Started<string>) => string) =>
        Math.max(0, ...Object.values(running.reduce<Record<string, number>>((n, s) => ({ ...n, [pick(s)]: (n[pick(s)] ?? 0) + 1 }), {})));
      expect(running.length).toBeLessThanOrEqual(limits.global);
      expect(queue.inFlight).toBe(running.length);
      expect(count((s) => s.team)).toBeLessThanOrEqual(limits.perTeam);
      expect(count((s) => `${s.team}/${s.subscription}`)).toBeLessThanOrEqual(limits.perSubscription);
    };
    // A deterministic mix of starts and finishes in varying order.
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    while (startedIds.length < queued.length || running.length > 0) {
      for (let next = queue.next(); next; next = queue.next()) {
        running.push(next);
        startedIds.push(next.item);
        within();
      }
      expect(running.length).toBeGreaterThan(0);
      const done = running.splice(Math.floor(random() * running.length), 1)[0];
      queue.finish(done.team, done.subscription);
      within();
    }
    expect(startedIds.sort()).toEqual([...queued].sort());
    expect(queue.waiting).toBe(0);
    expect(queue.inFlight).toBe(0);
  });

  it("keeps a paused subscription's deliveries in order until it is resumed, serving the others meanwhile", () => {
    const queue = new FairScheduler<string>(DEFAULTS);
    for (let i = 0; i < 3; i++) queue.add('team-a', 'wh-limited', `l${i}`, `l${i}`);
    queue.add('team-a', 'wh-other', 'o0', 'o0');
    // The limited subscription's rate limit says no: it is passed over, not emptied.
    const refused: string[] = [];
    const first = queue.next((_team, subscription) => {
      if (subscription !== 'wh-limited') return true;
      refused.push(subscription);
      queue.pause('team-a', subscription);
      return false;
    });
    expect(first?.item).toBe('o0');
    expect(refused).toEqual(['wh-limited']);
    expect(queue.next()).toBeUndefined();
    expect(queue.waiting).toBe(3);
    queue.resume('team-a', 'wh-limited');
    expect(startMany(queue, 10, true).map((s) => s.item)).toEqual(['l0', 'l1', 'l2']);
  });
});
