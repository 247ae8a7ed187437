/**
 * Scale benchmark (`make bench-scale`): how a list page costs as one team's collection
 * grows. For each store (embedded, Kubernetes) the real service runs in a child process of
 * its own (this file, mode `service`, forked with --expose-gc, so that its RSS is its own
 * and the load generator does not share its event loop). The collection is grown to each
 * size of BENCH_SCALE_SIZES (1000,10000,100000), every load balancer created by the write
 * the API makes (ResourceWriter.create: first status and creation event in one write) and
 * provisioned to `running` by the service's own reconcilers; then, next to a bare Fastify
 * route measured just before (the baseline), autocannon measures
 *   - the first page: GET /api/v1/load-balancers?limit=100,
 *   - the deepest page: the same with a cursor the API handed out in a walk of the first
 *     size, whose position is then the last 100 rows of the collection at every size,
 * and the child reports its memory after a forced GC. Every figure is written also as a
 * ratio to the baseline of the same row and to the first size of the same store.
 * Writes bench/results/scale-<timestamp>.json and bench/results/scale-latest.md.
 */
import { execFileSync, fork, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import inspector from 'node:inspector/promises';
import { constants as perfConstants, monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import Fastify from 'fastify';
import { CoreV1Api } from '@kubernetes/client-node';
import { machine, memoryAfterGc, nextReply, round, sendReply, serviceExecArgv, stackOf, writeResults } from './report';
import { SettledObjects } from './settled';
import { loadInWorker } from './load-worker';
import { ruleContextOf } from '../src/events/catalog';
import { packageRoot } from '../src/lib/package-root';
import { known } from '../src/lib/known';
import { codeOf } from '../src/lib/unknown-values';

const KEY = 'cpk_Bench0123456789abcdefghijABCDEFGHIJKLMNO';
const REPO = packageRoot(__dirname);
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SIZES = (process.env.BENCH_SCALE_SIZES ?? '1000,10000,100000').split(',').map(Number);
const STORES = (process.env.BENCH_SCALE_STORES ?? 'embedded,kubernetes').split(',') as StoreName[];
const DURATION_S = env('BENCH_DURATION_S', 5);
/** Rounds of the two page rows at each size; each row reports its median round (see medianRound). */
const ROUNDS = Math.max(1, env('BENCH_ROUNDS', 3));
const WARMUP_S = env('BENCH_WARMUP_S', 1);
const CONNECTIONS = env('BENCH_CONNECTIONS', 8);
const SEED_CONCURRENCY = env('BENCH_SEED_CONCURRENCY', 32);
const WORKERS = env('BENCH_WORKERS', 4);
const SIM_DELAY_MS = env('BENCH_SIM_DELAY_MS', 0);
const SEED_TIMEOUT_S = env('BENCH_SEED_TIMEOUT_S', 1800);
const PAGE = 100;

type StoreName = 'embedded' | 'kubernetes';

const log = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------
// The child: the service under measurement.

type ChildRequest =
  | { type: 'seed'; target: number; concurrency: number; timeoutMs: number }
  | { type: 'measure' }
  | { type: 'cpu' }
  | { type: 'measured'; label: string }
  | { type: 'stop' };

interface Memory {
  rss_mb: number;
  heap_used_mb: number;
  heap_total_mb: number;
  external_mb: number;
  array_buffers_mb: number;
}

interface SeedResult {
  created: number;
  total: number;
  create_s: number;
  until_running_s: number;
  /** From the end of the creates until every outbox was relayed and every consumer of the bus had caught up. */
  until_consumed_s: number;
  running: number;
}

type ChildReply =
  | { type: 'ready'; url: string; team_id: string }
  | { type: 'failed'; error: string }
  | { type: 'seeded'; result: SeedResult }
  | { type: 'measure'; memory: Memory }
  | { type: 'cpu'; cpu_percent: number }
  | { type: 'measured'; event_loop_max_ms: number; collections: Collections; held_json_mb: number }
  | { type: 'stopped' };

async function child(): Promise<void> {
  const send: (reply: ChildReply) => void = sendReply;
  const { loadConfig } = await import('../src/config');
  const { createLogger } = await import('../src/logger');
  const { startService } = await import('../src/service');
  const { loadBalancerFamily: family } = await import('../src/resources/load-balancer');
  const config = loadConfig(process.env);
  const service = await startService(config, createLogger(config.logLevel));
  const { teamId, keyId } = known(service.bootstrap, 'the bootstrap team and key');
  const settled = new SettledObjects(service.ctx.store, family.kind, 'running');
  let created = 0;

  const seed = async (target: number, concurrency: number, timeoutMs: number): Promise<SeedResult> => {
    const t0 = performance.now();
    const from = created;
    // What POST /api/v1/load-balancers writes, without the HTTP round trip and without its
    // name-uniqueness and quota checks: the names are unique by construction.
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (created < target) {
          const n = created++;
          const spec = family.specFromCreate({ name: `scale-${n}`, region: 'fra1' }, ruleContextOf(config));
          await service.ctx.writer.create(family, teamId, spec, keyId);
        }
      }),
    );
    const t1 = performance.now();
    const deadline = Date.now() + timeoutMs;
    let running = 0;
    let untilRunningS: number | null = null;
    // Measured at rest, as a long-running service is: every one running and its events
    // relayed to the bus and consumed, not while the service still catches up on the seeding's tail.
    for (;;) {
      running = settled.inStateCount;
      if (running >= target) untilRunningS ??= round((performance.now() - t1) / 1000);
      const relayed = settled.settledCount >= target;
      // ... and handled by every consumer of the bus (the webhook dispatcher, the agent, ...).
      const consumed = relayed && Object.values(await service.ctx.bus.pending()).every((events) => events === 0);
      if ((running >= target && consumed) || Date.now() > deadline) break;
      await sleep(1000);
    }
    return {
      created: target - from,
      total: target,
      create_s: round((t1 - t0) / 1000),
      until_running_s: untilRunningS ?? round((performance.now() - t1) / 1000),
      until_consumed_s: round((performance.now() - t1) / 1000),
      running,
    };
  };

  // How long the event loop was held at most while the rows ran: a stall shows here even
  // when no request completed during it.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const collections = new CollectionWatch();
  const rowProfile = process.env.BENCH_ROW_PROF_DIR ? new RowProfile(process.env.BENCH_ROW_PROF_DIR) : null;
  let cpuSince = { usage: process.cpuUsage(), at: performance.now() };

  process.on('message', (request: ChildRequest) => {
    void (async () => {
      if (request.type === 'seed') send({ type: 'seeded', result: await seed(request.target, request.concurrency, request.timeoutMs) });
      else if (request.type === 'measure') {
        const memory = await memoryAfterGc();
        cpuSince = { usage: process.cpuUsage(), at: performance.now() };
        loopDelay.reset();
        collections.reset();
        await rowProfile?.start();
        send({ type: 'measure', memory });
      } else if (request.type === 'cpu') {
        const { user, system } = process.cpuUsage(cpuSince.usage);
        send({ type: 'cpu', cpu_percent: round(((user + system) / 1000 / (performance.now() - cpuSince.at)) * 100, 1) });
      } else if (request.type === 'measured') {
        await rowProfile?.stop(request.label);
        const eventLoopMaxMs = round(loopDelay.max / 1e6, 1);
        // Read after the rows: on a store that parses records on demand, reading them all is work of its own.
        const heldJsonMb = mb(jsonBytesOf(await service.ctx.store.list(family.kind, teamId)));
        send({ type: 'measured', event_loop_max_ms: eventLoopMaxMs, collections: collections.summary(), held_json_mb: heldJsonMb });
      } else {
        // 'stop', the one request left.
        await service.stop();
        send({ type: 'stopped' });
        process.disconnect();
        process.exit(0);
      }
    })().catch((err: unknown) => {
      send({ type: 'failed', error: stackOf(err) });
    });
  });
  send({ type: 'ready', url: service.url, team_id: teamId });
}

