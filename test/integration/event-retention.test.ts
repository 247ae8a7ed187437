/**
 * The real service (a child process) with a 4 s event retention, SIGKILLed in the middle
 * of compacting its event log: the test watches the events directory (inotify) and kills
 * the process the moment the new log of a compaction appears, after hard-linking the old
 * one. After each kill the log still opens, holds every event the old one held that had
 * not expired, no event twice, and no consumer position past its end; the service starts
 * again on it. Writers keep events flowing through the API all along.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startChildService, ChildService } from '../helpers/child-service';
import { eventually, tempDataDir } from '../helpers/service';
import { AppendLog } from '../../src/store/append-log';
import type { CloudEvent } from '../../src/resources/cloud-event';

jest.setTimeout(300_000);

const KEY = 'cpk_RetentionTest0123456789abcdefghijABCDEF';
const RETENTION_MS = 4_000;
const ENV = {
  CLOUDPLANE_EVENT_RETENTION_DAYS: String(RETENTION_MS / 86_400_000),
  CLOUDPLANE_SIM_DELAY_MS: '50',
  CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000',
  // Rounds of writers make thousands of load balancers: past the default quota their
  // creates would be refused, and no event would flow.
  CLOUDPLANE_QUOTAS: 'load_balancer=1000000',
};
const MAX_ROUNDS = 12;
/** Rounds whose kill must land before the new log replaced the old one, one of them on a log compacted before. */
const WANTED_MIDWAY = 2;
/**
 * How long a round waits to catch a compaction in the act. On a loaded machine the watch's
 * callback can come after a short rewrite has finished: such a round kills the service
 * anyway (still a crash with writers going) and the next round tries again.
 */
const CATCH_MS = 30_000;

type Header = { header: { base: number } };

/** The log as the next start will read it (the torn tail and an unfinished rewrite go). */
function readLog(file: string): { base: number; events: CloudEvent[] } {
  const log = new AppendLog(file);
  const records = log.open<CloudEvent | Header>();
  void log.close();
  const first = records[0];
  if (first && 'header' in first) return { base: first.header.base, events: records.slice(1) as CloudEvent[] };
  return { base: 0, events: records as CloudEvent[] };
}

/** Writers creating and updating load balancers until told to stop or the service is gone. */
function writeStream(svc: ChildService) {
  let stopping = false;
  const writer = async (w: number) => {
    for (let n = 0; !stopping; n++) {
      try {
        const res = await svc.api('POST', '/api/v1/load-balancers', { name: `ret-${w}-${n}-${Date.now()}`, region: 'fra1' });
        if (res.status === 201 && n % 3 === 0) await svc.api('PATCH', `/api/v1/load-balancers/${res.body.data.id}`, { algorithm: 'least_connections' });
      } catch {
        return; // killed
      }
    }
  };
  const done = Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
  return async () => {
    stopping = true;
    await done;
  };
}

