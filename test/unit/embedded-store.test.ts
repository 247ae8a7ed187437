/**
 * The embedded store of record: Kubernetes semantics (resourceVersion preconditions,
 * generation on spec changes only, status written apart, deletion requests, a watch in
 * commit order), durability across restarts and compaction, and secrets.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { AlreadyExistsError, ConflictError, NotFoundError, StoredObject, StoreUnavailableError, WatchEvent } from '../../src/store/types';

type Spec = { name: string; size?: number };
type Status = { phase: string; note?: string };

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-store-'));
const thing = (id: string, team = 'team_a', spec: Spec = { name: id }, status: Status = { phase: 'new' }) => ({
  meta: { kind: 'Thing', id, team },
  spec,
  status,
});

// Once with the default number of objects kept parsed, once with one: every read then parses the object from its JSON.
describe.each([undefined, 1])('EmbeddedStore (objects kept parsed: %s)', (parsedObjects) => {
  let dir: string;
  let store: EmbeddedStore;
  const open = async (compactBytes?: number) => {
    const s = new EmbeddedStore({ dataDir: dir, compactBytes, parsedObjects });
    await s.start();
    return s;
  };
  beforeEach(async () => {
    dir = tempDir();
    store = await open();
  });
  afterEach(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates, gets and lists objects by kind and team', async () => {
    const a = await store.create<Spec, Status>(thing('t1', 'team_a', { name: 'one' }));
    expect(a.meta).toMatchObject({ kind: 'Thing', id: 't1', team: 'team_a', generation: 1, labels: {} });
    expect(a.meta.resourceVersion).toMatch(/^\d+$/);
    expect(a.meta.createdAt).toBe(a.meta.updatedAt);
    await store.create(thing('t2', 'team_b'));
    await store.create({ meta: { kind: 'Other', id: 'o1', team: 'team_a', labels: { tier: 'x' } }, spec: {}, status: {} });

    expect(await store.get('Thing', 'team_a', 't1')).toEqual(a);
    expect(await store.get('Thing', 'team_b', 't1')).toBeUndefined();
    expect(await store.get('Thing', 'team_a', 'missing')).toBeUndefined();
    expect((await store.list('Thing')).map((o) => o.meta.id).sort()).toEqual(['t1', 't2']);
    expect((await store.list('Thing', 'team_b')).map((o) => o.meta.id)).toEqual(['t2']);
    expect((await store.list('Other'))[0].meta.labels).toEqual({ tier: 'x' });
    expect(await store.list('Nothing')).toEqual([]);
    expect(store.persistence()).toBe('synced');
  });

  it('refuses a second object with the same id, even when both creates race', async () => {
    await store.create(thing('dup'));
    await expect(store.create(thing('dup'))).rejects.toBeInstanceOf(AlreadyExistsError);
    const results = await Promise.allSettled([store.create(thing('race')), store.create(thing('race')), store.create(thing('race'))]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect(r.reason).toBeInstanceOf(AlreadyExistsError);
  });

  it('hands out frozen objects, so a caller cannot change stored state by accident', async () => {
    const created = await store.create<Spec, Status>(thing('frozen'));
    expect(() => {
      (created.spec as Spec).name = 'changed';
    }).toThrow(TypeError);
    expect((await store.get<Spec, Status>('Thing', 'team_a', 'frozen'))!.spec.name).toBe('frozen');
  });

  it('keeps its own copy of what a write hands it, frozen at every depth, and shares what the write left as it was', async () => {
    type Deep = { phase: string; parts: Array<{ n: number }>; kept: { note: string }; at?: Date };
    const first = await store.create<Spec, Deep>({
      meta: { kind: 'Thing', id: 'deep', team: 'team_a' },
      spec: { name: 'deep' },
      status: { phase: 'a', parts: [{ n: 1 }], kept: { note: 'same' } },
    });
    const next: Deep = { ...first.status, phase: 'b', parts: [...first.status.parts, { n: 2 }], at: new Date('2026-11-28T10:00:00.000Z') };
    const second = await store.updateStatus<Spec, Deep>({ ...first, status: next });
    // The caller's objects are not the store's: changing them afterwards changes nothing stored.
    next.parts[1].n = 99;
    next.phase = 'changed';
    const stored = (await store.get<Spec, Deep>('Thing', 'team_a', 'deep'))!;
    expect(stored.status).toMatchObject({ phase: 'b', parts: [{ n: 1 }, { n: 2 }] });
    expect(Object.isFrozen(stored.status.parts[1])).toBe(true);
    // A value that is not JSON (a Date) reads back as its JSON once the object is parsed again, as after a restart.
    expect(JSON.stringify(stored.status.at)).toBe('"2026-11-28T10:00:00.000Z"');
    // What the write took over unchanged is the previous version's very value, not a copy of it.
    expect(second.status.kept).toBe(first.status.kept);
    expect(second.status.parts[0]).toBe(first.status.parts[0]);
    expect(second.spec).toBe(first.spec);
  });

  it('updates only on top of the current resourceVersion and answers ConflictError otherwise', async () => {
    const v1 = await store.create<Spec, Status>(thing('c1'));
    const v2 = await store.update<Spec, Status>({ ...v1, spec: { name: 'c1', size: 2 } });
    expect(Number(v2.meta.resourceVersion)).toBeGreaterThan(Number(v1.meta.resourceVersion));
    await expect(store.update({ ...v1, spec: { name: 'c1', size: 3 } })).rejects.toBeInstanceOf(ConflictError);
    await expect(store.updateStatus({ ...v1, status: { phase: 'late' } })).rejects.toBeInstanceOf(ConflictError);
    await expect(store.update({ ...v1, meta: { ...v1.meta, id: 'nope' } })).rejects.toBeInstanceOf(NotFoundError);
    expect((await store.get<Spec, Status>('Thing', 'team_a', 'c1'))!.spec.size).toBe(2);

    // Of several writers holding the same version, exactly one wins.
    const results = await Promise.allSettled([1, 2, 3, 4].map((size) => store.update({ ...v2, spec: { name: 'c1', size } })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect(r.reason).toBeInstanceOf(ConflictError);
  });

  it('bumps generation on spec changes only; update leaves status alone and updateStatus leaves spec alone', async () => {
    const v1 = await store.create<Spec, Status>(thing('g1'));
    const labelsOnly = await store.update<Spec, Status>({ ...v1, meta: { ...v1.meta, labels: { env: 'prod' } } });
    expect(labelsOnly.meta.generation).toBe(1);
    expect(labelsOnly.meta.labels).toEqual({ env: 'prod' });

    const specChange = await store.update<Spec, Status>({ ...labelsOnly, spec: { name: 'g1', size: 5 }, status: { phase: 'ignored' } });
    expect(specChange.meta.generation).toBe(2);
    expect(specChange.status).toEqual({ phase: 'new' });

    const statusChange = await store.updateStatus<Spec, Status>({ ...specChange, spec: { name: 'ignored' }, status: { phase: 'ready' } });
    expect(statusChange.meta.generation).toBe(2);
    expect(statusChange.spec).toEqual({ name: 'g1', size: 5 });
    expect(statusChange.status).toEqual({ phase: 'ready' });
    expect(statusChange.meta.createdAt).toBe(v1.meta.createdAt);
    expect(statusChange.meta.resourceVersion).not.toBe(specChange.meta.resourceVersion);
  });

  it('asks for deletion once, keeps the object until it is removed, and removes only the current version when asked to', async () => {
    const v1 = await store.create(thing('d1'));
    const asked = await store.requestDeletion('Thing', 'team_a', 'd1');
    expect(asked.meta.deletionTimestamp).toEqual(expect.any(String));
    const again = await store.requestDeletion('Thing', 'team_a', 'd1');
    expect(again.meta.deletionTimestamp).toBe(asked.meta.deletionTimestamp);
    expect(again.meta.resourceVersion).toBe(asked.meta.resourceVersion);
    expect((await store.get('Thing', 'team_a', 'd1'))!.meta.deletionTimestamp).toBe(asked.meta.deletionTimestamp);
    await expect(store.requestDeletion('Thing', 'team_a', 'missing')).rejects.toBeInstanceOf(NotFoundError);

    await expect(store.remove('Thing', 'team_a', 'd1', v1.meta.resourceVersion)).rejects.toBeInstanceOf(ConflictError);
    await store.remove('Thing', 'team_a', 'd1', asked.meta.resourceVersion);
    expect(await store.get('Thing', 'team_a', 'd1')).toBeUndefined();
    expect(await store.list('Thing')).toEqual([]);
    await expect(store.remove('Thing', 'team_a', 'd1')).rejects.toBeInstanceOf(NotFoundError);
    // The id is free again.
    await store.create(thing('d1'));
  });

  /** Watch events come once the turn of the event loop that committed the write is over. */
  const afterTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('delivers watch events in commit order, with the previous object, until unsubscribed', async () => {
    const events: WatchEvent[] = [];
    const unwatch = store.watch((e) => events.push(e));
    const created = await store.create<Spec, Status>(thing('w1'));
    const updated = await store.updateStatus<Spec, Status>({ ...created, status: { phase: 'ready' } });
    await store.remove('Thing', 'team_a', 'w1');
    await afterTurn();
    expect(events.map((e) => e.type)).toEqual(['added', 'modified', 'deleted']);
    expect(events[0].previous).toBeUndefined();
    expect(events[0].object).toEqual(created);
    expect(events[1].previous).toEqual(created);
    expect(events[1].object).toEqual(updated);
    expect(events[2].object).toEqual(updated);

    // Many concurrent writers: the watch sees every commit once, in resourceVersion order.
    events.length = 0;
    const writes: Promise<StoredObject>[] = [];
    for (let i = 0; i < 200; i++) writes.push(store.create(thing(`m${i}`, i % 2 ? 'team_a' : 'team_b')));
    const stored = await Promise.all(writes);
    await afterTurn();
    const versions = events.map((e) => Number(e.object.meta.resourceVersion));
    expect(versions).toHaveLength(200);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(events.map((e) => e.object.meta.id))).toEqual(new Set(stored.map((o) => o.meta.id)));

    // Unsubscribed between a commit and its event: that event is not delivered either.
    const late = store.create(thing('after'));
    await late;
    unwatch();
    await afterTurn();
    expect(events).toHaveLength(200);
  });

  it('tells watchers of a write only after its writer has the answer, as an API server watch does', async () => {
    const order: string[] = [];
    store.watch((e) => order.push(`event ${e.object.meta.id}`));
    await store.create(thing('first'));
    order.push('answer first');
    await store.create(thing('second'));
    order.push('answer second');
    await afterTurn();
    expect(order).toEqual(['answer first', 'event first', 'answer second', 'event second']);
  });

  it('lets a throwing watcher neither undo the write nor keep it from other watchers', async () => {
    const seen: string[] = [];
    store.watch(() => {
      throw new Error('watcher bug');
    });
    store.watch((e) => seen.push(e.object.meta.id));
    await store.create(thing('robust'));
    await afterTurn();
    expect(seen).toEqual(['robust']);
    expect(await store.get('Thing', 'team_a', 'robust')).toBeDefined();
  });

  it('shows no reader or watcher a write before it is durable', async () => {
    const seenAt: string[] = [];
    store.watch((e) => seenAt.push(fs.readFileSync(path.join(dir, 'store.log'), 'utf8').includes(`"id":"${e.object.meta.id}"`) ? 'on disk' : 'not on disk'));
    const pending = store.create(thing('durable'));
    expect(await store.get('Thing', 'team_a', 'durable')).toBeUndefined();
    await pending;
    await afterTurn();
    expect(seenAt).toEqual(['on disk']);
  });

  it('has every acknowledged write after a crash (no stop) and a clean stop, with versions going on from there', async () => {
    const a = await store.create<Spec, Status>(thing('r1'));
    const b = await store.update<Spec, Status>({ ...a, spec: { name: 'r1', size: 9 } });
    const c = await store.updateStatus<Spec, Status>({ ...b, status: { phase: 'ready' } });
    await store.create(thing('r2'));
    await store.requestDeletion('Thing', 'team_a', 'r2');
    await store.create(thing('r3'));
    await store.remove('Thing', 'team_a', 'r3');
    await store.secrets.put('team_a', 'api-key', { hash: 'abc' });

    // A second store on the same directory, the first never stopped: what a crash leaves.
    const crashed = new EmbeddedStore({ dataDir: dir });
    await crashed.start();
    expect(await crashed.get('Thing', 'team_a', 'r1')).toEqual(c);
    expect((await crashed.get('Thing', 'team_a', 'r2'))!.meta.deletionTimestamp).toEqual(expect.any(String));
    expect(await crashed.get('Thing', 'team_a', 'r3')).toBeUndefined();
    expect(await crashed.secrets.get('team_a', 'api-key')).toEqual({ hash: 'abc' });
    await crashed.stop();

    await store.stop();
    store = await open();
    expect(await store.get('Thing', 'team_a', 'r1')).toEqual(c);
    const next = await store.create(thing('r4'));
    expect(Number(next.meta.resourceVersion)).toBeGreaterThan(Number(c.meta.resourceVersion));
    // A version held from before the restart still works as a precondition.
    const moved = await store.updateStatus<Spec, Status>({ ...c, status: { phase: 'moved' } });
    expect(moved.status.phase).toBe('moved');
    await expect(store.updateStatus({ ...c, status: { phase: 'stale' } })).rejects.toBeInstanceOf(ConflictError);
  });

  it('compacts the log into a snapshot and loses nothing across restarts after compaction', async () => {
    await store.stop();
    store = await open(4_096);
    const expected = new Map<string, StoredObject<Spec, Status>>();
    for (let i = 0; i < 60; i++) {
      let o = await store.create<Spec, Status>(thing(`k${i}`, 'team_a', { name: `k${i}`, size: i }));
      if (i % 3 === 0) o = await store.updateStatus<Spec, Status>({ ...o, status: { phase: 'ready', note: 'x'.repeat(50) } });
      if (i % 5 === 0) await store.remove('Thing', 'team_a', `k${i}`);
      else expected.set(o.meta.id, o);
    }
    const snapshotFile = path.join(dir, 'store.snapshot.json');
    await new Promise((resolve) => setTimeout(resolve, 20)); // compaction runs after the write that crossed the threshold
    expect(fs.existsSync(snapshotFile)).toBe(true);
    expect(fs.statSync(path.join(dir, 'store.log')).size).toBeLessThan(4_096 * 2);
    const lastVersion = Math.max(...[...expected.values()].map((o) => Number(o.meta.resourceVersion)));
    await store.stop();

    store = await open(4_096);
    const listed = await store.list<Spec, Status>('Thing');
    expect(new Map(listed.map((o) => [o.meta.id, o]))).toEqual(expected);
    const next = await store.create(thing('after-snapshot'));
    expect(Number(next.meta.resourceVersion)).toBeGreaterThan(lastVersion);
  });

  it('reads every object back from where its JSON is, in the log or moved into the snapshot by a compaction, in the same process', async () => {
    await store.stop();
    store = await open(4_096);
    const latest = new Map<string, StoredObject<Spec, Status>>();
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 20; i++) {
        const id = `p${i}`;
        const before = latest.get(id);
        const o = before
          ? await store.updateStatus<Spec, Status>({ ...before, status: { phase: `r${round}`, note: 'é'.repeat(40) } })
          : await store.create<Spec, Status>(thing(id, `team_${i % 2}`, { name: id }));
        latest.set(id, o);
      }
      await new Promise((resolve) => setTimeout(resolve, 20)); // a compaction that is due runs
      for (const [id, o] of latest) expect(await store.get<Spec, Status>('Thing', o.meta.team, id)).toEqual(o);
    }
    expect(fs.existsSync(path.join(dir, 'store.snapshot.json'))).toBe(true);
  });

  it('starts from a snapshot written on one line (before objects had a line each) and writes it anew, an object to a line', async () => {
    const o = await store.create<Spec, Status>(thing('old', 'team_a', { name: 'old' }));
    await store.stop();
    const snapshotFile = path.join(dir, 'store.snapshot.json');
    fs.writeFileSync(snapshotFile, JSON.stringify({ revision: Number(o.meta.resourceVersion), objects: [o] }));
    fs.writeFileSync(path.join(dir, 'store.log'), '');
    store = await open();
    expect(await store.get('Thing', 'team_a', 'old')).toEqual(o);
    expect(fs.readFileSync(snapshotFile, 'utf8').split('\n')[1]).toBe(JSON.stringify(o));
  });

  it('compacts under writes that never pause, and the writes made meanwhile survive a restart', async () => {
    await store.stop();
    store = await open(4_096);
    const logFile = path.join(dir, 'store.log');
    const note = 'x'.repeat(200);
    const latest = new Map<string, StoredObject<Spec, Status>>();
    for (let i = 0; i < 8; i++) latest.set(`w${i}`, await store.create<Spec, Status>(thing(`w${i}`, `team_${i % 3}`, { name: `w${i}` })));
    let largestLog = 0;
    // Eight writers, each writing again as soon as its last write resolved: the log is never idle.
    await Promise.all(
      [...latest.keys()].map(async (id) => {
        for (let n = 0; n < 150; n++) {
          const o = latest.get(id)!;
          latest.set(id, await store.updateStatus<Spec, Status>({ ...o, status: { phase: `p${n}`, note } }));
          largestLog = Math.max(largestLog, fs.statSync(logFile).size);
        }
      }),
    );
    // 1,200 writes of about 500 bytes, 600 KB in all: compacted on the way, never far past the threshold.
    expect(fs.existsSync(path.join(dir, 'store.snapshot.json'))).toBe(true);
    expect(largestLog).toBeLessThan(8 * 4_096);
    await store.stop();
    store = await open(4_096);
    for (const [id, o] of latest) expect(await store.get<Spec, Status>('Thing', o.meta.team, id)).toEqual(o);
  });

  it("lets the log grow to the last snapshot's size before compacting again, however low the threshold", async () => {
    await store.stop();
    store = await open(4_096);
    const note = 'x'.repeat(400);
    for (let i = 0; i < 40; i++) await store.create<Spec, Status>(thing(`b${i}`, 'team_a', { name: `b${i}` }, { phase: 'new', note }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const snapshotFile = path.join(dir, 'store.snapshot.json');
    const logFile = path.join(dir, 'store.log');
    const snapshot = fs.statSync(snapshotFile);
    expect(snapshot.size).toBeGreaterThan(3 * 4_096);
    // The snapshot is replaced by a rename: a new inode is a new compaction.
    const compacted = () => fs.statSync(snapshotFile).ino !== snapshot.ino;

    let o = (await store.get<Spec, Status>('Thing', 'team_a', 'b0'))!;
    for (let n = 0; fs.statSync(logFile).size + 2_000 < snapshot.size; n++) {
      o = await store.updateStatus<Spec, Status>({ ...o, status: { phase: `p${n}`, note } });
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(compacted()).toBe(false);
    }
    expect(fs.statSync(logFile).size).toBeGreaterThan(2 * 4_096);
    for (let n = 0; !compacted() && n < 50; n++) {
      o = await store.updateStatus<Spec, Status>({ ...o, status: { phase: `q${n}`, note } });
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(compacted()).toBe(true);
    await store.stop();
    store = await open(4_096);
    expect((await store.get<Spec, Status>('Thing', 'team_a', 'b0'))?.status).toEqual(o.status);
  });

  it('replays a log whose records are already in the snapshot harmlessly (a crash between snapshot and truncation)', async () => {
    for (let i = 0; i < 10; i++) await store.create(thing(`s${i}`));
    const s1 = (await store.get<Spec, Status>('Thing', 'team_a', 's1'))!;
    await store.updateStatus({ ...s1, status: { phase: 'ready' } });
    await store.remove('Thing', 'team_a', 's2');
    await store.stop();
    const oldLog = fs.readFileSync(path.join(dir, 'store.log'));

    // The next write crosses a tiny threshold: snapshot written, log emptied.
    store = await open(1);
    await store.create(thing('trigger'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fs.statSync(path.join(dir, 'store.log')).size).toBe(0);
    const before = await store.list('Thing');
    await store.stop();

    // As if the process died after the snapshot but before the log was emptied.
    fs.writeFileSync(path.join(dir, 'store.log'), oldLog);
    store = await open();
    const after = await store.list('Thing');
    expect(new Map(after.map((o) => [o.meta.id, o]))).toEqual(new Map(before.map((o) => [o.meta.id, o])));
    expect(await store.get('Thing', 'team_a', 's2')).toBeUndefined();
  });

  it('ignores a torn last record, which was never acknowledged', async () => {
    const a = await store.create(thing('t-ok'));
    await store.stop();
    fs.appendFileSync(path.join(dir, 'store.log'), '{"op":"put","o":{"meta":{"kind":"Thing","id":"t-torn"');
    store = await open();
    expect(await store.get('Thing', 'team_a', 't-ok')).toEqual(a);
    expect(await store.get('Thing', 'team_a', 't-torn')).toBeUndefined();
    await store.create(thing('t-next'));
    await store.stop();
    store = await open();
    expect((await store.list('Thing')).map((o) => o.meta.id).sort()).toEqual(['t-next', 't-ok']);
  });

  it('keeps secrets apart from resources, per team, across restarts', async () => {
    await store.secrets.put('team_a', 'key_1', { hash: 'h1' });
    const [{ createdAt }] = await store.secrets.list('key_1');
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.secrets.put('team_b', 'key_2', { hash: 'h2' });
    await store.secrets.put('team_a', 'other', { value: 'v' });
    await store.secrets.put('team_a', 'key_1', { hash: 'h1-rotated' });
    const copy = (await store.secrets.get('team_a', 'key_1'))!;
    copy.hash = 'tampered';
    expect(await store.secrets.get('team_a', 'key_1')).toEqual({ hash: 'h1-rotated' });
    expect(await store.secrets.get('team_b', 'key_1')).toBeUndefined();
    // A secret's creation time is its first write's, kept by later ones.
    expect((await store.secrets.list('key_')).sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      { team: 'team_a', name: 'key_1', data: { hash: 'h1-rotated' }, createdAt },
      { team: 'team_b', name: 'key_2', data: { hash: 'h2' }, createdAt: expect.stringMatching(/^\d{4}-.*Z$/) },
    ]);
    expect((await store.secrets.list('key_2'))[0].createdAt > createdAt).toBe(true);
    expect(await store.list('Thing')).toEqual([]);

    // Racing writers of one secret: each write lands whole, the last one wins; deletes are idempotent.
    await Promise.all([store.secrets.put('team_a', 'race', { v: '1' }), store.secrets.put('team_a', 'race', { v: '2' })]);
    expect(await store.secrets.get('team_a', 'race')).toEqual({ v: '2' });
    await Promise.all([store.secrets.delete('team_a', 'race'), store.secrets.delete('team_a', 'race')]);
    expect(await store.secrets.get('team_a', 'race')).toBeUndefined();

    // A swap writes only over the data it expects: of two swaps from the same data, one wins.
    await store.secrets.put('team_a', 'swap', { v: '1' });
    const swaps = await Promise.all([
      store.secrets.swap('team_a', 'swap', { v: '1' }, { v: '2' }),
      store.secrets.swap('team_a', 'swap', { v: '1' }, { v: '3' }),
    ]);
    expect(swaps.filter(Boolean)).toHaveLength(1);
    expect(await store.secrets.get('team_a', 'swap')).toEqual({ v: swaps[0] ? '2' : '3' });
    expect(await store.secrets.swap('team_a', 'never-existed', {}, { v: '1' })).toBe(false);
    expect(await store.secrets.get('team_a', 'never-existed')).toBeUndefined();
    await store.secrets.delete('team_a', 'swap');

    await store.secrets.delete('team_b', 'key_2');
    await store.secrets.delete('team_b', 'never-existed');
    await store.stop();
    store = await open();
    expect(await store.secrets.get('team_a', 'key_1')).toEqual({ hash: 'h1-rotated' });
    expect(await store.secrets.get('team_b', 'key_2')).toBeUndefined();
    expect((await store.secrets.list('')).map((s) => s.name).sort()).toEqual(['key_1', 'other']);
  });
});

describe('EmbeddedStore reading an object its file no longer holds', () => {
  it('fails that read as the store unavailable (503), and goes on serving the objects it can read', async () => {
    const dir = tempDir();
    // One object kept parsed: the other is read from the log when asked for.
    const store = new EmbeddedStore({ dataDir: dir, parsedObjects: 1 });
    await store.start();
    try {
      await store.create<Spec, Status>(thing('lost'));
      const kept = await store.create<Spec, Status>(thing('kept'));
      // The disk loses the log's bytes under the running store (as a failing device would answer EIO).
      fs.truncateSync(path.join(dir, 'store.log'), 0);
      await expect(store.get('Thing', 'team_a', 'lost')).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await store.get('Thing', 'team_a', 'kept')).toEqual(kept);
    } finally {
      await store.stop();
    }
  });
});