const mb = (bytes: number) => round(bytes / 1e6, 1);

/** The JSON of what the store holds of the load balancers: what "heap per JSON held" is per. */
const jsonBytesOf = (objects: readonly object[]) => objects.reduce((sum, object) => sum + Buffer.byteLength(JSON.stringify(object)), 0);

/** What the garbage collector stopped the service for while the rows of a size ran. */
interface Collections {
  seconds: number;
  /** Young-generation collections (scavenges): how many, and how long each held the thread. */
  scavenges: number;
  scavenge_p50_ms: number;
  scavenge_p99_ms: number;
  scavenge_max_ms: number;
  /** Full (mark-compact) collections' final pauses, and their total. */
  full: number;
  full_total_ms: number;
}

/**
 * Every collection's pause since reset(), from Node's `gc` performance entries. A list
 * request's p99 at a large size is mostly its wait behind a scavenge, whose pause grows
 * with the old generation (V8 visits each of its pages), so each size records both how
 * often the scavenger ran and how long it held the thread.
 */
class CollectionWatch {
  private scavenges: number[] = [];
  private full: number[] = [];
  private since = performance.now();

  constructor() {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
        // Entries arrive a tick late: the forced collections of the memory reading come after reset().
        if (entry.startTime < this.since) continue;
        if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) this.scavenges.push(entry.duration);
        else if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) this.full.push(entry.duration);
      }
    }).observe({ entryTypes: ['gc'] });
  }

  reset(): void {
    this.scavenges = [];
    this.full = [];
    this.since = performance.now();
  }

  summary(): Collections {
    const sorted = [...this.scavenges].sort((a, b) => a - b);
    const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0, 2);
    return {
      seconds: round((performance.now() - this.since) / 1000, 1),
      scavenges: sorted.length,
      scavenge_p50_ms: at(0.5),
      scavenge_p99_ms: at(0.99),
      scavenge_max_ms: round(sorted.at(-1) ?? 0, 2),
      full: this.full.length,
      full_total_ms: round(
        this.full.reduce((a, b) => a + b, 0),
        1,
      ),
    };
  }
}

