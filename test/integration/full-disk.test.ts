/**
 * The real service (a child process) on a data directory that stops taking writes: a
 * tmpfs filled to the last byte, one with no inode left, and one made read-only. In each
 * case, while the directory refuses writes, writes answer 503 persistence_unavailable,
 * reads answer 200 with meta.persistence `stale`, and the process stays up past every
 * background write (consumer positions every 200 ms, store compaction past 64 KiB of
 * log, reconciler resyncs). Once the directory takes writes again the service recovers
 * by itself: persistence `synced` again without a client write having to succeed first,
 * writes answer 201, the resources made before go on to `running` with each lifecycle
 * event once, and after a restart on the same directory every acknowledged write is there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startChildService, ChildService } from '../helpers/child-service';
import { eventually } from '../helpers/service';
import { Tmpfs } from '../helpers/tmpfs';
import { pageAll } from '../helpers/paging';

jest.setTimeout(240_000);

const KEY = 'cpk_FullDiskTest0123456789abcdefghijABCDEFGH';
const ENV = {
  CLOUDPLANE_SIM_DELAY_MS: '300',
  CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000',
  CLOUDPLANE_RESYNC_SECONDS: '2',
  CLOUDPLANE_STORE_COMPACT_BYTES: '65536',
};
/** How long the broken directory is held: many times every background write's period. */
const HOLD_MS = 6_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const alive = (svc: ChildService) => svc.child.exitCode === null && svc.child.signalCode === null;

/** Writers creating load balancers without pause; every 201 is remembered. */
function writeStream(svc: ChildService) {
  const acknowledged: string[] = [];
  const unexpected: string[] = [];
  let refused = 0;
  let stopping = false;
  const writer = async (w: number) => {
    for (let n = 0; !stopping; n++) {
      let res;
      try {
        res = await svc.api('POST', '/api/v1/load-balancers', { name: `disk-${w}-${n}`, region: 'fra1' });
      } catch (err) {
        unexpected.push(`POST failed: ${(err as Error).message} (the process ${alive(svc) ? 'is up' : 'is gone'})`);
        return;
      }
      if (res.status === 201) acknowledged.push(res.body.data.id);
      else if (res.status === 503 && res.body.error.code === 'persistence_unavailable') {
        refused++;
        await sleep(50);
      } else unexpected.push(`POST -> ${res.status} ${JSON.stringify(res.body)}`);
    }
  };
  const done = Promise.all([0, 1, 2].map(writer));
  return {
    acknowledged,
    unexpected,
    refused: () => refused,
    stop: async () => {
      stopping = true;
      await done;
    },
  };
}

async function listAll(svc: ChildService): Promise<any[]> {
  return pageAll(svc.api, '/api/v1/load-balancers');
}

async function auditEvents(svc: ChildService): Promise<any[]> {
  return pageAll(svc.api, '/api/v1/audit-log?type=load_balancer.*');
}

/**
 * Runs the service on `dataDir` with writers going, breaks the directory, checks the
 * service while it is broken, mends it, and checks that it recovers and lost nothing.
 */
/**
 * `keepBroken`, if given, runs before each check while the directory is broken: for a
 * breakage the service itself can ease (its own file renamed over another frees an inode).
 */
