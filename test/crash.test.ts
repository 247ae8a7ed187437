/**
 * Crash safety of the embedded service, end to end: the real service runs as a child
 * process and is killed with SIGKILL in the middle of a stream of writes. After a
 * restart on the same data directory every acknowledged write is there, the reconcilers
 * finish what was in flight, and the event log holds each lifecycle event exactly once.
 * A torn last line of the log (a write the crash cut short) is ignored and costs nothing
 * that was acknowledged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startChildService, ChildService } from './helpers/child-service';
import { tempDataDir, eventually } from './helpers/service';
import { EmbeddedEventBus } from '../src/events/embedded-bus';
import { EmbeddedStore } from '../src/store/embedded';
import type { CloudEvent } from '../src/resources/cloud-event';
import { pageAll } from './helpers/paging';

jest.setTimeout(180_000);

/** A fixed bootstrap key: `cpk_` and 40 base62 characters. */
const KEY = 'cpk_CrashTest0123456789abcdefghijABCDEFGHIJ';
// The writers create load balancers back to back, more than the default quota.
// No cap on connections per address: after each restart the test reads every load balancer
// a crash left half done at once (often over 64), from one address, as many clients would.
const ENV = {
  CLOUDPLANE_SIM_DELAY_MS: '300',
  CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000',
  CLOUDPLANE_RESYNC_SECONDS: '5',
  CLOUDPLANE_QUOTAS: 'load_balancer=1000000',
  CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
  // Few objects kept parsed and a small log: most reads come from the objects' places in the
  // log and the snapshot, and compactions move them there while the crashes happen.
  CLOUDPLANE_STORE_PARSED_OBJECTS: '50',
  CLOUDPLANE_STORE_COMPACT_BYTES: String(256 * 1024),
};
const ROUNDS = 3;
const WRITERS = 12;
const REGIONS = ['fra1', 'ams3', 'lon1', 'nyc1', 'sfo3', 'sgp1'];
const ALGORITHMS = ['round_robin', 'least_connections', 'ip_hash'];
const EPOCH = '1970-01-01T00:00:00.000Z';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];

/** What the API must show for a load balancer: the fields the stream changes. */
interface Expected {
  algorithm: string;
  sticky_sessions: boolean;
  health_check_path: string;
  deleted: boolean;
}

interface Op {
  kind: 'create' | 'patch' | 'delete';
  /** The state after this op, if it took effect. */
  after: Expected;
}

interface Tracked {
  id: string;
  round: number;
  /** Every op that got a 2xx answer, in order. */
  acknowledged: Op[];
  /** The op that was on the wire when the process died: it may or may not have happened. */
  inFlight: Op | null;
}

interface StreamResult {
  tracked: Tracked[];
  /** Creates that were on the wire at the kill: the id is unknown, the record may exist. */
  unacknowledgedCreates: number;
  unexpected: string[];
  writes: number;
}

/**
 * Writers that each drive one load balancer at a time through create, a few PATCHes
 * and maybe a DELETE, sequentially, so that at most one op of a load balancer is in
 * flight when the process dies. Stops when requests start failing.
 */
