/**
 * The embedded event bus: durable publish with duplicate ids dropped, durable consumers
 * that resume where they left off and get a failed event again, recent() by team.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import type { BackgroundWrite } from '../../src/store/background-write';
import type { CloudEvent } from '../../src/resources/cloud-event';
import { newId } from '../../src/lib/ids';
import { registry, reportEventConsumers } from '../../src/metrics';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const event = (type: string, team = 'team_a', createdAt = new Date().toISOString(), id = newId('evt')): CloudEvent => ({
  id,
  type,
  created_at: createdAt,
  team_id: team,
  actor: 'system',
  data: { id: 'lb_0123456789abcdefghij', status: type.split('.')[1] },
});

async function until(probe: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

describe('EmbeddedEventBus', () => {
  let dir: string;
  let bus: EmbeddedEventBus;
  const open = async () => {
    const b = new EmbeddedEventBus(dir);
    await b.start();
    return b;
  };
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bus-'));
    bus = await open();
  });
  afterEach(async () => {
    await bus.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps published events across a restart, and drops a second publish of an id', async () => {
    const e = event('load_balancer.created');
    await bus.publish(e);
    await bus.publish({ ...e, type: 'load_balancer.changed_meanwhile' });
    await Promise.all([
      bus.publish(event('x.racing', 'team_a', e.created_at, 'evt_racing00000000000')),
      bus.publish(event('x.racing', 'team_a', e.created_at, 'evt_racing00000000000')),
    ]);
    expect((await bus.recent('team_a', '1970-01-01T00:00:00.000Z')).map((x) => x.id)).toEqual([e.id, 'evt_racing00000000000']);
    await bus.stop();

    bus = await open();
    const after = await bus.recent('team_a', '1970-01-01T00:00:00.000Z');
    expect(after).toEqual([e, expect.objectContaining({ id: 'evt_racing00000000000' })]);
    // Still a duplicate after the restart.
    await bus.publish(e);
    expect(await bus.recent('team_a', '1970-01-01T00:00:00.000Z')).toHaveLength(2);
    expect(fs.readFileSync(path.join(dir, 'events.log'), 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it("answers recent() with one team's events from a moment on, oldest first", async () => {
    await bus.publish(event('a.old', 'team_a', '2026-01-01T00:00:00.000Z'));
    await bus.publish(event('b.old', 'team_b', '2026-01-01T00:00:00.000Z'));
    await bus.publish(event('a.edge', 'team_a', '2026-02-01T00:00:00.000Z'));
    await bus.publish(event('a.new', 'team_a', '2026-03-01T00:00:00.000Z'));
    await bus.publish(event('b.new', 'team_b', '2026-03-01T00:00:00.000Z'));
    expect((await bus.recent('team_a', '2026-02-01T00:00:00.000Z')).map((e) => e.type)).toEqual(['a.edge', 'a.new']);
    expect((await bus.recent('team_b', '1970-01-01T00:00:00.000Z')).map((e) => e.type)).toEqual(['b.old', 'b.new']);
    expect(await bus.recent('team_c', '1970-01-01T00:00:00.000Z')).toEqual([]);
  });

  it('hands a consumer every event in order, including those published before it subscribed', async () => {
    await bus.publish(event('e.1'));
    await bus.publish(event('e.2'));
    const seen: string[] = [];
    bus.subscribe('ordered', async (e) => {
      seen.push(e.type);
      await sleep(2);
    });
    for (let i = 3; i <= 20; i++) void bus.publish(event(`e.${i}`));
    await until(() => seen.length === 20);
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => `e.${i + 1}`));
    expect(() => bus.subscribe('ordered', async () => undefined)).toThrow('consumer ordered is already subscribed');
  });

  it('resumes a durable consumer after a restart where it left off', async () => {
    const first: string[] = [];
    bus.subscribe('mailer', async (e) => {
      first.push(e.type);
    });
    for (let i = 1; i <= 5; i++) await bus.publish(event(`e.${i}`));
    await until(() => first.length === 5);
    await bus.stop();

    bus = await open();
    for (let i = 6; i <= 8; i++) await bus.publish(event(`e.${i}`));
    const second: string[] = [];
    bus.subscribe('mailer', async (e) => {
      second.push(e.type);
    });
    // Another consumer starts from the beginning; positions are per name.
    const fresh: string[] = [];
    bus.subscribe('auditor', async (e) => {
      fresh.push(e.type);
    });
    await until(() => second.length === 3 && fresh.length === 8);
    await sleep(50);
    expect(second).toEqual(['e.6', 'e.7', 'e.8']);
    expect(fresh).toHaveLength(8);
  });

  it('after a crash, hands a consumer everything past its last saved position again, at least once', async () => {
    const first: string[] = [];
    const unsubscribe = bus.subscribe('worker', async (e) => {
      first.push(e.type);
    });
    for (let i = 1; i <= 3; i++) await bus.publish(event(`e.${i}`));
    await until(() => first.length === 3);
    await sleep(400); // positions are saved in batches, 200 ms apart
    for (let i = 4; i <= 6; i++) await bus.publish(event(`e.${i}`));
    await until(() => first.length === 6);
    // The process dies now, before the batch of positions for e.4-e.6 is saved: no stop(),
    // and the pending save never happens.
    unsubscribe();
    void (bus as unknown as { positionsWrite: BackgroundWrite }).positionsWrite.stop();

    bus = await open();
    const second: string[] = [];
    bus.subscribe('worker', async (e) => {
      second.push(e.type);
    });
    await bus.publish(event('e.7'));
    await until(() => second.includes('e.7'));
    // Nothing is skipped: everything past the saved position comes again, in order.
    expect(second).toEqual(['e.4', 'e.5', 'e.6', 'e.7']);
  });

  it('gives a throwing handler the same event again, and holds later events back until it succeeds', async () => {
    const attempts: string[] = [];
    let failuresLeft = 2;
    bus.subscribe('flaky', async (e) => {
      attempts.push(e.type);
      if (e.type === 'e.1' && failuresLeft-- > 0) throw new Error('receiver down');
    });
    await bus.publish(event('e.1'));
    await bus.publish(event('e.2'));
    await until(() => attempts.includes('e.2'), 5_000);
    expect(attempts).toEqual(['e.1', 'e.1', 'e.1', 'e.2']);
  });

  it('with a concurrency, keeps that many events in the handler at once and handles each', async () => {
    let inFlight = 0;
    let most = 0;
    const handled: string[] = [];
    bus.subscribe(
      'parallel',
      async (e) => {
        most = Math.max(most, ++inFlight);
        await sleep(20);
        inFlight--;
        handled.push(e.type);
      },
      { concurrency: 4 },
    );
    await Promise.all(Array.from({ length: 10 }, (_, i) => bus.publish(event(`e.${i}`))));
    await until(() => handled.length === 10);
    await sleep(50);
    expect(most).toBe(4);
    expect([...handled].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `e.${i}`).sort());
  });

  it('with a concurrency, saves a position only past events that all finished, so a restart skips none', async () => {
    const first = event('e.0');
    await bus.publish(first);
    for (let i = 1; i <= 4; i++) await bus.publish(event(`e.${i}`));
    const finished: string[] = [];
    bus.subscribe(
      'partial',
      async (e) => {
        // e.0 never finishes in this life of the bus; the later ones do, out of order.
        if (e.id === first.id) return new Promise<void>(() => undefined);
        finished.push(e.type);
      },
      { concurrency: 8 },
    );
    await until(() => finished.length === 4);
    await sleep(300); // past the batched save of positions
    await bus.stop();

    bus = await open();
    const again: string[] = [];
    bus.subscribe('partial', async (e) => {
      again.push(e.type);
    });
    await until(() => again.length === 5);
    // Nothing past e.0 was acknowledged as a whole, so all five come again, e.0 first.
    expect(again).toEqual(['e.0', 'e.1', 'e.2', 'e.3', 'e.4']);
  });

  it('with a concurrency, moves the position on once the holdout finishes', async () => {
    let release: () => void = () => undefined;
    const held = event('e.0');
    await bus.publish(held);
    for (let i = 1; i <= 3; i++) await bus.publish(event(`e.${i}`));
    const finished: string[] = [];
    bus.subscribe(
      'holdout',
      async (e) => {
        if (e.id === held.id) await new Promise<void>((resolve) => (release = resolve));
        finished.push(e.type);
      },
      { concurrency: 8 },
    );
    await until(() => finished.length === 3);
    release();
    await until(() => finished.length === 4);
    await sleep(300);
    await bus.stop();

    bus = await open();
    const again: string[] = [];
    bus.subscribe('holdout', async (e) => {
      again.push(e.type);
    });
    await bus.publish(event('e.4'));
    await until(() => again.length >= 1);
    await sleep(50);
    expect(again).toEqual(['e.4']);
  });

  it('stops handing events to a consumer once unsubscribed', async () => {
    const seen: string[] = [];
    const unsubscribe = bus.subscribe('short', async (e) => {
      seen.push(e.type);
    });
    await bus.publish(event('e.1'));
    await until(() => seen.length === 1);
    unsubscribe();
    await bus.publish(event('e.2'));
    await sleep(50);
    expect(seen).toEqual(['e.1']);
  });

  it('skips nothing when a consumer is subscribed again while its old handler is still busy', async () => {
    let releaseSlow: () => void = () => undefined;
    let slowStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (slowStarted = resolve));
    const unsubscribeSlow = bus.subscribe('resubscribed', async () => {
      slowStarted();
      await new Promise<void>((resolve) => (releaseSlow = resolve));
    });
    for (let i = 1; i <= 3; i++) await bus.publish(event(`e.${i}`));
    await started;
    // The first handler is stuck on e.1 when its owner unsubscribes and subscribes anew.
    unsubscribeSlow();
    const seen: string[] = [];
    bus.subscribe('resubscribed', async (e) => {
      seen.push(e.type);
      await sleep(20);
    });
    await sleep(5);
    releaseSlow(); // the old handler finishes e.1 while the new one is at it too
    await until(() => seen.includes('e.3'));
    await sleep(50);
    expect(seen).toEqual(['e.1', 'e.2', 'e.3']);
  });

  it('hands a consumer and a follower that are further behind than the texts kept in memory every event, read back from the log', async () => {
    // More than the 1,024 newest texts the bus keeps, and than one read of the log (1 MiB: these are 1.6 MB).
    const published = Array.from({ length: 2_500 }, (_, i) => ({
      ...event(`e.${i}`),
      data: { n: i, name: `ünïcödé ${'x'.repeat(i % 50)}`, pad: 'p'.repeat(450) },
    }));
    for (let i = 0; i < published.length; i += 100) await Promise.all(published.slice(i, i + 100).map((e) => bus.publish(e)));
    const followed: CloudEvent[] = [];
    bus.follow('1970-01-01T00:00:00.000Z', (e) => followed.push(e))();
    expect(followed).toEqual(published);
    const seen: CloudEvent[] = [];
    bus.subscribe('late', async (e) => {
      seen.push(e);
    });
    await until(() => seen.length === published.length);
    expect(seen).toEqual(published);
  });

  it('lets a follower see the stream from a moment on, then every new event', async () => {
    await bus.publish(event('old', 'team_a', '2026-01-01T00:00:00.000Z'));
    await bus.publish(event('recent', 'team_a', '2026-06-01T00:00:00.000Z'));
    const seen: string[] = [];
    const stop = bus.follow('2026-05-01T00:00:00.000Z', (e) => seen.push(e.type));
    await bus.publish(event('live', 'team_b'));
    stop();
    await bus.publish(event('after'));
    expect(seen).toEqual(['recent', 'live']);
  });

  it("reports each consumer's lag, as the bus and as cloudplane_event_consumer_pending, until it catches up", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    bus.subscribe('slow', () => gate, { concurrency: 2 });
    bus.subscribe('quick', async () => undefined);
    for (let i = 0; i < 5; i++) await bus.publish(event(`load_balancer.e${i}`));
    // Two in the handler and three not handed out yet are all still to finish.
    expect(await bus.pending()).toEqual({ slow: 5, quick: 0 });
    reportEventConsumers(() => bus.pending());
    expect(await registry.getSingleMetricAsString('cloudplane_event_consumer_pending')).toMatch(/cloudplane_event_consumer_pending\{consumer="slow"\} 5/);
    release();
    const drained = async () => (await bus.pending()).slow === 0;
    for (const deadline = Date.now() + 5_000; !(await drained()); await sleep(10)) if (Date.now() > deadline) throw new Error('the consumer never caught up');
    expect(await registry.getSingleMetricAsString('cloudplane_event_consumer_pending')).toMatch(/cloudplane_event_consumer_pending\{consumer="slow"\} 0/);
  });

  it('ignores a torn last event on restart', async () => {
    const kept = event('kept');
    await bus.publish(kept);
    await bus.stop();
    fs.appendFileSync(path.join(dir, 'events.log'), '{"id":"evt_torn","type":"load_bal');
    bus = await open();
    expect(await bus.recent('team_a', '1970-01-01T00:00:00.000Z')).toEqual([kept]);
    await bus.publish(event('next'));
    await bus.stop();
    bus = await open();
    expect((await bus.recent('team_a', '1970-01-01T00:00:00.000Z')).map((e) => e.type)).toEqual(['kept', 'next']);
  });
});