/** A CPU profile of the service while the rows of one size run (BENCH_ROW_PROF_DIR): the seeding would drown them. */
class RowProfile {
  private readonly session = new inspector.Session();

  constructor(private readonly dir: string) {
    this.session.connect();
  }

  async start(): Promise<void> {
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.start');
  }

  async stop(label: string): Promise<void> {
    const { profile } = await this.session.post('Profiler.stop');
    fs.mkdirSync(this.dir, { recursive: true });
    fs.writeFileSync(path.join(this.dir, `scale-${label}.cpuprofile`), JSON.stringify(profile));
  }
}

// ---------------------------------------------------------------------------------------
// The parent: seeds, measures, writes the report.

interface Row {
  /** With rounds: the p99 of every round, in order; the row's figures are its median round's. */
  rounds_p99_ms?: number[];
  req_per_s: number;
  /** Latencies in ms with µs resolution (bench/load-worker.ts): whole ms would hide a 2x at a p99 of 2-4 ms. */
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** The 2xx responses the latencies were taken from. */
  responses_timed: number;
  errors: number;
  non_2xx: number;
}

async function load(url: string, headers?: Record<string, string>): Promise<Row> {
  const options = { url, headers, connections: CONNECTIONS };
  if (WARMUP_S > 0) await loadInWorker({ ...options, duration: WARMUP_S });
  const r = await loadInWorker({ ...options, duration: DURATION_S });
  const ms = (us: number) => round(us / 1000, 3);
  return {
    req_per_s: r.req_per_s,
    p50_ms: ms(r.p50_us),
    p99_ms: ms(r.p99_us),
    max_ms: ms(r.max_us),
    responses_timed: r.recorded,
    errors: r.errors,
    non_2xx: r.non_2xx,
  };
}

