/**
 * Retention of the embedded event log (real files): AppendLog.rewrite drops a prefix
 * crash-safely while appends go on, and the bus drops events older than its retention
 * from events.log and from memory, so both level off under a steady stream; durable
 * consumers neither skip nor repeat an unexpired event across compactions and a restart,
 * and a log from before retention (no header) still opens.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppendLog } from '../../src/store/append-log';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import type { CloudEvent } from '../../src/resources/cloud-event';
import { newId } from '../../src/lib/ids';
import { eventLogEvents } from '../../src/metrics';
import { eventually } from '../helpers/service';

const EPOCH = '1970-01-01T00:00:00.000Z';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const records = (file: string) =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

const event = (n: number, createdAt = new Date().toISOString()): CloudEvent => ({
  id: newId('evt'),
  type: `load_balancer.e${n}`,
  created_at: createdAt,
  team_id: 'team_a',
  actor: 'system',
  data: { id: 'lb_0123456789abcdefghij', n, pad: 'x'.repeat(200) },
});

describe('AppendLog.rewrite', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-rewrite-'));
    file = path.join(dir, 'test.log');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps the records from one on behind a header, with appends made meanwhile after them', async () => {
    const log = new AppendLog(file);
    log.open();
    // Enough to take a few copy rounds while appends go on.
    await Promise.all(Array.from({ length: 20_000 }, (_, n) => log.append({ n, pad: 'y'.repeat(100) })));
    let switchedAt = -1;
    const during: Array<Promise<void>> = [];
    const rewritten = log.rewrite(15_000, { header: { base: 15_000 } }, () => {
      switchedAt = Date.now();
    });
    for (let n = 20_000; n < 20_500; n++) {
      during.push(log.append({ n, pad: 'y'.repeat(100) }));
      if (n % 50 === 0) await sleep(0);
    }
    await Promise.all([rewritten, ...during]);
    expect(switchedAt).toBeGreaterThan(0);
    await log.append({ n: 20_500, pad: 'y'.repeat(100) });
    expect(log.records).toBe(1 + 5_501);
    await log.close();

    const reopened = new AppendLog(file);
    const all = reopened.open<{ n?: number; header?: { base: number } }>();
    expect(all[0]).toEqual({ header: { base: 15_000 } });
    expect(all.slice(1).map((r) => r.n)).toEqual(Array.from({ length: 5_501 }, (_, i) => 15_000 + i));
    expect(fs.readdirSync(dir)).toEqual(['test.log']);
    await reopened.close();
  });

  it('counts an earlier header as a record, and leaves the log as it was when the rewrite fails', async () => {
    const log = new AppendLog(file);
    log.open();
    for (let n = 0; n < 10; n++) await log.append({ n });
    await log.rewrite(4, { header: { base: 4 } }, () => undefined);
    await log.rewrite(3, { header: { base: 6 } }, () => undefined); // the header and n = 4, 5
    expect(records(file)).toEqual([{ header: { base: 6 } }, ...[6, 7, 8, 9].map((n) => ({ n }))]);
    // The directory is gone: the new log cannot be made, and the old one goes on.
    const moved = `${dir}-moved`;
    fs.renameSync(dir, moved);
    await expect(log.rewrite(2, { header: { base: 7 } }, () => undefined)).rejects.toThrow(/ENOENT/);
    fs.renameSync(moved, dir);
    await log.append({ n: 10 });
    await log.close();
    expect(records(file)).toEqual([{ header: { base: 6 } }, ...[6, 7, 8, 9, 10].map((n) => ({ n }))]);
  });

  it('ignores the unfinished new log of a rewrite that a crash cut short', async () => {
    fs.writeFileSync(file, '{"n":0}\n{"n":1}\n');
    fs.writeFileSync(`${file}.rewrite`, '{"header":{"base":1}}\n{"n":1}\n{"n":');
    const log = new AppendLog(file);
    expect(log.open()).toEqual([{ n: 0 }, { n: 1 }]);
    expect(fs.existsSync(`${file}.rewrite`)).toBe(false);
    await log.close();
  });
});

describe('EmbeddedEventBus retention', () => {
  let dir: string;
  const buses: EmbeddedEventBus[] = [];
  const open = async (retentionMs?: number) => {
    const bus = new EmbeddedEventBus(dir, { retentionMs });
    await bus.start();
    buses.push(bus);
    return bus;
  };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-retention-'));
  });
  afterEach(async () => {
    for (const bus of buses.splice(0)) await bus.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('levels off in events.log and in memory under tens of thousands of events through a 1 s retention', async () => {
    const bus = await open(1_000);
    const logFile = path.join(dir, 'events.log');
    const samples: Array<{ at: number; published: number; kept: number; bytes: number }> = [];
    const started = Date.now();
    let published = 0;
    // 40,000 events, about 5,000 a second.
    while (published < 40_000) {
      await Promise.all(Array.from({ length: 100 }, () => bus.publish(event(published++))));
      if (published % 1_000 === 0) {
        samples.push({ at: Date.now() - started, published, kept: (await bus.recent('team_a', EPOCH)).length, bytes: fs.statSync(logFile).size });
      }
      await sleep(20);
    }
    // Levelled off: at every moment past the first few retentions, what is kept is no more
    // than what was published in the last 3 s (a retention, 4/3 of it before a compaction,
    // a check period and room for a slow machine), however many came before.
    const publishedSince = (at: number) => samples.filter((s) => s.at <= at).reduce((latest, s) => Math.max(latest, s.published), 0);
    const warm = samples.filter((s) => s.at > 3_000);
    expect(warm.length).toBeGreaterThan(10);
    const perEvent = fs.statSync(logFile).size / Math.max(1, (await bus.recent('team_a', EPOCH)).length);
    for (const s of warm) {
      const recent = s.published - publishedSince(s.at - 3_000);
      expect({ at: s.at, kept: s.kept <= recent, bytes: s.bytes <= recent * perEvent * 1.1 + 100 }).toEqual({ at: s.at, kept: true, bytes: true });
    }
    expect(Math.max(...warm.map((s) => s.kept))).toBeLessThan(published / 3);
    expect((await eventLogEvents.get()).values[0].value).toBe((await bus.recent('team_a', EPOCH)).length);
    // Everything kept is unexpired or about to expire, and it is the newest part of the stream.
    const kept = await bus.recent('team_a', EPOCH);
    expect(kept[kept.length - 1].data.n).toBe(published - 1);
    expect(kept.map((e) => e.data.n)).toEqual(Array.from({ length: kept.length }, (_, i) => published - kept.length + i));
  });

  it('hands durable consumers every unexpired event once, across compactions and a restart', async () => {
    const retentionMs = 400;
    let bus = await open(retentionMs);
    const published: string[] = [];
    const inOrder: string[] = [];
    const concurrent: string[] = [];
    const subscribe = (b: EmbeddedEventBus) => {
      b.subscribe('in-order', async (e) => {
        inOrder.push(e.id);
      });
      b.subscribe(
        'concurrent',
        async (e) => {
          await sleep(Math.random() * 3);
          concurrent.push(e.id);
        },
        { concurrency: 8 },
      );
    };
    subscribe(bus);
    const stream = async (b: EmbeddedEventBus, count: number) => {
      for (let n = 0; n < count; n += 50) {
        const batch = Array.from({ length: 50 }, (_, i) => event(n + i));
        published.push(...batch.map((e) => e.id));
        await Promise.all(batch.map((e) => b.publish(e)));
        await sleep(15);
      }
    };
    await stream(bus, 4_000);
    await eventually(async () => inOrder.length === published.length && concurrent.length === published.length);
    const header = records(path.join(dir, 'events.log'))[0];
    expect(header.header.base).toBeGreaterThan(1_000); // compactions happened
    await bus.stop();
    buses.splice(buses.indexOf(bus), 1);
    // The saved positions are sequence numbers past the dropped events.
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'events.consumers.json'), 'utf8'))).toEqual({ 'in-order': 4_000, concurrent: 4_000 });

    bus = await open(retentionMs);
    subscribe(bus);
    await stream(bus, 2_000);
    await eventually(async () => inOrder.length >= published.length && concurrent.length >= published.length);
    await sleep(100);
    expect(inOrder).toEqual(published);
    expect(new Set(concurrent).size).toBe(concurrent.length);
    expect([...concurrent].sort()).toEqual([...published].sort());
    expect(records(path.join(dir, 'events.log'))[0].header.base).toBeGreaterThan(4_000);
  });

  it('opens a log from before retention (no header), keeps its positions, and compacts it', async () => {
    const old = Date.now() - 60_000;
    const events = Array.from({ length: 10 }, (_, n) => event(n, new Date(old + n * 1_000).toISOString()));
    fs.writeFileSync(path.join(dir, 'events.log'), events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    fs.writeFileSync(path.join(dir, 'events.consumers.json'), JSON.stringify({ c: 2, d: 8 }));
    // Everything older than 53.5 s goes: events 0-6; c (at 2) goes on from 7, d from 8.
    let bus = await open(53_500);
    await eventually(async () => (await bus.recent('team_a', EPOCH)).length === 3);
    expect((await bus.recent('team_a', EPOCH)).map((e) => e.data.n)).toEqual([7, 8, 9]);
    const c: number[] = [];
    const d: number[] = [];
    bus.subscribe('c', async (e) => void c.push(e.data.n as number));
    bus.subscribe('d', async (e) => void d.push(e.data.n as number));
    await eventually(async () => c.length === 3 && d.length === 2);
    expect(c).toEqual([7, 8, 9]);
    expect(d).toEqual([8, 9]);
    expect(records(path.join(dir, 'events.log'))[0]).toEqual({ header: { base: 7 } });
    await bus.stop();
    buses.splice(buses.indexOf(bus), 1);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'events.consumers.json'), 'utf8'))).toEqual({ c: 10, d: 10 });

    bus = await open(53_500);
    await bus.publish(event(10));
    const after: number[] = [];
    bus.subscribe('c', async (e) => void after.push(e.data.n as number));
    await eventually(async () => after.length === 1);
    expect(after).toEqual([10]);
  });
});