async function refuseAndRecover(dataDir: string, breakIt: () => void, mendIt: () => void, keepBroken?: () => void): Promise<void> {
  let svc = await startChildService({ dataDir, key: KEY, env: ENV });
  try {
    const stream = writeStream(svc);
    await eventually(async () => stream.acknowledged.length >= 30, 30_000);
    breakIt();

    // Writes are refused once the service meets the broken directory. Kept broken while
    // waiting too: a compaction that renames its new file over the old one gives the
    // inode back, and one free inode lets the next compaction through as well.
    await eventually(
      async () => {
        keepBroken?.();
        return stream.refused() > 0 || stream.unexpected.length > 0;
      },
      30_000,
      250,
    );
    expect(stream.unexpected).toEqual([]);
    for (const until = Date.now() + HOLD_MS; Date.now() < until; await sleep(250)) {
      keepBroken?.();
      expect(alive(svc)).toBe(true);
      const read = await svc.api('GET', '/api/v1/load-balancers?limit=5');
      expect(read.status).toBe(200);
      expect(read.body.meta.persistence).toBe('stale');
      const write = await svc.api('POST', '/api/v1/load-balancers', { name: `refused-${Date.now()}`, region: 'fra1' });
      expect([write.status, write.body.error?.code, write.body.meta.persistence]).toEqual([503, 'persistence_unavailable', 'stale']);
      expect((await svc.api('GET', '/readyz', undefined, { key: null })).body.persistence).toBe('stale');
    }
    expect(stream.unexpected).toEqual([]);

    // Mended: back to synced on its own, before any client write succeeds.
    const refusedBefore = stream.refused();
    await stream.stop();
    const acknowledged = [...stream.acknowledged];
    mendIt();
    await eventually(async () => (await svc.api('GET', '/api/v1/load-balancers?limit=1')).body.meta.persistence === 'synced', 60_000, 200);
    expect(refusedBefore).toBeGreaterThan(0);
    const after = await svc.api('POST', '/api/v1/load-balancers', { name: 'after-recovery', region: 'fra1' });
    expect([after.status, after.body.meta.persistence]).toEqual([201, 'synced']);
    acknowledged.push(after.body.data.id);

    // What was in flight carries on: every load balancer runs, each event once.
    await eventually(
      async () => {
        const all = await listAll(svc);
        return acknowledged.every((id) => all.find((lb) => lb.id === id)?.status === 'running');
      },
      120_000,
      500,
    );
    const events = await eventually(
      async () => {
        const all = await auditEvents(svc);
        return acknowledged.every((id) => all.some((e) => e.data.id === id && e.type === 'load_balancer.running')) ? all : null;
      },
      60_000,
      500,
    );
    for (const id of acknowledged) {
      expect(
        events
          .filter((e) => e.data.id === id)
          .map((e) => e.type)
          .sort(),
      ).toEqual(['load_balancer.created', 'load_balancer.running']);
    }

    // Every acknowledged write survives a restart on the same directory.
    expect(await svc.stop()).toBe(0);
    svc = await startChildService({ dataDir, key: KEY, env: ENV });
    const ids = new Set((await listAll(svc)).map((lb) => lb.id));
    expect(acknowledged.filter((id) => !ids.has(id))).toEqual([]);
    expect((await svc.api('GET', '/api/v1/load-balancers?limit=1')).body.meta.persistence).toBe('synced');
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- service output ---\n${svc.output()}`);
  } finally {
    await svc.kill();
  }
}

describe('a data directory that stops taking writes (real service, real tmpfs)', () => {
  const mounts: Tmpfs[] = [];
  const mount = (size: number, inodes?: number) => {
    const fsys = Tmpfs.mount(size, inodes);
    mounts.push(fsys);
    const dataDir = path.join(fsys.dir, 'data');
    fs.mkdirSync(dataDir);
    return { fsys, dataDir };
  };
  afterAll(() => Tmpfs.unmountAll(mounts));

  it('full to the last byte: refuses writes, keeps reading and running, recovers once space is freed, loses nothing', async () => {
    const { fsys, dataDir } = mount(32 * 1024 * 1024);
    await refuseAndRecover(
      dataDir,
      () => fsys.fillBytes(),
      () => fsys.free(),
    );
  });

  it('out of inodes (no new file, logs still grow): the same', async () => {
    const { fsys, dataDir } = mount(32 * 1024 * 1024, 2_000);
    // Filled while the service held a temporary file, the directory gets an inode back
    // when the service renames that file over its old one (its snapshot, its consumer
    // positions), and the service rightly takes writes again: it is kept full.
    await refuseAndRecover(
      dataDir,
      () => fsys.fillInodes(),
      () => fsys.free(),
      () => fsys.fillInodes(),
    );
  });

  it('read-only: the same, and recovers once it is writable again', async () => {
    const { fsys, dataDir } = mount(32 * 1024 * 1024);
    await refuseAndRecover(
      dataDir,
      () => fsys.readOnly(dataDir),
      () => fsys.readWrite(dataDir),
    );
  });
});
