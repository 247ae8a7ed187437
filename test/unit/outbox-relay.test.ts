/**
 * The outbox relay on the embedded store and bus: every event in an outbox reaches the bus
 * once and leaves the outbox, and a slow publish of one object's events holds up no other
 * object's (the relay used to work one object at a time).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { EmbeddedStore } from '../../src/store/embedded';
import { ConflictError, StoredObject } from '../../src/store/types';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import { OutboxRelay } from '../../src/events/outbox-relay';
import type { CloudEvent } from '../../src/resources/cloud-event';
import { newId } from '../../src/lib/ids';

const KIND = 'Bucket';
const TEAM = 'team_relay00000000000000';

/** The real bus, with a gate that holds the publish of chosen events until released. */
class GatedBus extends EmbeddedEventBus {
  readonly held = new Map<string, () => void>();
  /** How often each event was handed to publish. */
  readonly calls = new Map<string, number>();
  private readonly gates = new Map<string, Promise<void>>();
  hold(eventId: string): void {
    this.gates.set(eventId, new Promise<void>((resolve) => this.held.set(eventId, resolve)));
  }
  override async publish(event: CloudEvent): Promise<void> {
    this.calls.set(event.id, (this.calls.get(event.id) ?? 0) + 1);
    await this.gates.get(event.id);
    return super.publish(event);
  }
}

/** The real store, made to lose every status write to another writer while `losing` is set. */
class LosingStore extends EmbeddedStore {
  losing = false;
  /** Status writes still to lose, then win. */
  loseNext = 0;
  lost = 0;
  /** Status writes that went through. */
  written = 0;
  override async updateStatus<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>> {
    if (this.losing || this.loseNext > 0) {
      this.loseNext = Math.max(0, this.loseNext - 1);
      this.lost++;
      throw new ConflictError(object.meta.kind, object.meta.id);
    }
    const written = await super.updateStatus(object);
    this.written++;
    return written;
  }
}

const event = (objectId: string, type: string): CloudEvent => ({
  id: newId('evt'),
  type,
  created_at: new Date().toISOString(),
  team_id: TEAM,
  actor: 'system',
  data: { id: objectId },
});