async function writeStream(svc: ChildService, round: number, dead: () => boolean): Promise<StreamResult> {
  const result: StreamResult = { tracked: [], unacknowledgedCreates: 0, unexpected: [], writes: 0 };
  const writer = async (w: number) => {
    for (let n = 0; !dead(); n++) {
      const initial: Expected = { algorithm: pick(ALGORITHMS), sticky_sessions: false, health_check_path: '/health', deleted: false };
      let response;
      try {
        response = await svc.api('POST', '/api/v1/load-balancers', { name: `crash-${round}-${w}-${n}`, region: pick(REGIONS), algorithm: initial.algorithm });
      } catch {
        result.unacknowledgedCreates++;
        return;
      }
      result.writes++;
      if (response.status !== 201) {
        result.unexpected.push(`POST -> ${response.status} ${JSON.stringify(response.body)}`);
        return;
      }
      const lb: Tracked = { id: response.body.data.id, round, acknowledged: [{ kind: 'create', after: initial }], inFlight: null };
      result.tracked.push(lb);
      let state = initial;
      const patches = Math.floor(Math.random() * 3);
      const steps: Array<'patch' | 'delete'> = [...Array(patches).fill('patch'), ...(Math.random() < 0.35 ? ['delete' as const] : [])];
      for (const step of steps) {
        if (dead()) return;
        const op: Op =
          step === 'patch'
            ? {
                kind: 'patch',
                after: {
                  ...state,
                  algorithm: pick(ALGORITHMS),
                  sticky_sessions: !state.sticky_sessions,
                  health_check_path: `/health/${w}-${n}-${Math.floor(Math.random() * 1e6)}`,
                },
              }
            : { kind: 'delete', after: { ...state, deleted: true } };
        lb.inFlight = op;
        try {
          response =
            step === 'patch'
              ? await svc.api('PATCH', `/api/v1/load-balancers/${lb.id}`, {
                  algorithm: op.after.algorithm,
                  sticky_sessions: op.after.sticky_sessions,
                  health_check_path: op.after.health_check_path,
                })
              : await svc.api('DELETE', `/api/v1/load-balancers/${lb.id}`);
        } catch {
          return; // the process died with this op on the wire
        }
        result.writes++;
        lb.inFlight = null;
        if (response.status !== 200) {
          result.unexpected.push(`${step} ${lb.id} -> ${response.status} ${JSON.stringify(response.body)}`);
          return;
        }
        lb.acknowledged.push(op);
        state = op.after;
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  return result;
}

/** Every load balancer of the team, deleted ones included, through the paged list. */
async function listAll(svc: ChildService, status?: string): Promise<any[]> {
  return pageAll(svc.api, `/api/v1/load-balancers${status ? `?status=${status}` : ''}`);
}

/** Every load_balancer.* event the audit log shows. */
async function auditEvents(svc: ChildService): Promise<CloudEvent[]> {
  return pageAll(svc.api, '/api/v1/audit-log?type=load_balancer.*');
}

const matches = (record: any, expected: Expected) =>
  record.algorithm === expected.algorithm &&
  record.sticky_sessions === expected.sticky_sessions &&
  record.health_check_path === expected.health_check_path &&
  (record.status === 'deleted') === expected.deleted;

const describeState = (record: any) =>
  JSON.stringify({ status: record.status, algorithm: record.algorithm, sticky_sessions: record.sticky_sessions, health_check_path: record.health_check_path });

/**
 * What a crash left half done, read from the store of a dead service: load balancers
 * still `creating`, and those whose deletion was asked for but not carried out.
 */
async function halfDone(dataDir: string): Promise<{ creating: string[]; deleting: string[] }> {
  const store = new EmbeddedStore({ dataDir });
  await store.start(); // takes over the dead process's lock
  try {
    const all = await store.list<unknown, { status: string }>('LoadBalancer');
    return {
      creating: all.filter((o) => o.status.status === 'creating' && !o.meta.deletionTimestamp).map((o) => o.meta.id),
      deleting: all.filter((o) => o.status.status !== 'deleted' && o.meta.deletionTimestamp).map((o) => o.meta.id),
    };
  } finally {
    await store.stop();
  }
}

/** Checks every tracked load balancer against what was acknowledged; returns the mismatches. */
async function verifyAcknowledged(svc: ChildService, tracked: Tracked[]): Promise<string[]> {
  const problems: string[] = [];
  for (const lb of tracked) {
    const res = await svc.api('GET', `/api/v1/load-balancers/${lb.id}`);
    if (res.status !== 200) {
      problems.push(`${lb.id} (round ${lb.round}): acknowledged create, GET answers ${res.status}`);
      continue;
    }
    const record = res.body.data;
    const acknowledged = lb.acknowledged[lb.acknowledged.length - 1].after;
    const possible = [acknowledged, ...(lb.inFlight ? [lb.inFlight.after] : [])];
    if (!possible.some((expected) => matches(record, expected))) {
      problems.push(
        `${lb.id} (round ${lb.round}): shows ${describeState(record)}, acknowledged ${JSON.stringify(acknowledged)}${lb.inFlight ? ` or, with the op in flight, ${JSON.stringify(lb.inFlight.after)}` : ''}`,
      );
    }
    // An op in flight that did happen is now the acknowledged state for later rounds.
    if (lb.inFlight && matches(record, lb.inFlight.after) && !matches(record, acknowledged)) lb.acknowledged.push(lb.inFlight);
    lb.inFlight = null;
  }
  return problems;
}

describe('crash safety (SIGKILL of the real service)', () => {
  const children: ChildService[] = [];
  const start = async (dataDir: string) => {
    const svc = await startChildService({ dataDir, key: KEY, env: ENV });
    children.push(svc);
    return svc;
  };
  afterAll(async () => {
    for (const child of children) await child.kill();
  });

  it('keeps every acknowledged write through SIGKILLs mid-stream, finishes what was in flight, and emits each lifecycle event once', async () => {
    const dataDir = tempDataDir();
    const tracked: Tracked[] = [];
    let leftCreatingByCrashes = 0;
    let totalWrites = 0;
    let unacknowledgedCreates = 0;

    let svc = await start(dataDir);
    for (let round = 1; round <= ROUNDS; round++) {
      // A stream of writes, and a kill at a random moment in it.
      let killed = false;
      const killAfterMs = 400 + Math.floor(Math.random() * 1_200);
      const stream = writeStream(svc, round, () => killed);
      await sleep(killAfterMs);
      await svc.kill();
      killed = true;
      const result = await stream;
      expect(result.unexpected).toEqual([]);
      tracked.push(...result.tracked);
      totalWrites += result.writes;
      unacknowledgedCreates += result.unacknowledgedCreates;

      // What the crash left half done, read from the data directory at rest.
      const left = await halfDone(dataDir);
      leftCreatingByCrashes += left.creating.length;

      // Restart on the same data directory: every acknowledged write is there.
      svc = await start(dataDir);
      // A deletion that reached the store is carried out by the reconciler, the only writer
      // of status: until it has run, the API shows the state from before (with the DELETE
      // unacknowledged, either is right), and this round must judge the outcome.
      const statusOf = async (id: string) => (await svc.api('GET', `/api/v1/load-balancers/${id}`)).body.data.status;
      await eventually(async () => (await Promise.all(left.deleting.map(statusOf))).every((status) => status === 'deleted'), 30_000, 200);
      const problems = await verifyAcknowledged(svc, tracked);
      if (problems.length)
        throw new Error(
          `round ${round} (killed after ${killAfterMs} ms, ${result.writes} writes acknowledged):\n${problems.join('\n')}\n--- service output ---\n${svc.output()}`,
        );

      // The reconcilers finish what the crash interrupted: nothing stays `creating`.
      await eventually(async () => (await listAll(svc, 'creating')).length === 0, 30_000, 200);
      const finished = async (ids: string[]) => Promise.all(ids.map(async (id) => [id, await statusOf(id)]));
      expect(await finished(left.creating)).toEqual(left.creating.map((id) => [id, 'running']));
      expect(await finished(left.deleting)).toEqual(left.deleting.map((id) => [id, 'deleted']));
    }
    // The stream was real: many acknowledged writes, and the kills left work in flight.
    expect(totalWrites).toBeGreaterThan(ROUNDS * WRITERS);
    expect(tracked.length).toBeGreaterThan(ROUNDS * 5);
    expect(leftCreatingByCrashes).toBeGreaterThan(0);

    // Every load balancer, including those whose create was on the wire at a kill, settled.
    const all = [...(await listAll(svc)), ...(await listAll(svc, 'deleted'))];
    for (const lb of all) expect(['running', 'deleted']).toContain(lb.status);
    expect(all.length).toBeGreaterThanOrEqual(tracked.length);
    expect(all.length).toBeLessThanOrEqual(tracked.length + unacknowledgedCreates);
    const ids = new Set(all.map((lb) => lb.id));
    for (const lb of tracked) expect(ids.has(lb.id)).toBe(true);

    // A load balancer reached running iff it got an address (a deletion while creating skips provisioning).
    const reachedRunning = new Set(all.filter((lb) => lb.ipv4 !== null).map((lb) => lb.id));
    for (const lb of all) if (lb.status === 'running') expect(reachedRunning.has(lb.id)).toBe(true);

    // Let the outbox drain onto the bus, then stop gracefully and read the event log itself.
    await eventually(
      async () => {
        const events = await auditEvents(svc);
        const created = new Set(events.filter((e) => e.type === 'load_balancer.created').map((e) => e.data.id));
        const running = new Set(events.filter((e) => e.type === 'load_balancer.running').map((e) => e.data.id));
        const deleted = new Set(events.filter((e) => e.type === 'load_balancer.deleted').map((e) => e.data.id));
        return all.every((lb) => created.has(lb.id) && (!reachedRunning.has(lb.id) || running.has(lb.id)) && (lb.status !== 'deleted' || deleted.has(lb.id)));
      },
      30_000,
      250,
    );
    expect(await svc.stop()).toBe(0);

    const store = new EmbeddedStore({ dataDir });
    await store.start();
    const stored = await store.list<unknown, { status: string; pending_events: Array<{ id: string }> }>('LoadBalancer');
    await store.stop();
    expect(new Set(stored.map((o) => o.meta.id))).toEqual(ids);
    // What is still in an outbox (the relay leaves published events to the next write) is on the bus already.
    const outboxIds = stored.flatMap((o) => o.status.pending_events.map((e) => e.id));
    const team = stored[0].meta.team;

    const bus = new EmbeddedEventBus(path.join(dataDir, 'events'));
    await bus.start();
    const onBus = await bus.recent(team, EPOCH);
    await bus.stop();
    const busIds = new Set(onBus.map((e) => e.id));
    expect(outboxIds.filter((id) => !busIds.has(id))).toEqual([]);
    const events = onBus.filter((e) => e.type.startsWith('load_balancer.'));
    const count = (type: string, id: string) => events.filter((e) => e.type === type && e.data.id === id).length;
    const miscounted: string[] = [];
    for (const lb of all) {
      const counts = {
        created: count('load_balancer.created', lb.id),
        running: count('load_balancer.running', lb.id),
        deleted: count('load_balancer.deleted', lb.id),
      };
      const want = { created: 1, running: reachedRunning.has(lb.id) ? 1 : 0, deleted: lb.status === 'deleted' ? 1 : 0 };
      if (JSON.stringify(counts) !== JSON.stringify(want)) miscounted.push(`${lb.id}: ${JSON.stringify(counts)}, expected ${JSON.stringify(want)}`);
    }
    expect(miscounted).toEqual([]);
    // No event about a load balancer that does not exist, and no event id twice.
    for (const e of events) expect(ids.has(e.data.id as string)).toBe(true);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('ignores a torn last line of the log on restart and loses nothing acknowledged', async () => {
    const dataDir = tempDataDir();
    let svc = await start(dataDir);
    const acknowledged: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await svc.api('POST', '/api/v1/load-balancers', { name: `torn-${i}`, region: 'fra1' });
      expect(res.status).toBe(201);
      acknowledged.push(res.body.data.id);
    }
    const patched = await svc.api('PATCH', `/api/v1/load-balancers/${acknowledged[0]}`, { algorithm: 'ip_hash' });
    expect(patched.status).toBe(200);
    await svc.kill();

    // The crash cut the last write short: half a JSON line at the end of the store's log.
    const logFile = path.join(dataDir, 'store.log');
    const lastLine = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').pop()!;
    fs.appendFileSync(logFile, lastLine.slice(0, Math.floor(lastLine.length / 2)));
    const eventsLog = path.join(dataDir, 'events', 'events.log');
    if (fs.existsSync(eventsLog)) fs.appendFileSync(eventsLog, '{"id":"evt_torn","type":"load_balancer.crea');

    svc = await start(dataDir);
    for (const id of acknowledged) {
      const res = await svc.api('GET', `/api/v1/load-balancers/${id}`);
      expect(res.status).toBe(200);
    }
    expect((await svc.api('GET', `/api/v1/load-balancers/${acknowledged[0]}`)).body.data.algorithm).toBe('ip_hash');
    for (const id of acknowledged)
      await eventually(async () => (await svc.api('GET', `/api/v1/load-balancers/${id}`)).body.data.status === 'running', 15_000, 100);

    // New writes go after the last complete record, so the next restart reads a clean log.
    const after = await svc.api('POST', '/api/v1/load-balancers', { name: 'after-torn', region: 'ams3' });
    expect(after.status).toBe(201);
    expect(await svc.stop()).toBe(0);
    svc = await start(dataDir);
    const listed = (await listAll(svc)).map((lb) => lb.id);
    expect(new Set(listed)).toEqual(new Set([...acknowledged, after.body.data.id]));
    await eventually(async () => (await svc.api('GET', `/api/v1/load-balancers/${after.body.data.id}`)).body.data.status === 'running', 15_000, 100);
    expect(await svc.stop()).toBe(0);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});
