/**
 * The controller runtime: the work queue's per-key guarantees and backoff, and the
 * controller that feeds it from the store's watch and honours requeueAfter.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkQueue } from '../../src/lib/work-queue';
import { Controller, Reconciler } from '../../src/controllers/controller';
import { EmbeddedStore } from '../../src/store/embedded';
import { createLogger } from '../../src/logger';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with the next key, or with 'nothing' if none comes within `ms`. */
const nextWithin = (queue: WorkQueue, ms: number) => Promise.race([queue.get(), sleep(ms).then(() => 'nothing')]);

/** Counts the turns of the event loop from now until stop(): a setImmediate chain runs once a turn. */
function countEventLoopTurns(): { readonly count: number; stop(): void } {
  let count = 0;
  let counting = true;
  const tick = () => {
    count++;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get count() {
      return count;
    },
    stop: () => (counting = false),
  };
}

describe('WorkQueue', () => {
  let queue: WorkQueue;
  beforeEach(() => {
    queue = new WorkQueue({ backoff: { baseMs: 20, maxMs: 200 } });
  });
  afterEach(() => queue.shutDown());

  it('holds a waiting key once however often it is added, and hands keys out in order', async () => {
    queue.add('a');
    queue.add('b');
    queue.add('a');
    queue.add('a');
    expect(queue.length).toBe(2);
    expect(await queue.get()).toBe('a');
    expect(await queue.get()).toBe('b');
    expect(queue.length).toBe(0);
  });

  it('has a key while it waits and while it is processed, not while it is only due later', async () => {
    queue.add('a');
    queue.addAfter('later', 60_000);
    expect([queue.has('a'), queue.has('later')]).toEqual([true, false]);
    expect(await queue.get()).toBe('a');
    expect(queue.has('a')).toBe(true);
    queue.done('a');
    expect(queue.has('a')).toBe(false);
  });

  it('hands a key added later to a worker already waiting', async () => {
    const waiting = queue.get();
    queue.add('late');
    expect(await waiting).toBe('late');
  });

  it('does not hand a key being processed to a second worker, and processes it again if it was added meanwhile', async () => {
    queue.add('k');
    expect(await queue.get()).toBe('k');
    queue.add('k');
    queue.add('k');
    expect(queue.length).toBe(0);
    const second = queue.get();
    queue.add('other');
    expect(await second).toBe('other'); // not 'k', which is still being processed
    queue.done('other');
    const third = queue.get();
    expect(await Promise.race([third, sleep(30).then(() => 'nothing')])).toBe('nothing');
    queue.done('k');
    expect(await third).toBe('k'); // once, although it was added twice while processing
    queue.done('k');
    expect(await nextWithin(queue, 30)).toBe('nothing');
  });

  it('hands out background keys (a resync) only while no change waits; a background key added as a change goes first, once', async () => {
    for (const key of ['r1', 'r2', 'r3', 'r4']) queue.addBackground(key);
    queue.addBackground('r1');
    expect(queue.length).toBe(4);
    queue.add('change');
    queue.add('r3'); // promoted: a change now
    queue.addBackground('r3'); // stays a change
    expect(queue.length).toBe(5);
    const order: string[] = [];
    while (queue.length > 0) {
      const key = (await queue.get())!;
      order.push(key);
      queue.done(key);
    }
    expect(order).toEqual(['change', 'r3', 'r1', 'r2', 'r4']);
    expect(await nextWithin(queue, 30)).toBe('nothing');
  });

  it('takes a change added while many background keys wait before the rest of them, which follow in order', async () => {
    const many = 50_000;
    for (let i = 0; i < many; i++) queue.addBackground(`bg-${i}`);
    expect(await queue.get()).toBe('bg-0');
    queue.add('urgent');
    expect(await queue.get()).toBe('urgent');
    const rest: string[] = [];
    while (queue.length > 0) rest.push((await queue.get())!);
    expect(rest).toEqual(Array.from({ length: many - 1 }, (_, i) => `bg-${i + 1}`));
  });

  /** Takes every waiting key, in the order the queue hands them out, each processed at once. */
  async function drain(q: WorkQueue): Promise<string[]> {
    const order: string[] = [];
    while (q.length > 0) {
      const key = (await q.get())!;
      order.push(key);
      q.done(key);
    }
    return order;
  }

  it("serves another team's single key among the first two, however many keys one team queued first", async () => {
    const burst = 10_000;
    for (let i = 0; i < burst; i++) queue.add(`team_a/lb_${i}`);
    queue.add('team_b/lb_0');
    const order = await drain(queue);
    expect(order.indexOf('team_b/lb_0')).toBeLessThan(2);
    // Team A's own keys keep their order.
    expect(order.filter((key) => key.startsWith('team_a/'))).toEqual(Array.from({ length: burst }, (_, i) => `team_a/lb_${i}`));
  });

  it('interleaves teams one key a turn, first in, first out within each; keys without a team are a lane of their own', async () => {
    for (let i = 0; i < 3; i++) queue.add(`team_a/a${i}`);
    for (let i = 0; i < 2; i++) queue.add(`team_b/b${i}`);
    queue.add('cluster-object');
    queue.add('team_a/a0'); // already waiting: held once, its place kept
    expect(queue.length).toBe(6);
    expect(await drain(queue)).toEqual(['team_a/a0', 'team_b/b0', 'cluster-object', 'team_a/a1', 'team_b/b1', 'team_a/a2']);
  });

  it('serves teams in turns among resync keys too, and a change of any team before them', async () => {
    for (let i = 0; i < 100; i++) queue.addBackground(`team_a/r${i}`);
    queue.addBackground('team_b/r0');
    queue.add('team_c/change');
    const order = await drain(queue);
    expect(order.slice(0, 3)).toEqual(['team_c/change', 'team_a/r0', 'team_b/r0']);
  });

  it('serves teams by the key part a custom teamOf names', async () => {
    const relay = new WorkQueue({ teamOf: (key) => key.split('/')[1] ?? '' });
    for (let i = 0; i < 50; i++) relay.add(`Widget/team_a/w${i}`);
    relay.add('Widget/team_b/w0');
    expect((await drain(relay)).indexOf('Widget/team_b/w0')).toBeLessThan(2);
    relay.shutDown();
  });

  it('does not re-process a key that was not added while it was processed', async () => {
    queue.add('once');
    expect(await queue.get()).toBe('once');
    queue.done('once');
    expect(await nextWithin(queue, 30)).toBe('nothing');
  });

  it('backs off exponentially on failures, up to the cap, and starts over after forget', async () => {
    const delays = Array.from({ length: 6 }, () => queue.addRateLimited('f'));
    expect(delays).toEqual([20, 40, 80, 160, 200, 200]);
    queue.forget('f');
    expect(queue.addRateLimited('g')).toBe(20);
    expect(queue.addRateLimited('f')).toBe(20);
  });

  /** The key `queue.get()` hands out once the fake clock has run `ms` further, or undefined. */
  async function handedOutAfter(pending: { key?: string }, ms: number): Promise<string | undefined> {
    await jest.advanceTimersByTimeAsync(ms);
    return pending.key;
  }
  const nextKey = (q: WorkQueue) => {
    const pending: { key?: string } = {};
    void q.get().then((key) => (pending.key = key ?? undefined));
    return pending;
  };

  // On a fake clock: the due times are the queue's logic, not the machine's speed.
  it('brings a failed key back only after its backoff', async () => {
    jest.useFakeTimers();
    const slow = new WorkQueue({ backoff: { baseMs: 60, maxMs: 1_000 } });
    try {
      slow.add('f');
      expect(await slow.get()).toBe('f');
      slow.done('f');
      slow.addRateLimited('f'); // 60 ms
      slow.addRateLimited('f'); // a second failure: 120 ms, but the earlier pending add wins
      const back = nextKey(slow);
      expect(await handedOutAfter(back, 59)).toBeUndefined();
      expect(await handedOutAfter(back, 1)).toBe('f');
      slow.done('f');
      expect(await handedOutAfter(nextKey(slow), 200)).toBeUndefined(); // the later add-after was absorbed
    } finally {
      slow.shutDown();
      jest.useRealTimers();
    }
  });

  it('paces background keys to the rate asked for, while a change still goes out at once', async () => {
    jest.useFakeTimers();
    const paced = new WorkQueue({ backgroundPerSecond: 10 });
    try {
      for (const key of ['r1', 'r2', 'r3']) paced.addBackground(key);
      expect(await paced.get()).toBe('r1');
      paced.done('r1');
      const next = nextKey(paced);
      expect(await handedOutAfter(next, 50)).toBeUndefined(); // the next background key is due at 100 ms
      paced.add('change');
      expect(await handedOutAfter(next, 0)).toBe('change'); // the waiting worker takes a change at once
      paced.done('change');
      const after = nextKey(paced);
      expect(await handedOutAfter(after, 49)).toBeUndefined();
      expect(await handedOutAfter(after, 1)).toBe('r2');
      paced.done('r2');
      const last = nextKey(paced);
      expect(await handedOutAfter(last, 99)).toBeUndefined();
      expect(await handedOutAfter(last, 1)).toBe('r3');
    } finally {
      paced.shutDown();
      jest.useRealTimers();
    }
  });

  it('keeps the earlier of two delayed adds of a key', async () => {
    jest.useFakeTimers();
    const delayed = new WorkQueue({ backoff: { baseMs: 20, maxMs: 200 } });
    try {
      delayed.addAfter('x', 400);
      delayed.addAfter('x', 30);
      const first = nextKey(delayed);
      expect(await handedOutAfter(first, 29)).toBeUndefined();
      expect(await handedOutAfter(first, 1)).toBe('x');
      delayed.done('x');
      expect(await handedOutAfter(nextKey(delayed), 450)).toBeUndefined(); // the 400 ms timer was replaced, not kept
    } finally {
      delayed.shutDown();
      jest.useRealTimers();
    }
  });

  it('holds a delay longer than a Node timer can, instead of firing it at once', async () => {
    queue.addAfter('retention', 30 * 24 * 3600 * 1000); // 30 days
    expect(await nextWithin(queue, 50)).toBe('nothing');
  });

  it('adds at once for a delay of zero or less', async () => {
    queue.addAfter('now', 0);
    expect(queue.length).toBe(1);
  });

  it('lets the event loop turn while workers take key after key without waiting on I/O', async () => {
    const keys = 5_000;
    for (let i = 0; i < keys; i++) queue.add(`k${i}`);
    let taken = 0;
    let takenWhenTimerRan: number | null = null;
    setTimeout(() => (takenWhenTimerRan = taken), 0);
    // A pass answered from memory: some work, and no I/O to wait on.
    const pass = () => {
      for (const end = performance.now() + 0.05; performance.now() < end;);
    };
    const worker = async () => {
      for (let key = await queue.get(); key !== null; key = await queue.get()) {
        pass();
        queue.done(key);
        if (++taken === keys) queue.shutDown();
      }
    };
    await Promise.all([worker(), worker()]);
    // Without turns the timer would run only once every key was taken.
    expect(takenWhenTimerRan).not.toBeNull();
    expect(takenWhenTimerRan!).toBeLessThan(keys);
  });

  it('hands out resync keys in short slices of the event loop, so that requests wait little behind them', async () => {
    const keys = 2_000;
    for (let i = 0; i < keys; i++) queue.addBackground(`k${i}`);
    const turns = countEventLoopTurns();
    const takenInTurn = new Map<number, number>();
    const pass = () => {
      for (const end = performance.now() + 0.05; performance.now() < end;);
    };
    let taken = 0;
    const worker = async () => {
      for (let key = await queue.get(); key !== null; key = await queue.get()) {
        takenInTurn.set(turns.count, (takenInTurn.get(turns.count) ?? 0) + 1);
        pass();
        queue.done(key);
        if (++taken === keys) queue.shutDown();
      }
    };
    await Promise.all([worker(), worker()]);
    turns.stop();
    // Passes of at least 0.05 ms in a 0.25 ms budget: a few per turn, however slow the
    // machine (a slower pass only means fewer). In 2 ms slices it would be 40.
    expect(Math.max(...takenInTurn.values())).toBeLessThanOrEqual(8);
  });

  it('answers null to waiting and later workers after shutdown, and ignores adds', async () => {
    const waiting = queue.get();
    queue.addAfter('timer', 10);
    queue.shutDown();
    expect(await waiting).toBeNull();
    queue.add('ignored');
    expect(queue.length).toBe(0);
    expect(await queue.get()).toBeNull();
    await sleep(20);
    expect(queue.length).toBe(0);
  });
});