async function until(probe: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('OutboxRelay', () => {
  let dir: string;
  let store: LosingStore;
  let bus: GatedBus;
  let relay: OutboxRelay;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-relay-'));
    store = new LosingStore({ dataDir: path.join(dir, 'store') });
    await store.start();
    bus = new GatedBus(path.join(dir, 'bus'));
    await bus.start();
    // These take published events out at once; the deferred removal has tests of its own below.
    relay = new OutboxRelay(store, bus, [KIND], pino({ level: 'silent' }), { drainDelayMs: 0 });
  });
  afterEach(async () => {
    for (const release of bus.held.values()) release();
    await relay.stop();
    await bus.stop();
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const published = async () => (await bus.recent(TEAM, '1970-01-01T00:00:00Z')).map((e) => e.id);
  const outboxOf = async (id: string) => ((await store.get(KIND, TEAM, id))?.status as { pending_events: CloudEvent[] }).pending_events;

  it("publishes each object's events in order and empties the outboxes, one slow publish holding up no other object", async () => {
    const slow = event('bkt_slow', 'bucket.created');
    bus.hold(slow.id);
    await store.create({
      meta: { kind: KIND, id: 'bkt_slow', team: TEAM },
      spec: {},
      status: { pending_events: [slow, event('bkt_slow', 'bucket.available')] },
    });
    await relay.start();
    const others = Array.from({ length: 5 }, (_, i) => [event(`bkt_${i}`, 'bucket.created'), event(`bkt_${i}`, 'bucket.available')]);
    for (const [i, pending] of others.entries()) {
      await store.create({ meta: { kind: KIND, id: `bkt_${i}`, team: TEAM }, spec: {}, status: { pending_events: pending } });
    }

    const otherIds = others.flat().map((e) => e.id);
    await until(async () => {
      const all = await published();
      return otherIds.every((id) => all.includes(id));
    });
    for (let i = 0; i < others.length; i++) await until(async () => (await outboxOf(`bkt_${i}`)).length === 0);
    expect(await published()).not.toContain(slow.id);
    expect(await outboxOf('bkt_slow')).toHaveLength(2);

    bus.held.get(slow.id)!();
    await until(async () => (await outboxOf('bkt_slow')).length === 0);
    const all = await published();
    expect(all).toHaveLength(12);
    // Within one object, the order of its outbox.
    for (const pending of [...others, [slow]]) {
      const positions = pending.map((e) => all.indexOf(e.id));
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
    }
  });

  it('backs off through its queue when it keeps losing the outbox write, instead of spinning', async () => {
    const created = event('bkt_busy', 'bucket.created');
    await store.create({ meta: { kind: KIND, id: 'bkt_busy', team: TEAM }, spec: {}, status: { pending_events: [created] } });
    store.losing = true;
    await relay.start();
    // A relay retrying without pause never lets a timer fire (the losing write does no I/O):
    // this wait would never end.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lostWhileLosing = store.lost;
    expect(lostWhileLosing).toBeGreaterThan(0);
    expect(lostWhileLosing).toBeLessThan(100);
    store.losing = false;
    await until(async () => (await outboxOf('bkt_busy')).length === 0);
    expect(await published()).toEqual([created.id]);
  });

  it('publishes each event once while it retries a removal that lost to another writer', async () => {
    const pending = [event('bkt_hot', 'bucket.created'), event('bkt_hot', 'bucket.available'), event('bkt_hot', 'bucket.deleted')];
    await store.create({ meta: { kind: KIND, id: 'bkt_hot', team: TEAM }, spec: {}, status: { pending_events: pending } });
    // Fewer losses than a pass allows: the same pass retries the removal.
    store.loseNext = 5;
    await relay.start();
    await until(async () => (await outboxOf('bkt_hot')).length === 0);
    expect(store.lost).toBe(5);
    expect(await published()).toEqual(pending.map((e) => e.id));
    // Each retry used to publish the whole outbox again (and count it again in the metric).
    expect(pending.map((e) => bus.calls.get(e.id))).toEqual([1, 1, 1]);
  });

  it("leaves published events to the object's next write, which takes them out with its own change: no write of the relay's", async () => {
    // Longer than any test runs: only another write can empty this outbox.
    relay = new OutboxRelay(store, bus, [KIND], pino({ level: 'silent' }), { drainDelayMs: 600_000 });
    const created = event('bkt_next', 'bucket.created');
    await store.create({ meta: { kind: KIND, id: 'bkt_next', team: TEAM }, spec: {}, status: { state: 'creating', pending_events: [created] } });
    await relay.start();
    await until(async () => (await published()).includes(created.id));
    expect(relay.isPublished(created.id)).toBe(true);
    expect(await outboxOf('bkt_next')).toEqual([created]);

    // The next step of the lifecycle, as a reconciler writes it: what the relay published leaves, its own event joins.
    const available = event('bkt_next', 'bucket.available');
    const current = (await store.get(KIND, TEAM, 'bkt_next'))!;
    const outbox = (current.status as { pending_events: CloudEvent[] }).pending_events;
    await store.updateStatus({ ...current, status: { state: 'available', pending_events: [...outbox.filter((e) => !relay.isPublished(e.id)), available] } });
    await until(async () => (await published()).includes(available.id));

    expect(await outboxOf('bkt_next')).toEqual([available]);
    expect(store.written).toBe(1);
    expect(await published()).toEqual([created.id, available.id]);
    expect([created, available].map((e) => bus.calls.get(e.id))).toEqual([1, 1]);
  });

  it('takes published events out itself once the delay has passed without another write', async () => {
    relay = new OutboxRelay(store, bus, [KIND], pino({ level: 'silent' }), { drainDelayMs: 200 });
    const pending = [event('bkt_idle', 'bucket.created'), event('bkt_idle', 'bucket.available')];
    await store.create({ meta: { kind: KIND, id: 'bkt_idle', team: TEAM }, spec: {}, status: { pending_events: pending } });
    await relay.start();
    await until(async () => (await outboxOf('bkt_idle')).length === 0);
    expect(store.written).toBe(1);
    expect(await published()).toEqual(pending.map((e) => e.id));
    // Out of the outbox, out of the relay's memory.
    expect(pending.map((e) => relay.isPublished(e.id))).toEqual([false, false]);
  });

  it("leaves published events to the object's next write within the delay: no write of the relay's", async () => {
    relay = new OutboxRelay(store, bus, [KIND], pino({ level: 'silent' }), { drainDelayMs: 600_000 });
    const created = event('bkt_next', 'bucket.created');
    await store.create({ meta: { kind: KIND, id: 'bkt_next', team: TEAM }, spec: {}, status: { state: 'creating', pending_events: [created] } });
    await relay.start();
    await until(async () => relay.isPublished(created.id));
    expect(store.written).toBe(0);

    // The next write, as the writer makes it (writer.ts writeStatus), leaves out what the relay published.
    const current = (await store.get(KIND, TEAM, 'bkt_next'))!;
    await store.updateStatus({ ...current, status: { state: 'running', pending_events: [created].filter((e) => !relay.isPublished(e.id)) } });
    await until(async () => !relay.isPublished(created.id));
    expect(store.written).toBe(1);
    expect(await published()).toEqual([created.id]);
  });

  it('leaves published events in the outbox on a graceful stop; the next relay publishes them again, which the bus ignores', async () => {
    relay = new OutboxRelay(store, bus, [KIND], pino({ level: 'silent' }), { drainDelayMs: 600_000 });
    const created = event('bkt_stop', 'bucket.created');
    await store.create({ meta: { kind: KIND, id: 'bkt_stop', team: TEAM }, spec: {}, status: { pending_events: [created] } });
    await relay.start();
    await until(async () => (await published()).includes(created.id));
    await relay.stop();
    expect(await outboxOf('bkt_stop')).toEqual([created]);
    expect(store.written).toBe(0);

    relay = new OutboxRelay(store, bus, [KIND], pino({ level: 'silent' }), { drainDelayMs: 0 });
    await relay.start();
    await until(async () => (await outboxOf('bkt_stop')).length === 0);
    expect(await published()).toEqual([created.id]);
  });
});
