/**
 * The embedded store and bus on a data directory that refuses writes, on a real tmpfs
 * filled to the last byte or out of inodes: a refused append answers StoreUnavailableError
 * and is not applied, persistence is `stale` and every write is refused until the
 * directory takes writes again, background writes (snapshot compaction, consumer
 * positions) are retried with backoff without an error escaping, and persistence comes
 * back to `synced` by itself once space is freed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import { DataDirHealth } from '../../src/store/data-dir-health';
import { BackgroundWrite } from '../../src/store/background-write';
import { writeFileDurable } from '../../src/store/append-log';
import { StoreUnavailableError } from '../../src/store/types';
import { newId } from '../../src/lib/ids';
import { eventually } from '../helpers/service';
import { Tmpfs } from '../helpers/tmpfs';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const lb = (n: number) => ({
  meta: { kind: 'LoadBalancer', id: `lb_${String(n).padStart(20, '0')}`, team: 'team_a' },
  spec: { name: `lb-${n}`, pad: 'x'.repeat(500) },
  status: {},
});

describe('BackgroundWrite', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bgwrite-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('retries a failing write with growing pauses until it works, stale meanwhile, synced after', async () => {
    // The write goes into a directory that is missing (ENOENT) until the test makes it.
    const target = path.join(dir, 'later', 'positions.json');
    const health = new DataDirHealth(dir);
    const attempts: number[] = [];
    const write = new BackgroundWrite(
      'positions',
      () => {
        attempts.push(Date.now());
        writeFileDurable(target, '{}');
      },
      health,
      { baseMs: 50, maxMs: 400 },
    );
    write.request();
    await eventually(async () => attempts.length >= 5, 10_000, 10);
    expect(health.state).toBe('stale');
    expect((health.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]);
    expect(gaps[1]).toBeGreaterThanOrEqual(90); // 50, 100, 200, ... ms
    expect(gaps[3]).toBeGreaterThanOrEqual(gaps[1]);

    fs.mkdirSync(path.join(dir, 'later'));
    await eventually(async () => health.state === 'synced', 5_000, 10);
    expect(fs.readFileSync(target, 'utf8')).toBe('{}');
    const settled = attempts.length;
    await sleep(300);
    expect(attempts).toHaveLength(settled); // nothing more to do
    await write.stop();
  });

  it('does not retry a failing write until the directory passes a probe', async () => {
    const probed = path.join(dir, 'probed');
    fs.mkdirSync(probed);
    const health = new DataDirHealth(probed);
    let attempts = 0;
    let fail = true;
    const write = new BackgroundWrite(
      'snapshot',
      () => {
        attempts++;
        if (fail) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      },
      health,
      { baseMs: 20, maxMs: 20 },
    );
    write.request();
    await eventually(async () => attempts >= 1);
    // The directory itself is gone: every probe fails, and the costly write is not tried.
    fs.rmSync(probed, { recursive: true });
    await sleep(300);
    expect(attempts).toBeLessThanOrEqual(2);
    fs.mkdirSync(probed);
    fail = false;
    await eventually(async () => health.state === 'synced', 5_000, 10);
    await write.stop();
  });

  it('runs once for requests made together, and once more for a request made while it ran', async () => {
    const health = new DataDirHealth(dir);
    let runs = 0;
    let release: () => void = () => undefined;
    const write = new BackgroundWrite(
      'w',
      async () => {
        runs++;
        await new Promise<void>((resolve) => (release = resolve));
      },
      health,
    );
    write.request();
    write.request();
    await eventually(async () => runs === 1);
    write.request();
    write.request();
    release();
    await eventually(async () => runs === 2);
    release();
    await sleep(100);
    expect(runs).toBe(2);
    await write.stop();
  });
});

describe('the embedded store and bus on a tmpfs that fills up', () => {
  const mounts: Tmpfs[] = [];
  afterAll(() => Tmpfs.unmountAll(mounts));
  const mount = (size: number, inodes?: number) => {
    const fsys = Tmpfs.mount(size, inodes);
    mounts.push(fsys);
    return fsys;
  };

  it('writeFileDurable keeps the old content and gives the space back when the new one does not fit', () => {
    const fsys = mount(64 * 1024);
    const file = path.join(fsys.dir, 'state.json');
    writeFileDurable(file, 'old');
    expect(() => writeFileDurable(file, 'x'.repeat(128 * 1024))).toThrow(/ENOSPC/);
    expect(fs.readFileSync(file, 'utf8')).toBe('old');
    expect(fs.readdirSync(fsys.dir)).toEqual(['state.json']);
    writeFileDurable(file, 'y'.repeat(32 * 1024)); // the failed attempt's space is free again
  });

  it('refuses writes while the disk is full, recovers by itself once space is freed, and keeps only what it acknowledged', async () => {
    const fsys = mount(4 * 1024 * 1024);
    const dataDir = path.join(fsys.dir, 'data');
    let store = new EmbeddedStore({ dataDir });
    await store.start();
    const acknowledged: string[] = [];
    for (let n = 0; n < 20; n++) acknowledged.push((await store.create(lb(n))).meta.id);
    fsys.fillBytes();

    let refusal: unknown;
    for (let n = 20; n < 200 && !refusal; n++) {
      try {
        acknowledged.push((await store.create(lb(n))).meta.id); // may still fit in the log's last page
      } catch (err) {
        refusal = err;
      }
    }
    expect(refusal).toBeInstanceOf(StoreUnavailableError);
    expect(String(refusal)).toMatch(/ENOSPC/);
    expect(store.persistence()).toBe('stale');
    // Reads answer; every write is refused, even one that would fit.
    expect(await store.list('LoadBalancer')).toHaveLength(acknowledged.length);
    await expect(store.create(lb(1000))).rejects.toBeInstanceOf(StoreUnavailableError);
    await sleep(500);
    expect(store.persistence()).toBe('stale');

    fsys.free();
    await eventually(async () => store.persistence() === 'synced', 15_000, 20);
    acknowledged.push((await store.create(lb(2000))).meta.id);
    await store.stop();

    store = new EmbeddedStore({ dataDir });
    await store.start();
    expect((await store.list('LoadBalancer')).map((o) => o.meta.id).sort()).toEqual([...acknowledged].sort());
    await store.stop();
  });

  it('retries a snapshot compaction that finds no room, without an unhandled rejection, and compacts once there is room', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const fsys = mount(4 * 1024 * 1024, 64);
      const dataDir = path.join(fsys.dir, 'data');
      const store = new EmbeddedStore({ dataDir, compactBytes: 8 * 1024 });
      await store.start();
      fsys.fillInodes(); // the log still grows; a snapshot, a new file, cannot be made
      // Past compactBytes the compaction is requested; it runs in the background, at the machine's pace.
      for (let n = 0; n < 20 && store.persistence() === 'synced'; n++) await store.create(lb(n)).catch(() => undefined);
      await eventually(async () => store.persistence() === 'stale', 15_000, 20);
      expect(fs.existsSync(path.join(dataDir, 'store.snapshot.json'))).toBe(false);
      await sleep(500);
      fsys.free();
      await eventually(async () => store.persistence() === 'synced', 15_000, 20);
      expect(fs.existsSync(path.join(dataDir, 'store.snapshot.json'))).toBe(true);
      expect(fs.statSync(path.join(dataDir, 'store.log')).size).toBeLessThan(8 * 1024);
      await store.stop();
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('keeps consumer positions in memory while they cannot be saved, saves them once they can, and stops cleanly meanwhile', async () => {
    const fsys = mount(4 * 1024 * 1024, 64);
    const dir = path.join(fsys.dir, 'events');
    const health = new DataDirHealth(fsys.dir);
    let bus = new EmbeddedEventBus(dir, { health });
    await bus.start();
    const seen: string[] = [];
    bus.subscribe('c', async (e) => {
      seen.push(e.type);
    });
    const publish = (n: number) =>
      bus.publish({ id: newId('evt'), type: `e.${n}`, created_at: new Date().toISOString(), team_id: 'team_a', actor: 'system', data: {} });
    for (let n = 0; n < 3; n++) await publish(n);
    await eventually(async () => seen.length === 3 && fs.readFileSync(path.join(dir, 'events.consumers.json'), 'utf8') === '{"c":3}');
    fsys.fillInodes();
    for (let n = 3; n < 6; n++) await publish(n); // the log grows; the positions file cannot be replaced
    await eventually(async () => seen.length === 6 && health.state === 'stale');
    await bus.stop(); // its last save fails too: reported, not thrown
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'events.consumers.json'), 'utf8'))).toEqual({ c: 3 });

    fsys.free();
    bus = new EmbeddedEventBus(dir, { health: new DataDirHealth(fsys.dir) });
    await bus.start();
    const again: string[] = [];
    bus.subscribe('c', async (e) => {
      again.push(e.type);
    });
    // At least once: what was handled but not saved comes again, nothing is skipped.
    await eventually(async () => again.length === 3);
    expect(again).toEqual(['e.3', 'e.4', 'e.5']);
    await eventually(async () => JSON.parse(fs.readFileSync(path.join(dir, 'events.consumers.json'), 'utf8')).c === 6);
    await bus.stop();
  });

  it('recovers consumer positions by itself while running, once the disk has room', async () => {
    const fsys = mount(4 * 1024 * 1024, 64);
    const dir = path.join(fsys.dir, 'events');
    const health = new DataDirHealth(fsys.dir);
    const bus = new EmbeddedEventBus(dir, { health });
    await bus.start();
    let seen = 0;
    bus.subscribe('c', async () => {
      seen++;
    });
    fsys.fillInodes();
    await bus.publish({ id: newId('evt'), type: 'e.1', created_at: new Date().toISOString(), team_id: 'team_a', actor: 'system', data: {} });
    await eventually(async () => seen === 1 && health.state === 'stale');
    fsys.free();
    await eventually(async () => health.state === 'synced', 15_000, 20);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'events.consumers.json'), 'utf8'))).toEqual({ c: 1 });
    await bus.stop();
  });
});