describe('Controller', () => {
  let dir: string;
  let store: EmbeddedStore;
  let controller: Controller | null = null;
  const logger = createLogger('silent');
  const thing = (id: string) => ({ meta: { kind: 'Widget', id, team: 'team_a' }, spec: { n: 0 }, status: {} });

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-ctrl-'));
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
  });
  afterEach(async () => {
    await controller?.stop();
    controller = null;
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('queues a resync of many objects in short turns of the event loop', async () => {
    const objects = 10_000;
    await Promise.all(Array.from({ length: objects }, (_, i) => store.create(thing(`w${i}`))));
    controller = new Controller(store, { kind: 'Widget', async reconcile(): Promise<undefined> {} }, { workers: 1, resyncMs: 60_000, logger });
    const turns = countEventLoopTurns();
    await controller.start();
    turns.stop();
    // Without the turns the keys were queued in one go, and this counted none.
    expect(turns.count).toBeGreaterThan(5);
  });

  it('skips a resync while the keys of the last one still wait, and resyncs again once they are done', async () => {
    // A resync reads the kind's keys (Store.keys), one call each.
    const listed = jest.spyOn(store, 'keys');
    const resyncsOfKind = () => listed.mock.calls.filter(([kind]) => kind === 'Widget').length;
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.create(thing(`w${i}`))));
    // At 10 passes a second the first resync's keys take about 5 s; the period is 100 ms.
    controller = new Controller(
      store,
      { kind: 'Widget', async reconcile(): Promise<undefined> {} },
      { workers: 1, resyncMs: 100, resyncPassesPerSecond: 10, logger },
    );
    await controller.start();
    await sleep(450);
    expect(resyncsOfKind()).toBe(1);
    await controller.stop();

    listed.mockClear();
    controller = new Controller(
      store,
      { kind: 'Widget', async reconcile(): Promise<undefined> {} },
      { workers: 1, resyncMs: 100, resyncPassesPerSecond: 100_000, logger },
    );
    await controller.start();
    for (const deadline = Date.now() + 10_000; resyncsOfKind() < 3; await sleep(20))
      if (Date.now() > deadline) throw new Error(`${resyncsOfKind()} resyncs in 10 s`);
  });

  it('queues no pass for a write that only took events out of the outbox; any other change of the status does', async () => {
    const passes: string[] = [];
    const reconciler: Reconciler = {
      kind: 'Widget',
      async reconcile(_team, id): Promise<undefined> {
        passes.push(id);
      },
    };
    const event = { id: 'evt_1', type: 'widget.created' };
    let widget = await store.create({ ...thing('w'), status: { state: 'a', pending_events: [event] } });
    // One worker and a first-in, first-out queue: once `marker` has had its pass, any pass the write before it queued has run.
    controller = new Controller(store, reconciler, { workers: 1, resyncMs: 60_000, logger });
    await controller.start();
    const passed = async (id: string, count: number) => {
      const deadline = Date.now() + 5_000;
      while (passes.filter((p) => p === id).length < count) {
        if (Date.now() > deadline) throw new Error(`${id} had ${passes.filter((p) => p === id).length} passes, not ${count}`);
        await sleep(5);
      }
    };
    await passed('w', 1);

    widget = await store.updateStatus({ ...widget, status: { state: 'a', pending_events: [] } });
    await store.create(thing('marker'));
    await passed('marker', 1);
    expect(passes.filter((p) => p === 'w')).toHaveLength(1);

    await store.updateStatus({ ...widget, status: { state: 'b', pending_events: [] } });
    await passed('w', 2);
  });

  it('reconciles what exists at start and what the watch reports, never one key in two workers at once', async () => {
    await store.create(thing('existing'));
    const active = new Set<string>();
    let overlap = false;
    const calls: string[] = [];
    const reconciler: Reconciler = {
      kind: 'Widget',
      async reconcile(team, id): Promise<undefined> {
        if (active.has(id)) overlap = true;
        active.add(id);
        calls.push(`${team}/${id}`);
        await sleep(15);
        active.delete(id);
      },
    };
    controller = new Controller(store, reconciler, { workers: 4, resyncMs: 60_000, logger });
    await controller.start();
    const created = await store.create(thing('busy'));
    // A burst of changes of one object while it is being reconciled.
    let current = created;
    for (let n = 1; n <= 5; n++) {
      current = await store.update({ ...current, spec: { n } });
      await sleep(3);
    }
    await sleep(120);
    expect(overlap).toBe(false);
    expect(calls).toContain('team_a/existing');
    const busyCalls = calls.filter((c) => c === 'team_a/busy').length;
    expect(busyCalls).toBeGreaterThanOrEqual(2); // the changes during a pass are looked at again
    expect(busyCalls).toBeLessThanOrEqual(6); // ... but coalesced, not once per change and worker
    // Other kinds are not this controller's business.
    const before = calls.length;
    await store.create({ meta: { kind: 'Gadget', id: 'g', team: 'team_a' }, spec: {}, status: {} });
    await sleep(30);
    expect(calls.length).toBe(before);
  });

  it('looks at an object again after the requeueAfter the reconciler asked for', async () => {
    const times: number[] = [];
    controller = new Controller(
      store,
      {
        kind: 'Widget',
        async reconcile() {
          times.push(Date.now());
          return times.length < 3 ? { requeueAfterMs: 80 } : undefined;
        },
      },
      { workers: 2, resyncMs: 60_000, logger },
    );
    await controller.start();
    await store.create(thing('polled'));
    await sleep(400);
    expect(times).toHaveLength(3);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(70);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(70);
  });

  it('retries a failing reconcile with growing pauses until it succeeds', async () => {
    const times: number[] = [];
    controller = new Controller(
      store,
      {
        kind: 'Widget',
        async reconcile(): Promise<undefined> {
          times.push(Date.now());
          if (times.length < 4) throw new Error('provider hiccup');
        },
      },
      { workers: 1, resyncMs: 60_000, logger },
    );
    await controller.start();
    await store.create(thing('flaky'));
    // Default backoff: 100, 200, 400 ms after the first three failures.
    await sleep(1_000);
    expect(times).toHaveLength(4);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[1]).toBeGreaterThanOrEqual(190);
    expect(gaps[2]).toBeGreaterThanOrEqual(390);
    await sleep(300);
    expect(times).toHaveLength(4); // success ends the retries
  });

  it('stops its workers on stop, even with timers pending', async () => {
    let calls = 0;
    controller = new Controller(
      store,
      {
        kind: 'Widget',
        async reconcile() {
          calls++;
          return { requeueAfterMs: 20 };
        },
      },
      { workers: 2, resyncMs: 60_000, logger },
    );
    await controller.start();
    await store.create(thing('stopping'));
    await sleep(30);
    await controller.stop();
    controller = null;
    const after = calls;
    await sleep(60);
    expect(calls).toBe(after);
  });
});