describe('event log retention under SIGKILL (real service)', () => {
  const dataDir = tempDataDir();
  const eventsDir = path.join(dataDir, 'events');
  const logFile = path.join(eventsDir, 'events.log');
  let svc: ChildService | null = null;
  afterAll(async () => {
    await svc?.kill();
  });

  it('loses no unexpired event when killed while compacting, round after round', async () => {
    let midway = 0;
    let midwayOnCompacted = 0;
    const rounds: string[] = [];
    for (let round = 0; round < MAX_ROUNDS && (midway < WANTED_MIDWAY || midwayOnCompacted === 0); round++) {
      const service = await startChildService({ dataDir, key: KEY, env: ENV });
      svc = service;
      const reference = path.join(dataDir, `before-kill-${round}.log`);
      // Round r kills during the (r mod 3 + 1)-th compaction: some kills find a log compacted before.
      let compactionsToLet = round % 3;
      let watcher: fs.FSWatcher | undefined;
      const killed = new Promise<number>((resolve) => {
        watcher = fs.watch(eventsDir, (type, filename) => {
          if (filename !== 'events.log.rewrite' || type !== 'rename' || !fs.existsSync(`${logFile}.rewrite`)) return;
          if (compactionsToLet-- > 0) return;
          watcher?.close();
          // The old log, as it stands and as appends go on into it until the kill.
          try {
            fs.linkSync(logFile, reference);
          } catch {
            // Renamed away already: this round shows nothing about the old log.
          }
          service.child.kill('SIGKILL');
          resolve(Date.now());
        });
      });
      const stopWriting = writeStream(service);
      let timer: NodeJS.Timeout | undefined;
      const uncaught = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), CATCH_MS);
      });
      const caughtAt = await Promise.race([killed, uncaught]).finally(() => clearTimeout(timer));
      watcher?.close();
      const killedAt = caughtAt ?? Date.now();
      await service.kill();
      await stopWriting();
      const leftBehind = fs.existsSync(`${logFile}.rewrite`);

      const after = readLog(logFile);
      const ids = after.events.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      // Positions are saved in batches: a kill before the first save leaves none, and the consumers start from the beginning.
      const positionsFile = path.join(eventsDir, 'events.consumers.json');
      const positions: Record<string, number> = fs.existsSync(positionsFile) ? JSON.parse(fs.readFileSync(positionsFile, 'utf8')) : {};
      for (const position of Object.values(positions)) expect(position).toBeLessThanOrEqual(after.base + after.events.length);

      if (fs.existsSync(reference)) {
        const before = readLog(reference);
        const kept = new Set(ids);
        // Unexpired at the kill: no compaction could have dropped it.
        const cutoff = new Date(killedAt - RETENTION_MS).toISOString();
        const lost = before.events.filter((e) => e.created_at >= cutoff && !kept.has(e.id));
        expect(lost.map((e) => `${e.id} ${e.type} ${e.created_at}`)).toEqual([]);
        // Sequence numbers hold: an event keeps its place across the compaction.
        const placeBefore = new Map(before.events.map((e, i) => [e.id, before.base + i]));
        for (const [i, e] of after.events.entries()) {
          if (placeBefore.has(e.id)) expect(after.base + i).toBe(placeBefore.get(e.id));
        }
        fs.rmSync(reference);
        if (leftBehind) midway++;
        if (leftBehind && before.base > 0) midwayOnCompacted++;
        rounds.push(
          `round ${round}: killed ${leftBehind ? 'before' : 'after'} the switch; old log ${before.events.length} events from ${before.base}, new ${after.events.length} from ${after.base}`,
        );
      } else {
        rounds.push(
          caughtAt === null
            ? `round ${round}: no compaction caught in ${CATCH_MS / 1000} s; killed anyway`
            : `round ${round}: the old log was gone before the link`,
        );
      }
    }
    expect({ midway: midway >= WANTED_MIDWAY, midwayOnCompacted: midwayOnCompacted > 0, rounds }).toEqual({ midway: true, midwayOnCompacted: true, rounds });
    process.stdout.write(`${rounds.join('\n')}\n`);

    // And it runs on: the service starts on the last log and keeps about a retention's worth.
    svc = await startChildService({ dataDir, key: KEY, env: ENV });
    const service = svc;
    const stopWriting = writeStream(service);
    await new Promise((resolve) => setTimeout(resolve, RETENTION_MS * 2));
    await stopWriting();
    const metric = async (name: string) =>
      Number(new RegExp(`^${name} (\\d+)`, 'm').exec((await service.api('GET', '/metrics', undefined, { key: null })).body)![1]);
    const kept = await metric('cloudplane_event_log_events');
    expect(kept).toBeGreaterThan(0);
    const audit = await eventually(async () => {
      const res = await service.api('GET', '/api/v1/audit-log?limit=1');
      return res.status === 200 ? res : null;
    });
    expect(audit.body.data.length).toBe(1);
    expect(await service.stop()).toBe(0);
  });
});