/**
 * The round whose p99 is the median of the rounds'. One collection or a neighbour's burst
 * lands in some window of a few seconds and not in others, and on a 2-CPU machine it moved
 * one 15 s row's p99 by half (3.3 against 5.5 ms for the same list in one run); the median
 * of three windows leaves one such window out. A real round is reported, not a blend.
 */
function medianRound(rounds: Row[]): Row {
  const median = [...rounds].sort((a, b) => a.p99_ms - b.p99_ms)[Math.floor((rounds.length - 1) / 2)];
  return rounds.length > 1 ? { ...median, rounds_p99_ms: rounds.map((round) => round.p99_ms) } : median;
}

class ServiceChild {
  private constructor(
    private readonly process: ChildProcess,
    readonly url: string,
    readonly teamId: string,
  ) {}

  static async start(environment: Record<string, string>): Promise<ServiceChild> {
    // The child's environment is the service's configuration alone, and the row profile's place.
    const rowProfileDir = process.env.BENCH_ROW_PROF_DIR ? { BENCH_ROW_PROF_DIR: process.env.BENCH_ROW_PROF_DIR } : {};
    const proc = fork(__filename, ['service'], {
      execArgv: serviceExecArgv(),
      env: { PATH: process.env.PATH ?? '', ...rowProfileDir, ...environment },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const ready = await nextReply<ChildReply, 'ready'>(proc, 'service', 'ready', 300_000);
    return new ServiceChild(proc, ready.url, ready.team_id);
  }

  private ask<T extends ChildReply['type']>(request: ChildRequest, type: T, timeoutMs: number) {
    const reply = nextReply<ChildReply, T>(this.process, 'service', type, timeoutMs);
    this.process.send(request);
    return reply;
  }

  async seed(target: number): Promise<SeedResult> {
    return (await this.ask({ type: 'seed', target, concurrency: SEED_CONCURRENCY, timeoutMs: SEED_TIMEOUT_S * 1000 }, 'seeded', SEED_TIMEOUT_S * 2000 + 60_000))
      .result;
  }

  /** Memory after a forced GC; the event-loop watch (and row profile) starts from here. */
  async memory(): Promise<Memory> {
    return (await this.ask({ type: 'measure' }, 'measure', 120_000)).memory;
  }

  /** The service's CPU since memory(), in % of one CPU: asked right after the baseline row, what it spends serving nothing. */
  async cpuPercent(): Promise<number> {
    return (await this.ask({ type: 'cpu' }, 'cpu', 120_000)).cpu_percent;
  }

  /** The longest the service's event loop was held since memory(), and its garbage collections since then. */
  async measured(label: string): Promise<{ eventLoopMaxMs: number; collections: Collections; heldJsonMb: number }> {
    const reply = await this.ask({ type: 'measured', label }, 'measured', 120_000);
    return { eventLoopMaxMs: reply.event_loop_max_ms, collections: reply.collections, heldJsonMb: reply.held_json_mb };
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    await this.ask({ type: 'stop' }, 'stopped', 120_000);
    await exited;
  }

  kill(): void {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
  }
}

interface SizeResult {
  size: number;
  seed: SeedResult;
  memory: Memory;
  /**
   * The service's CPU (% of one CPU) while the baseline row ran, which asks the service
   * nothing: its background work at this size (the reconcilers' resync, timers, GC). Older
   * results have none.
   */
  idle_cpu_percent?: number;
  /** The longest the service's event loop was held while the rows of this size ran (older results have none). */
  event_loop_max_ms?: number;
  /** The JSON of every load balancer the store holds (read after the rows): what the heap is compared with. */
  held_json_mb?: number;
  /** The garbage collections while the rows of this size ran (older results have none). */
  collections?: Collections;
  load_average: number[];
  baseline: Row;
  first_page: Row;
  deepest_page: Row & { rows_before: number };
  /** first_page / deepest_page against the baseline of the same row and the first size of the same store. */
  ratios: {
    first_page: { req_per_s_of_baseline: number; p99_x_baseline: number; p99_x_first_size: number };
    deepest_page: { req_per_s_of_baseline: number; p99_x_baseline: number; p99_x_first_size: number };
    rss_x_first_size: number;
  };
}

interface StoreResult {
  store: StoreName;
  sizes: SizeResult[];
  failure?: { size: number; step: string; error: string };
}

/**
 * A GET that waits out load shedding as a client would: a 503 service_overloaded (the
 * service still busy right after seeding: compaction, a resync) is retried after its
 * Retry-After, for up to two minutes.
 */
async function getRetryingOverload(url: string): Promise<Response> {
  for (const giveUpAt = Date.now() + 120_000; ;) {
    const res = await fetch(url, { headers: { authorization: `Bearer ${KEY}` } });
    if (res.status !== 503 || Date.now() > giveUpAt) return res;
    await res.arrayBuffer();
    await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);
  }
}

/** Walks the list from the start and returns the cursor after `items` rows (a multiple of PAGE). */
async function cursorAfter(url: string, items: number): Promise<string> {
  let cursor: string | null = null;
  for (let seen = 0; seen < items; seen += PAGE) {
    const res = await getRetryingOverload(`${url}/api/v1/load-balancers?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    const body = (await res.json()) as { data: unknown[]; meta: { next_cursor?: string | null } };
    if (res.status !== 200 || body.data.length !== PAGE || !body.meta.next_cursor) throw new Error(`the walk ended early at ${seen} (${res.status})`);
    cursor = body.meta.next_cursor;
  }
  if (cursor === null) throw new Error(`no cursor after ${items} rows: the walk needs a page or more`);
  return cursor;
}

async function ensureNamespace(kubeconfigPath: string, name: string): Promise<void> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } })
    .catch((err: unknown) => {
      if (codeOf(err) !== 409) throw err;
    });
}

async function measureStore(result: StoreResult, baselineUrl: string, save: () => void): Promise<void> {
  const store = result.store;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-scale-'));
  const environment: Record<string, string> = {
    // Settings of the service under test (CLOUDPLANE_HEAP_GROWING_PERCENT, say) from this run's environment; the benchmark's own below win.
    ...Object.fromEntries(
      Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('CLOUDPLANE_') && entry[1] !== undefined),
    ),
    CLOUDPLANE_PORT: '0',
    CLOUDPLANE_HOST: '127.0.0.1',
    CLOUDPLANE_DATA_DIR: dataDir,
    CLOUDPLANE_LOG_LEVEL: 'warn',
    CLOUDPLANE_BOOTSTRAP_API_KEY: KEY,
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000000',
    CLOUDPLANE_QUOTAS: 'load_balancer=100000000',
    CLOUDPLANE_SIM_DELAY_MS: String(SIM_DELAY_MS),
    CLOUDPLANE_WORKERS: String(WORKERS),
    // At rest means the outboxes drained too, as they are 5 minutes after a resource's last
    // change (the relay waits that long for a write that takes them out anyway): at once here.
    CLOUDPLANE_OUTBOX_DRAIN_SECONDS: '0',
  };
  let stopKube: (() => Promise<void>) | undefined;
  let service: ServiceChild | undefined;
  let size = 0;
  let step = 'start';
  try {
    if (store === 'kubernetes') {
      step = 'start kube-apiserver';
      const { startKubeApiServer } = await import('../test/helpers/kube-apiserver');
      const { installCrds } = await import('../test/helpers/cluster');
      const { namespaceOfTeam } = await import('../src/store/kubernetes/names');
      process.env.KUBE_APISERVER_BIN ??= execFileSync(path.join(REPO, 'scripts/build-kube-component.sh'), ['kube-apiserver'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      }).trim();
      log('starting etcd + kube-apiserver and installing the CRDs...');
      const server = await startKubeApiServer();
      stopKube = () => server.stop();
      await installCrds(server);
      Object.assign(environment, {
        CLOUDPLANE_STORE: 'kubernetes',
        CLOUDPLANE_KUBECONFIG: server.kubeconfigPath,
        CLOUDPLANE_SYSTEM_NAMESPACE: 'cloudplane-system',
        // The simulated provider, as on the embedded store: the HAProxy driver makes a Service
        // per load balancer, and the API server's service range is full after a few hundred.
        CLOUDPLANE_JOB_DRIVER: 'simulated',
        CLOUDPLANE_DRIVER_LOAD_BALANCER: 'simulated',
      });
      step = 'start the service';
      service = await ServiceChild.start(environment);
      await ensureNamespace(server.kubeconfigPath, namespaceOfTeam(service.teamId, 'cloudplane-system'));
    } else {
      step = 'start the service';
      service = await ServiceChild.start(environment);
    }
    const auth = { authorization: `Bearer ${KEY}` };
    let deepCursor = '';
    for (size of SIZES) {
      step = 'seed';
      log(`${store}: growing the collection to ${size} load balancers...`);
      const seed = await service.seed(size);
      log(
        `  created ${seed.created} in ${seed.create_s} s, all running ${seed.until_running_s} s later (${seed.running} running), every event relayed and consumed at ${seed.until_consumed_s} s`,
      );
      if (seed.running < size) throw new Error(`only ${seed.running} of ${size} load balancers reached running within ${SEED_TIMEOUT_S} s`);
      step = 'measure';
      const memory = await service.memory();
      // The cursor of the first size's last page stays on the same row as newer rows are
      // added in front of it (newest first): at every size it asks for the last 100 rows.
      if (!deepCursor) deepCursor = await cursorAfter(service.url, size - PAGE);
      const loadAverage = os.loadavg();
      log(
        `  RSS ${memory.rss_mb} MB, heap ${memory.heap_used_mb} MB; baseline, then ${ROUNDS} rounds of first page and deepest page (${WARMUP_S}+${DURATION_S} s each)...`,
      );
      const baseline = await load(`${baselineUrl}/ping`);
      const idleCpuPercent = await service.cpuPercent();
      const firstRounds: Row[] = [];
      const deepestRounds: Row[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        firstRounds.push(await load(`${service.url}/api/v1/load-balancers?limit=${PAGE}`, auth));
        deepestRounds.push(await load(`${service.url}/api/v1/load-balancers?limit=${PAGE}&cursor=${encodeURIComponent(deepCursor)}`, auth));
      }
      const firstPage = medianRound(firstRounds);
      const deepestPage = medianRound(deepestRounds);
      const { eventLoopMaxMs, collections, heldJsonMb } = await service.measured(`${store}-${size}`);
      log(
        `  baseline ${baseline.req_per_s}/s p99 ${baseline.p99_ms} ms; first page ${firstPage.req_per_s}/s p99 ${firstPage.p99_ms} ms; deepest page ${deepestPage.req_per_s}/s p99 ${deepestPage.p99_ms} ms; event loop held ${eventLoopMaxMs} ms at most; service CPU during the baseline ${idleCpuPercent} %`,
      );
      const first = result.sizes.at(0);
      const ratiosOf = (row: Row, firstRow: Row | undefined) => ({
        req_per_s_of_baseline: round(row.req_per_s / baseline.req_per_s, 4),
        p99_x_baseline: round(row.p99_ms / baseline.p99_ms),
        p99_x_first_size: round(row.p99_ms / (firstRow ?? row).p99_ms),
      });
      result.sizes.push({
        size,
        seed,
        memory,
        idle_cpu_percent: idleCpuPercent,
        event_loop_max_ms: eventLoopMaxMs,
        held_json_mb: heldJsonMb,
        collections,
        load_average: loadAverage,
        baseline,
        first_page: firstPage,
        deepest_page: { ...deepestPage, rows_before: size - PAGE },
        ratios: {
          first_page: ratiosOf(firstPage, first?.first_page),
          deepest_page: ratiosOf(deepestPage, first?.deepest_page),
          rss_x_first_size: round(memory.rss_mb / (first ?? { memory }).memory.rss_mb),
        },
      });
      save();
    }
  } catch (err) {
    result.failure = { size, step, error: err instanceof Error ? err.message : String(err) };
    log(`${store}: FAILED at ${size} (${step}): ${result.failure.error}`);
    save();
  } finally {
    await service?.stop().catch(() => service?.kill());
    service?.kill();
    await stopKube?.();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

function sourceState() {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
  try {
    return {
      commit: git('rev-parse', 'HEAD'),
      branch: git('rev-parse', '--abbrev-ref', 'HEAD'),
      uncommitted_src: git('status', '--porcelain', '--', 'src').split('\n').filter(Boolean),
    };
  } catch {
    return { commit: 'unknown', branch: 'unknown', uncommitted_src: [] };
  }
}

/** The run's settings (BENCH_*). */
interface Settings {
  sizes: number[];
  stores: StoreName[];
  connections: number;
  duration_s: number;
  /** Older results have none (one round). */
  rounds?: number;
  warmup_s: number;
  workers: number;
  sim_delay_ms: number;
  seed_concurrency: number;
  page: number;
}

export interface Report {
  started_at: string;
  duration_s: number;
  machine: ReturnType<typeof machine>;
  source: ReturnType<typeof sourceState>;
  load_average: { before: number[]; after: number[] };
  settings: Settings;
  note: string;
  stores: StoreResult[];
}

export function markdown(r: Report): string {
  const m = r.machine;
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
  const lines = [
    `# Scale benchmark, ${r.started_at}`,
    '',
    `Machine: ${m.cpu_model}, ${m.cpu_count} CPUs, ${m.total_memory_gb} GB RAM, ${m.platform}, Node ${m.node}.`,
    `Code: ${r.source.branch} at ${r.source.commit.slice(0, 12)}${r.source.uncommitted_src.length ? `, with uncommitted changes in ${r.source.uncommitted_src.length} src/ files` : ''}.`,
    `Load average (1/5/15 min) before: ${load(r.load_average.before)}, after: ${load(r.load_average.after)}. The whole run took ${Math.round(r.duration_s)} s.`,
    `Settings: ${r.settings.connections} connections, ${r.settings.warmup_s} s warm-up then ${r.settings.duration_s} s per row${r.settings.rounds ? `, ${r.settings.rounds} rounds of the page rows (each row shows its median round; the p99 of every round in brackets)` : ''}, autocannon in a worker thread of the benchmark process, latencies recorded in µs (bench/load-worker.ts); the service in a child process (${r.settings.workers} workers per controller, simulated provider with ${r.settings.sim_delay_ms} ms delays). One team; every load balancer \`running\`.`,
    '',
    `> ${r.note}`,
    '',
  ];
  for (const s of r.stores) {
    lines.push(
      `## ${s.store} store`,
      '',
      '| load balancers | page | req/s | p50 ms | p99 ms | req/s ÷ baseline | p99 × baseline | p99 × first size | RSS MB (× first size) | heap used MB | event loop held, max ms | service CPU during the baseline, % of one CPU | baseline req/s, p99 ms | load avg (1 min) |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const x of s.sizes) {
      const row = (name: string, p: Row, q: SizeResult['ratios']['first_page']) =>
        `| ${x.size} | ${name} | ${p.req_per_s} | ${p.p50_ms} | ${p.p99_ms}${p.rounds_p99_ms ? ` (${p.rounds_p99_ms.join(', ')})` : ''} | ${q.req_per_s_of_baseline} | ${q.p99_x_baseline} | **${q.p99_x_first_size}** | ${x.memory.rss_mb} (${x.ratios.rss_x_first_size}) | ${x.memory.heap_used_mb} | ${x.event_loop_max_ms ?? '–'} | ${x.idle_cpu_percent ?? '–'} | ${x.baseline.req_per_s}, ${x.baseline.p99_ms} | ${x.load_average[0].toFixed(2)} |`;
      lines.push(row('first', x.first_page, x.ratios.first_page), row(`last (after ${x.deepest_page.rows_before})`, x.deepest_page, x.ratios.deepest_page));
    }
    lines.push(
      '',
      'Memory after a forced GC: ' +
        s.sizes
          .map(
            ({ size, memory: m, held_json_mb: json }) =>
              `${size}: RSS ${m.rss_mb} MB, heap used ${m.heap_used_mb} of ${m.heap_total_mb} MB, external ${m.external_mb} MB` +
              (json ? `, JSON of the load balancers held ${json} MB (heap used ÷ JSON ${round(m.heap_used_mb / json)})` : ''),
          )
          .join('; ') +
        '.',
      '',
    );
    const watched = s.sizes.filter((x): x is SizeResult & { collections: Collections } => x.collections !== undefined);
    if (watched.length)
      lines.push(
        'Garbage collection while the rows ran (from the memory reading to the last row): ' +
          watched
            .map(
              ({ size, collections: c }) =>
                `${size}: ${c.scavenges} scavenges in ${c.seconds} s, pause p50 ${c.scavenge_p50_ms} ms, p99 ${c.scavenge_p99_ms} ms, max ${c.scavenge_max_ms} ms; ${c.full} full, ${c.full_total_ms} ms in all`,
            )
            .join('; ') +
          '.',
        '',
      );
    lines.push(
      'Seeding (ResourceWriter.create, then the reconcilers to `running`, then every event relayed and consumed): ' +
        s.sizes
          .map(
            (x) =>
              `${x.size}: ${x.seed.created} created in ${x.seed.create_s} s, running ${x.seed.until_running_s} s later, events consumed at ${x.seed.until_consumed_s} s`,
          )
          .join('; ') +
        '.',
    );
    if (s.failure) lines.push('', `**Failed** at ${s.failure.size} load balancers (${s.failure.step}): \`${s.failure.error}\``);
    const errors = s.sizes.flatMap((x) => [x.first_page, x.deepest_page]).reduce((n, p) => n + p.errors + p.non_2xx, 0);
    if (errors) lines.push('', `${errors} requests failed or answered other than 2xx (see the JSON).`);
    lines.push('');
  }
  lines.push(
    'The baseline is a bare Fastify route returning a small JSON object, measured just before each size. Done-when of issue 16: p99 at 100k within 2x of 1k (the **p99 × first size** column). See bench/README.md.',
    '',
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const t0 = performance.now();
  const loadBefore = os.loadavg();
  const source = sourceState();
  const baseline = Fastify({ logger: false });
  // A promise, as from the async route it was: the ceiling stays the one earlier runs measured.
  baseline.get('/ping', () => Promise.resolve({ ok: true, service: 'baseline', version: 1 }));
  await baseline.listen({ host: '127.0.0.1', port: 0 });
  const address = baseline.server.address();
  const baselineUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const stores: StoreResult[] = [];
  const report: Report = {
    started_at: startedAt.toISOString(),
    duration_s: 0,
    machine: machine(),
    source,
    load_average: { before: loadBefore, after: os.loadavg() },
    settings: {
      sizes: SIZES,
      stores: STORES,
      connections: CONNECTIONS,
      duration_s: DURATION_S,
      rounds: ROUNDS,
      warmup_s: WARMUP_S,
      workers: WORKERS,
      sim_delay_ms: SIM_DELAY_MS,
      seed_concurrency: SEED_CONCURRENCY,
      page: PAGE,
    },
    note:
      process.env.BENCH_NOTE ??
      'Run on a shared 2-CPU machine with other processes beside it (see the load averages): read the ratios, not the absolute figures.',
    stores,
  };
  // Written again after every size, so that a run cut short keeps what it measured.
  const save = () => {
    report.duration_s = round((performance.now() - t0) / 1000, 1);
    report.load_average.after = os.loadavg();
    return writeResults('scale', startedAt, report, markdown(report));
  };
  try {
    for (const store of STORES) {
      const result: StoreResult = { store, sizes: [] };
      stores.push(result);
      await measureStore(result, baselineUrl, save);
    }
  } finally {
    await baseline.close();
  }
  const written = save();
  log(`wrote ${written.jsonFile} and ${written.markdownFile}`);
}

if (process.argv[2] === 'service') {
  child().catch((err: unknown) => {
    process.send?.({ type: 'failed', error: stackOf(err) });
    process.exit(1);
  });
} else if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
