import pino from 'pino';
import { NatsEventBus } from '../../src/events/nats-bus';
import type { CloudEvent } from '../../src/resources/cloud-event';
import { newId } from '../../src/lib/ids';
import { startNatsServer, NatsServer } from '../helpers/nats-server';
import { eventually } from '../helpers/service';

const logger = pino({ level: 'silent' });

function busFor(server: NatsServer): NatsEventBus {
  return new NatsEventBus({
    servers: [server.url],
    stream: 'TEST_EVENTS',
    subjectPrefix: 'cloudplane.events',
    duplicateWindowMs: 60_000,
    maxAgeMs: 3_600_000,
    logger,
  });
}

function event(team: string, type: string, n = 0): CloudEvent {
  return { id: newId('evt'), type, created_at: new Date(Date.now() + n).toISOString(), team_id: team, actor: 'system', data: { n } };
}

describe('NATS JetStream event bus', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => server.stop());

  it('drops a second publish of the same event id and filters recent() by team', async () => {
    const bus = busFor(server);
    await bus.start();
    try {
      const since = new Date(Date.now() - 1000).toISOString();
      const a = event('team_aaaaaaaaaaaaaaaa', 'load_balancer.created');
      await bus.publish(a);
      await bus.publish(a);
      await bus.publish(event('team_bbbbbbbbbbbbbbbb', 'load_balancer.created'));
      const mine = await bus.recent('team_aaaaaaaaaaaaaaaa', since);
      expect(mine.map((e) => e.id)).toEqual([a.id]);
      expect(await bus.recent('team_cccccccccccccccc', since)).toEqual([]);
    } finally {
      await bus.stop();
    }
  });

  it('resumes a durable consumer where it left off, across a restart of the service and a SIGKILL of nats-server', async () => {
    const team = 'team_dddddddddddddddd';
    const published: string[] = [];
    const seen: string[] = [];
    let bus = busFor(server);
    await bus.start();
    bus.subscribe('audit-test', async (e) => {
      if (e.team_id === team) seen.push(e.id);
    });
    for (let i = 0; i < 20; i++) {
      const e = event(team, 'server.running', i);
      await bus.publish(e);
      published.push(e.id);
    }
    await eventually(async () => seen.length >= 20);
    await bus.stop();

    // Published while the consumer is away, then nats-server crashes and comes back.
    bus = busFor(server);
    await bus.start();
    for (let i = 0; i < 10; i++) {
      const e = event(team, 'server.stopped', i);
      await bus.publish(e);
      published.push(e.id);
    }
    await server.kill();
    await server.restart();
    await eventually(
      async () => {
        try {
          const e = event(team, 'server.destroyed');
          await bus.publish(e);
          published.push(e.id);
          return true;
        } catch {
          return false;
        }
      },
      20_000,
      200,
    );
    bus.subscribe('audit-test', async (e) => {
      if (e.team_id === team) seen.push(e.id);
    });
    await eventually(async () => new Set(seen).size >= published.length, 20_000);
    await bus.stop();
    expect(new Set(seen)).toEqual(new Set(published));
  });

  it('hands a failing event back to its handler until it succeeds, in order', async () => {
    const team = 'team_eeeeeeeeeeeeeeee';
    const bus = busFor(server);
    await bus.start();
    try {
      const first = event(team, 'job.failed', 1);
      const second = event(team, 'job.completed', 2);
      await bus.publish(first);
      await bus.publish(second);
      const calls: string[] = [];
      let failures = 2;
      bus.subscribe('retry-test', async (e) => {
        if (e.team_id !== team) return;
        calls.push(e.id);
        if (e.id === first.id && failures-- > 0) throw new Error('receiver down');
      });
      await eventually(async () => calls.includes(second.id));
      expect(calls).toEqual([first.id, first.id, first.id, second.id]);
    } finally {
      await bus.stop();
    }
  });

  it('with a concurrency, handles that many events at once, and a slow one holds up no other', async () => {
    const team = 'team_gggggggggggggggg';
    const bus = busFor(server);
    await bus.start();
    try {
      const slow = event(team, 'job.running', 0);
      await bus.publish(slow);
      const rest = Array.from({ length: 11 }, (_, i) => event(team, 'job.completed', i + 1));
      for (const e of rest) await bus.publish(e);
      let release: () => void = () => undefined;
      let inFlight = 0;
      let most = 0;
      const done: string[] = [];
      bus.subscribe(
        'parallel-test',
        async (e) => {
          if (e.team_id !== team) return;
          most = Math.max(most, ++inFlight);
          if (e.id === slow.id) await new Promise<void>((resolve) => (release = resolve));
          else await new Promise((resolve) => setTimeout(resolve, 20));
          inFlight--;
          done.push(e.id);
        },
        { concurrency: 4 },
      );
      await eventually(async () => done.length === rest.length);
      expect(done).not.toContain(slow.id);
      release();
      await eventually(async () => done.includes(slow.id));
      expect(most).toBe(4);
      expect(new Set(done)).toEqual(new Set([slow, ...rest].map((e) => e.id)));
    } finally {
      await bus.stop();
    }
  });

  it('reports the events a durable consumer has yet to finish, until it catches up', async () => {
    const bus = busFor(server);
    await bus.start();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const team = 'team_hhhhhhhhhhhhhhhh';
    try {
      // The stream holds the events of the tests before: those pass, this test's wait.
      bus.subscribe('lag-test', (e) => (e.team_id === team ? gate : Promise.resolve()));
      // A follower (the audit log's) has no durable position, and no lag to report.
      const stopFollowing = bus.follow(new Date().toISOString(), () => undefined);
      for (let i = 0; i < 5; i++) await bus.publish(event(team, 'server.running', i));
      // One in the handler and four behind it, delivered or not, none acknowledged.
      await eventually(async () => (await bus.pending())['lag-test'] === 5);
      release();
      await eventually(async () => (await bus.pending())['lag-test'] === 0);
      expect(Object.keys(await bus.pending())).toEqual(['lag-test']);
      stopFollowing();
    } finally {
      release();
      await bus.stop();
    }
  });
});

describe('NATS JetStream event bus: follow', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => server.stop());

  it('replays from a time, then follows new events, across a nats-server crash', async () => {
    const bus = busFor(server);
    await bus.start();
    try {
      const old = event('team_ffffffffffffffff', 'bucket.created', -60_000);
      await bus.publish(old);
      const since = new Date(Date.now() - 1000).toISOString();
      const before = event('team_ffffffffffffffff', 'bucket.available');
      await bus.publish(before);
      const seen: string[] = [];
      const stop = bus.follow(since, (e) => seen.push(e.id));
      await eventually(async () => seen.includes(before.id));
      await server.kill();
      await server.restart();
      const after = event('team_ffffffffffffffff', 'bucket.deleted');
      await eventually(
        async () =>
          bus.publish(after).then(
            () => true,
            () => false,
          ),
        20_000,
        200,
      );
      await eventually(async () => seen.includes(after.id), 20_000);
      stop();
      // The stream's time index is of publish time, so `old` (published just now) is replayed too.
      expect(seen.filter((id) => id === before.id || id === after.id)).toEqual([before.id, after.id]);
    } finally {
      await bus.stop();
    }
  });
});
