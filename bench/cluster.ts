/**
 * Cluster-mode benchmark (`make bench-cluster`): the operator on the Kubernetes store
 * against a real kube-apiserver + etcd (test/helpers/kube-apiserver.ts), in a child
 * process of its own (bench/cluster-operator.ts). It measures
 *   1. how fast the reconcilers take load balancers from `creating` to `running`, created
 *      through the API and created as custom resources (as kubectl would, then adopted);
 *   2. the operator's memory with 0 and with BENCH_TOTAL (10 000) load balancers in its
 *      cache, and how long a restarted operator takes to list and sync them.
 * Writes bench/results/cluster-<timestamp>.json and bench/results/cluster-latest.md.
 * See bench/README.md for how to read the results.
 */
import { execFileSync, fork, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import { createLogger } from '../src/logger';
import { CollectionWatcher, KubeObject } from '../src/store/kubernetes/watcher';
import { GROUP, namespaceOfTeam, VERSION } from '../src/store/kubernetes/names';
import { installCrds } from '../test/helpers/cluster';
import { KeepAliveKubeConfig } from '../src/store/kubernetes/keep-alive-config';
import { auditLines, KubeApiServer, startKubeApiServer } from '../test/helpers/kube-apiserver';
import type { Measurement, OperatorReply, OperatorRequest } from './cluster-operator';
import { cpuSecondsOf, machine, machineCpuSeconds, nextReply, pidsWithArgument, serviceExecArgv, sourceState, writeResults } from './report';
import { packageRoot } from '../src/lib/package-root';
import { known } from '../src/lib/known';
import { codeOf } from '../src/lib/unknown-values';

const REPO = packageRoot(__dirname);
const KEY = 'cpk_Bench0123456789abcdefghijABCDEFGHIJKLMNO';
const SYSTEM_NAMESPACE = 'cloudplane-system';
const PLURAL = 'loadbalancers';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const THROUGHPUT_N = env('BENCH_THROUGHPUT_N', 500);
const TOTAL = env('BENCH_TOTAL', 10_000);
const CONCURRENCY = env('BENCH_CONCURRENCY', 20);
const WORKERS = env('BENCH_WORKERS', 4);
/** The API and adopted rows again with this many workers per controller (0: none), to see whether workers are the limit. */
const MORE_WORKERS = env('BENCH_MORE_WORKERS', 16);
const SIM_DELAY_MS = env('BENCH_SIM_DELAY_MS', 50);
/**
 * The operator's outbox drain delay (CLOUDPLANE_OUTBOX_DRAIN_SECONDS; 300 by default):
 * short here so that the relay's removal of the last events, a write per load balancer
 * not written again within the delay, falls inside the row and is counted.
 */
const OUTBOX_DRAIN_S = env('BENCH_OUTBOX_DRAIN_S', 30);
const SETTLE_S = env('BENCH_SETTLE_S', 10);
const WAIT_TIMEOUT_S = env('BENCH_WAIT_TIMEOUT_S', 600);
/**
 * Which parts run (comma-separated): baseline (the API server alone), api, cr, more (the
 * API and adopted rows again with BENCH_MORE_WORKERS), bulk (which the memory and restart sections need).
 */
/** Rounds of the interleaved row: the API server alone and the operator through the API, in turns. */
const ROUNDS = env('BENCH_ROUNDS', 3);
const ROWS = new Set((process.env.BENCH_ROWS ?? 'baseline,api,cr,more,interleaved,bulk').split(',').map((r) => r.trim()));
/** A directory: the operator runs with --cpu-prof and writes its profiles there. */

const log = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The operator child process and a request/reply channel to it. */
class Operator {
  private constructor(
    private readonly child: ChildProcess,
    readonly ready: Extract<OperatorReply, { type: 'ready' }>,
  ) {}

  static async start(mode: 'service' | 'store', environment: Record<string, string>): Promise<Operator> {
    const child = fork(path.join(__dirname, 'cluster-operator.js'), [mode], {
      execArgv: serviceExecArgv(),
      env: { PATH: process.env.PATH ?? '', ...environment },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const ready = await nextReply<OperatorReply, 'ready'>(child, 'operator', 'ready', 180_000);
    return new Operator(child, ready);
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** Where the operator's API listens (mode `service`). */
  get url(): string {
    return known(this.ready.url, "the operator's URL");
  }

  private ask<T extends OperatorReply['type']>(request: OperatorRequest, type: T, timeoutMs = 60_000) {
    const reply = nextReply<OperatorReply, T>(this.child, 'operator', type, timeoutMs);
    this.child.send(request);
    return reply;
  }

  async measure(): Promise<Measurement> {
    return (await this.ask({ type: 'measure' }, 'measure')).measurement;
  }

  /** Memory after a forced GC, and the CPU the process used over `seconds` of waiting. */
  async settled(seconds: number): Promise<Measurement & { cpu_percent: number }> {
    const first = await this.measure();
    await sleep(seconds * 1000);
    const last = await this.measure();
    return { ...last, cpu_percent: round(((last.cpu_ms - first.cpu_ms) / (last.at - first.at)) * 100) };
  }

  /** Requests the operator made to the API server so far, by `verb resource`, and its LoadBalancer reconcile passes. */
  async apiCalls(): Promise<OperatorCounts> {
    const { calls, load_balancer_passes } = await this.ask({ type: 'api-calls' }, 'api-calls');
    return { calls, passes: load_balancer_passes };
  }

  async reconciled(kind: string, count: number, timeoutMs: number) {
    return this.ask({ type: 'reconciled', kind, count, timeoutMs }, 'reconciled', timeoutMs + 10_000);
  }

  async stop(): Promise<number> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    const { stop_ms } = await this.ask({ type: 'stop' }, 'stopped', 120_000);
    await exited;
    return stop_ms;
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/**
 * Watches every load balancer (with the operator's own list-and-watch loop) and notes
 * when each was first seen `running`, by this process's clock.
 */
class RunningTracker {
  readonly runningAt = new Map<string, number>();
  readonly failed = new Set<string>();
  readonly seen = new Set<string>();
  private readonly watcher: CollectionWatcher;

  constructor(kc: KubeConfig) {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const note = (object: KubeObject) => {
      // The baseline's custom resources are the API server's alone: no operator runs them.
      if (object.metadata.namespace === BASELINE_NAMESPACE) return;
      const name = object.metadata.name;
      this.seen.add(name);
      const status = (object.status as { status?: string } | undefined)?.status;
      if (status === 'running' && !this.runningAt.has(name)) this.runningAt.set(name, performance.now());
      if (status === 'failed') this.failed.add(name);
    };
    this.watcher = new CollectionWatcher(
      new Watch(kc),
      {
        path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
        list: async () => {
          const answer = (await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as {
            items: KubeObject[];
            metadata: { resourceVersion: string };
          };
          return { items: answer.items, resourceVersion: answer.metadata.resourceVersion };
        },
      },
      {
        replace: (items) => {
          items.forEach(note);
        },
        upsert: note,
        remove: () => undefined,
      },
      createLogger('warn'),
    );
  }

  start = () => this.watcher.start();
  stop = () => {
    this.watcher.stop();
  };

  /** Waits until every name is running (or failed); false on timeout. */
  async waitAll(names: string[], timeoutMs: number, progress?: (running: number) => void): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    let lastReport = Date.now();
    for (;;) {
      const running = names.filter((n) => this.runningAt.has(n) || this.failed.has(n)).length;
      if (running === names.length) return true;
      if (Date.now() > deadline) return false;
      if (progress && Date.now() - lastReport > 15_000) {
        progress(running);
        lastReport = Date.now();
      }
      await sleep(100);
    }
  }
}

/** Runs `task` for 0..count-1 with at most `concurrency` at a time. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** The manifest kubectl would send for examples/load-balancer.yaml, under another name. */
function loadBalancerCr(name: string, namespace: string) {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'LoadBalancer',
    metadata: { name, namespace },
    spec: { name, region: 'fra1', algorithm: 'round_robin', protocol: 'http', port: 80, health_check_path: '/healthz', sticky_sessions: false, backends: [] },
  };
}

interface ThroughputResult {
  how: string;
  workers: number;
  count: number;
  concurrency: number;
  all_running: boolean;
  running: number;
  failed: number;
  create_s: number;
  creates_per_s: number;
  first_create_to_last_running_s: number;
  running_per_s: number;
  /** running_per_s over the baseline's rate of the same run (null without a baseline row). */
  ratio_to_baseline: number | null;
  latency_s: { p50: number; p99: number; max: number };
  /** Creates the service shed (503) and the load generator sent again, over the whole run so far. */
  shed_503_so_far?: number;
  /** The operator's requests to the API server over the row, per load balancer. */
  api_calls: { until_last_running: ApiCalls; after_outbox_drain: ApiCalls };
  /** Every write the API server audited over the row, per load balancer: whoever made it. */
  audited_writes: { until_last_running: AuditedWrites; after_outbox_drain: AuditedWrites };
  /** Who kept the CPUs busy from the first create until every load balancer ran: which of them was the limit. */
  cpu: CpuShares;
}

/** CPU over a stretch of a row: seconds of each process, and how busy the whole machine was. */
interface CpuShares {
  wall_s: number;
  operator_s: number;
  api_server_and_etcd_s: number;
  /** This process: the creates, and the watch that sees each load balancer run. */
  benchmark_s: number;
  /** Busy CPU time of the whole machine (every process, others' too) over the CPU time it had. */
  machine_busy_percent: number;
}

interface CpuReading {
  at: number;
  operator: number;
  server: number;
  benchmark: number;
  machine: { busy: number; total: number };
}

/** Reads the CPU time so far of the row's processes: the operator, etcd and kube-apiserver (found by their work directory), this one. */
function readCpu(operator: Operator, serverWorkDir: string): CpuReading {
  const own = process.cpuUsage();
  return {
    at: performance.now(),
    operator: cpuSecondsOf(operator.pid),
    server: pidsWithArgument(serverWorkDir).reduce((sum, pid) => sum + cpuSecondsOf(pid), 0),
    benchmark: (own.user + own.system) / 1e6,
    machine: machineCpuSeconds(),
  };
}

function cpuBetween(a: CpuReading, b: CpuReading): CpuShares {
  return {
    wall_s: round((b.at - a.at) / 1000, 2),
    operator_s: round(b.operator - a.operator, 2),
    api_server_and_etcd_s: round(b.server - a.server, 2),
    benchmark_s: round(b.benchmark - a.benchmark, 2),
    machine_busy_percent: round((100 * (b.machine.busy - a.machine.busy)) / Math.max(0.01, b.machine.total - a.machine.total)),
  };
}

/** Requests per load balancer: all, the writes among them, and each `verb resource`. */
interface ApiCalls {
  per_resource: number;
  writes_per_resource: number;
  by_call: Record<string, number>;
  /** LoadBalancer reconcile passes (cloudplane_reconcile_total), per load balancer. */
  passes_per_resource: number;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** What the operator counted: its requests to the API server by `verb resource`, and its reconcile passes of load balancers. */
interface OperatorCounts {
  calls: Record<string, number>;
  passes: number;
}

/** Writes the API server audited, per load balancer, in all and by `verb resource[/subresource]`. */
interface AuditedWrites {
  writes_per_resource: number;
  by_call: Record<string, number>;
}

/**
 * The writes in the API server's audit log (every write, metadata only: startKubeApiServer's
 * auditWrites) received within [fromMs, toMs), per load balancer; the API server's own
 * (its identity Lease) left out.
 */
function auditedWrites(server: KubeApiServer, fromMs: number, toMs: number, count: number): AuditedWrites {
  const byCall = new Map<string, number>();
  let writes = 0;
  for (const entry of auditLines(server)) {
    const at = Date.parse(entry.requestReceivedTimestamp);
    if (entry.stage !== 'ResponseComplete' || !WRITE_VERBS.has(entry.verb) || at < fromMs || at >= toMs) continue;
    if (entry.user?.username === 'system:apiserver') continue;
    const { resource = '?', subresource } = entry.objectRef ?? {};
    const call = `${entry.verb} ${resource}${subresource ? `/${subresource}` : ''}`;
    byCall.set(call, (byCall.get(call) ?? 0) + 1);
    writes++;
  }
  const by_call = Object.fromEntries([...byCall].sort().map(([call, n]) => [call, round(n / count, 3)]));
  return { writes_per_resource: round(writes / count, 2), by_call };
}

/** The calls and passes made between two readings of the operator's counters, per load balancer. */
function callsPer({ calls: before, passes: passesBefore }: OperatorCounts, { calls: after, passes: passesAfter }: OperatorCounts, count: number): ApiCalls {
  const by_call: Record<string, number> = {};
  let all = 0;
  let writes = 0;
  for (const [call, total] of Object.entries(after).sort()) {
    const made = total - (before[call] ?? 0);
    if (made === 0) continue;
    by_call[call] = round(made / count, 3);
    all += made;
    if (WRITE_VERBS.has(call.split(' ')[0])) writes += made;
  }
  return {
    per_resource: round(all / count, 2),
    writes_per_resource: round(writes / count, 2),
    by_call,
    passes_per_resource: round((passesAfter - passesBefore) / count, 2),
  };
}

/**
 * Creates `count` load balancers with `create` (which returns the custom resource's name)
 * and measures from the first create to the last one running.
 */
async function throughput(
  how: string,
  workers: number,
  count: number,
  tracker: RunningTracker,
  create: (i: number) => Promise<string>,
  base: BaselineResult | null,
  operator: Operator,
  server: KubeApiServer,
): Promise<ThroughputResult> {
  const serverWorkDir = server.workDir;
  log(`${how}, ${workers} workers: creating ${count} load balancers, ${CONCURRENCY} at a time...`);
  const callsBefore = await operator.apiCalls();
  const sentAt = new Map<string, number>();
  const cpuAtStart = readCpu(operator, serverWorkDir);
  const startedAtMs = Date.now();
  const start = performance.now();
  await pool(count, CONCURRENCY, async (i) => {
    const before = performance.now();
    sentAt.set(await create(i), before);
    if ((i + 1) % 2000 === 0) log(`  ${i + 1} created`);
  });
  const created = performance.now();
  log(`  created in ${round((created - start) / 1000)} s; waiting until they are running...`);
  const names = [...sentAt.keys()];
  const allRunning = await tracker.waitAll(names, WAIT_TIMEOUT_S * 1000, (n) => log(`  ${n} of ${names.length} running`));
  const cpu = cpuBetween(cpuAtStart, readCpu(operator, serverWorkDir));
  const callsAtLastRunning = await operator.apiCalls();
  const lastRunningAtMs = Date.now();
  // The outbox relay takes the last events out on its own after its drain delay: those writes are the resources' too.
  await sleep(OUTBOX_DRAIN_S * 1000 + 1500);
  const callsAfterDrain = await operator.apiCalls();
  const drainedAtMs = Date.now();
  const latencies = [...sentAt]
    .flatMap(([n, sent]) => {
      const ranAt = tracker.runningAt.get(n);
      return ranAt === undefined ? [] : [(ranAt - sent) / 1000];
    })
    .sort((a, b) => a - b);
  const lastRunning = Math.max(...names.map((n) => tracker.runningAt.get(n) ?? 0));
  const span = (lastRunning - start) / 1000;
  const result: ThroughputResult = {
    how,
    workers,
    count,
    concurrency: CONCURRENCY,
    all_running: allRunning,
    running: latencies.length,
    failed: names.filter((n) => tracker.failed.has(n)).length,
    create_s: round((created - start) / 1000, 2),
    creates_per_s: round(count / ((created - start) / 1000)),
    first_create_to_last_running_s: round(span, 2),
    running_per_s: round(latencies.length / span),
    ratio_to_baseline: base ? round(latencies.length / span / base.per_s, 3) : null,
    latency_s: { p50: round(percentile(latencies, 50), 2), p99: round(percentile(latencies, 99), 2), max: round(latencies[latencies.length - 1] ?? NaN, 2) },
    api_calls: { until_last_running: callsPer(callsBefore, callsAtLastRunning, count), after_outbox_drain: callsPer(callsBefore, callsAfterDrain, count) },
    audited_writes: {
      until_last_running: auditedWrites(server, startedAtMs, lastRunningAtMs, count),
      after_outbox_drain: auditedWrites(server, startedAtMs, drainedAtMs, count),
    },
    cpu,
  };
  log(
    `  ${result.running} running (${result.failed} failed) ${result.first_create_to_last_running_s} s after the first create: ${result.running_per_s}/s; create->running p50 ${result.latency_s.p50} s, p99 ${result.latency_s.p99} s`,
  );
  log(
    `  CPU s over ${cpu.wall_s} s: operator ${cpu.operator_s}, kube-apiserver + etcd ${cpu.api_server_and_etcd_s}, benchmark ${cpu.benchmark_s}; machine ${cpu.machine_busy_percent} % busy`,
  );
  log(
    `  writes per load balancer in the API server's audit log: ${result.audited_writes.until_last_running.writes_per_resource} until the last ran, ${result.audited_writes.after_outbox_drain.writes_per_resource} after the drain ${JSON.stringify(result.audited_writes.after_outbox_drain.by_call)}`,
  );
  log(
    `  API calls per load balancer: ${result.api_calls.after_outbox_drain.per_resource} (${result.api_calls.after_outbox_drain.writes_per_resource} writes) ${JSON.stringify(result.api_calls.after_outbox_drain.by_call)}; reconcile passes per load balancer: ${result.api_calls.after_outbox_drain.passes_per_resource}`,
  );
  return result;
}

interface BaselineResult {
  count: number;
  concurrency: number;
  span_s: number;
  per_s: number;
  /** CPU per load balancer: kube-apiserver with etcd, and the client (this process). */
  cpu_ms_per_resource: { api_server_and_etcd: number; client: number };
}

const BASELINE_NAMESPACE = 'bench-baseline';

/**
 * What the same API server does alone: `count` load balancer custom resources created
 * and given a status (the two writes an API create makes), `CONCURRENCY` at a time, with
 * no operator running. Made in a namespace of their own and deleted before the operator
 * starts, so it never sees them.
 */
/** A load balancer as the operator stored it: the baseline writes objects of its size and shape. */
interface Template {
  spec: unknown;
  status: unknown;
  labels: Record<string, string>;
}

async function baseline(kc: KubeConfig, count: number, serverWorkDir: string, prefix = 'baseline', template?: Template): Promise<BaselineResult> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const namespace = BASELINE_NAMESPACE;
  await ensureNamespace(kc, namespace);
  log(`baseline: ${count} creates + status writes on the API server alone, ${CONCURRENCY} at a time...`);
  const serverCpu = () => pidsWithArgument(serverWorkDir).reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
  const ownCpu = () => (process.cpuUsage().user + process.cpuUsage().system) / 1e6;
  const [serverBefore, ownBefore] = [serverCpu(), ownCpu()];
  const start = performance.now();
  await pool(count, CONCURRENCY, async (i) => {
    const name = `${prefix}-${i}`;
    const created = (await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: template
        ? { apiVersion: `${GROUP}/${VERSION}`, kind: 'LoadBalancer', metadata: { name, namespace, labels: template.labels }, spec: template.spec }
        : loadBalancerCr(name, namespace),
    })) as KubeObject;
    // The operator's own status, or about the size and shape of the first status the API writes.
    const status = template?.status ?? {
      status: 'creating',
      status_reason: null,
      observed_generation: 1,
      observed_config: 'baseline',
      conditions: [],
      backends: [],
      deleted_at: null,
      pending_events: [],
      updated_at: new Date().toISOString(),
    };
    await custom.replaceNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { ...created, status } });
  });
  const span = (performance.now() - start) / 1000;
  const cpu_ms_per_resource = {
    api_server_and_etcd: round(((serverCpu() - serverBefore) * 1000) / count, 2),
    client: round(((ownCpu() - ownBefore) * 1000) / count, 2),
  };
  await custom.deleteCollectionNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL });
  const result = { count, concurrency: CONCURRENCY, span_s: round(span, 2), per_s: round(count / span), cpu_ms_per_resource };
  log(`  ${result.per_s}/s (${result.span_s} s)`);
  return result;
}

/**
 * A running load balancer the operator made, as the API server holds it: its spec, labels
 * and status (with its conditions, the driver's record and the `running` event still in
 * its outbox), which the interleaved rows' baselines write instead of a small status.
 */
async function templateFrom(custom: CustomObjectsApi, namespace: string): Promise<Template | undefined> {
  const list = (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, limit: 1 })) as { items: KubeObject[] };
  const object = list.items.at(0);
  if (!object) return undefined;
  const labels = Object.fromEntries(Object.entries(object.metadata.labels ?? {}).filter(([key]) => !key.startsWith('cloudplane.dev/')));
  return { spec: object.spec, status: object.status, labels };
}

type Memory = Measurement & { cpu_percent: number; load_balancers: number };

interface Report {
  started_at: string;
  duration_s: number;
  machine: ReturnType<typeof machine>;
  source: ReturnType<typeof sourceState>;
  load_average: { before: number[]; after: number[] };
  settings: Record<string, unknown>;
  note: string;
  baseline: BaselineResult | null;
  throughput: ThroughputResult[];
  /** The bulk row, the memory with every load balancer and the restart: only with the bulk row. */
  bulk: ThroughputResult | null;
  memory: { empty: Memory; full: Memory | null; after_restart: Memory | null };
  /** The interleaved row: each round's baseline and API row, and the median of their ratios. */
  interleaved: {
    rounds: Array<{ baseline_per_s: number; running_per_s: number; ratio: number; baseline_cpu_ms: number; row_cpu_ms: number; cpu_ratio: number }>;
    median_ratio: number;
    median_cpu_ratio: number;
  } | null;
  restart: {
    total_load_balancers: number;
    stop_ms: number;
    store_sync_ms: number;
    store_only_memory: Measurement;
    service_start_ms: number;
    first_pass_ms: number | null;
    first_pass_reconciles: number;
  } | null;
}

function markdown(r: Report): string {
  const m = r.machine;
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
  const tRow = (t: ThroughputResult) =>
    `| ${t.how} | ${t.workers} | ${t.count} | ${t.running}${t.failed ? ` (${t.failed} failed)` : ''} | ${t.create_s} | ${t.first_create_to_last_running_s} | **${t.running_per_s}** | ${t.ratio_to_baseline ?? '–'} | ${t.latency_s.p50} | ${t.latency_s.p99} | ${t.latency_s.max} |`;
  const mRow = (name: string, x: Memory | null) =>
    x === null ? [] : [`| ${name} | ${x.load_balancers} | ${x.rss_mb} | ${x.heap_used_mb} | ${x.heap_total_mb} | ${x.external_mb} | ${x.cpu_percent} |`];
  const b = r.baseline;
  const s = r.settings;
  const rs = r.restart;
  return [
    `# Cluster-mode benchmark, ${r.started_at}`,
    '',
    `Machine: ${m.cpu_model}, ${m.cpu_count} CPUs, ${m.total_memory_gb} GB RAM, ${m.platform}, Node ${m.node}.`,
    `Load average (1/5/15 min) before: ${load(r.load_average.before)}, after: ${load(r.load_average.after)}. The whole run took ${Math.round(r.duration_s)} s.`,
    `Code: commit ${r.source.commit.slice(0, 12)}${r.source.uncommitted_src.length ? `, with uncommitted changes in ${r.source.uncommitted_src.length} src/ files (others' work in progress)` : ''}.`,
    `Settings: kube-apiserver ${String(s.kube_apiserver)} + etcd (--unsafe-no-fsync) on this machine; the operator in its own Node process, ${String(s.workers)} workers per controller (the default; the workers column says where a row differs), simulated provider with a ${String(s.sim_delay_ms)} ms delay (so the figures are the operator's and the API server's, not a provider's); creates ${String(s.concurrency)} at a time from the benchmark process, which also watches every load balancer to see when it is \`running\`.`,
    '',
    `> ${r.note}`,
    '',
    '## Creating to running',
    '',
    b
      ? `Baseline, the same API server alone (no operator): ${b.count} load balancer custom resources created and given a status, ${b.concurrency} at a time, in ${b.span_s} s: **${b.per_s}/s**. The ratio column is running/s over it.`
      : 'No baseline row in this run (BENCH_ROWS).',
    '',
    '| created | workers | load balancers | running | create s | first create → last running s | running/s | ratio to baseline | create→running p50 s | p99 s | max s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.throughput.map(tRow),
    ...(r.bulk ? [tRow(r.bulk)] : []),
    '',
    ...(r.interleaved
      ? [
          `**In turns** (the interleaved rows): ${r.interleaved.rounds.length} rounds, each the API server alone right before the operator through the API, ${String(s.throughput_n)} load balancers each; the ratios of the rounds: ${r.interleaved.rounds.map((x) => `${x.running_per_s}/s over ${x.baseline_per_s}/s = ${x.ratio}`).join('; ')}. **Median ratio: ${r.interleaved.median_ratio}.**`,
          '',
          `By CPU, which other processes on the machine move less than rates: the CPU seconds per load balancer of kube-apiserver with etcd and of its client (this process creating and writing a status in the baseline; the operator and this process's REST creates and watch in the row), baseline over row: ${r.interleaved.rounds.map((x) => `${x.baseline_cpu_ms} ms over ${x.row_cpu_ms} ms = ${x.cpu_ratio}`).join('; ')}. **Median: ${r.interleaved.median_cpu_ratio}.**`,
          '',
        ]
      : []),
    'Custom resources made without the API are adopted first (src/controllers/adoption.ts: the create rules, the defaults, the first status), a write the API makes with the create; the work queue is first in, first out, so in the bulk row all are adopted before the first is provisioned.',
    '',
    '## Who used the CPU',
    '',
    `CPU seconds (user + system, from /proc) from the first create until every load balancer of the row ran, against the ${m.cpu_count} CPUs' wall time over the same stretch: the operator, kube-apiserver with etcd, and this benchmark process (the creates and the watch). The machine column is every process's busy time over the time the CPUs had, so a machine near 100 % busy was the limit, whoever used it.`,
    '',
    '| created | workers | wall s | operator CPU s | kube-apiserver + etcd CPU s | benchmark CPU s | machine busy % |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...[...r.throughput, ...(r.bulk ? [r.bulk] : [])].map(
      (t) =>
        `| ${t.how} | ${t.workers} | ${t.cpu.wall_s} | ${t.cpu.operator_s} | ${t.cpu.api_server_and_etcd_s} | ${t.cpu.benchmark_s} | ${t.cpu.machine_busy_percent} |`,
    ),
    '',
    "## Writes per load balancer, from the API server's audit log",
    '',
    `Every write the API server audited over each row (the audit policy logs every create, update, patch and delete, metadata only), whoever made it (in the custom-resource row the benchmark makes the create), divided by the load balancers of the row: from the first create until the last was \`running\`, and until ${Number(s.outbox_drain_s) + 1.5} s later, once the outbox relay took out the last events no other write took (the operator ran with CLOUDPLANE_OUTBOX_DRAIN_SECONDS=${String(s.outbox_drain_s)}; by default it waits 300 s for a write that takes them, and the count is the same).`,
    '',
    '| created | workers | writes until last running | after the outbox drain | by call (after the drain) |',
    '|---|---:|---:|---:|---|',
    ...[...r.throughput, ...(r.bulk ? [r.bulk] : [])].map((t) => {
      const [until, drained] = [t.audited_writes.until_last_running, t.audited_writes.after_outbox_drain];
      const byCall = Object.entries(drained.by_call)
        .map(([call, n]) => `${call} ${n}`)
        .join(', ');
      return `| ${t.how} | ${t.workers} | **${until.writes_per_resource}** | **${drained.writes_per_resource}** | ${byCall} |`;
    }),
    '',
    '## API calls per load balancer',
    '',
    `The operator's requests to the API server over each row (cloudplane_kube_api_requests_total, every caller in the operator, watches aside), divided by the load balancers of the row: until the last was \`running\`, and ${Number(s.outbox_drain_s) + 1.5} s later, once the outbox relay took the last events out. Beside them, the LoadBalancer reconciler's passes per load balancer over the same stretches (cloudplane_reconcile_total): each pass reads the object, asks the driver and judges, whether or not it writes.`,
    '',
    '| created | workers | calls until last running | writes | passes | calls after the outbox drain | writes | passes | by call (after the drain) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
    ...[...r.throughput, ...(r.bulk ? [r.bulk] : [])].map((t) => {
      const [until, drained] = [t.api_calls.until_last_running, t.api_calls.after_outbox_drain];
      const byCall = Object.entries(drained.by_call)
        .map(([call, n]) => `${call} ${n}`)
        .join(', ');
      return `| ${t.how} | ${t.workers} | ${until.per_resource} | ${until.writes_per_resource} | ${until.passes_per_resource} | ${drained.per_resource} | ${drained.writes_per_resource} | ${drained.passes_per_resource} | ${byCall} |`;
    }),
    '',
    '## Memory of the operator',
    '',
    "After a forced garbage collection (node --expose-gc, two collections); CPU is the operator's own over the settle window before the measurement, with every load balancer running and re-checked by its reconciler every 10 s.",
    '',
    '| when | load balancers | RSS MB | V8 heap used MB | heap total MB | external MB | CPU % of one core |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...mRow('fresh start, empty cluster', r.memory.empty),
    ...mRow(`after creating ${r.memory.full?.load_balancers}`, r.memory.full),
    ...mRow('restarted with them', r.memory.after_restart),
    '',
    ...(rs
      ? [
          `## Restart with ${rs.total_load_balancers} load balancers`,
          '',
          `- graceful stop of the operator (Lease released): ${Math.round(rs.stop_ms)} ms`,
          `- the store alone, list + watch of every collection into the cache: **${Math.round(rs.store_sync_ms)} ms** (heap used ${rs.store_only_memory.heap_used_mb} MB, RSS ${rs.store_only_memory.rss_mb} MB)`,
          `- the whole service (store sync, Lease, reconcilers queued, API listening): **${Math.round(rs.service_start_ms)} ms**`,
          `- until ${rs.total_load_balancers} reconcile passes of LoadBalancer had run, from the same start: ${rs.first_pass_ms === null ? `not reached (${rs.first_pass_reconciles} passes)` : `${Math.round(rs.first_pass_ms)} ms`} (a pass over a running load balancer without backends writes nothing)`,
          '',
        ]
      : ['No bulk row in this run (BENCH_ROWS): no memory with every load balancer, no restart.', '']),
    'See bench/README.md.',
    '',
  ].join('\n');
}

async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } })
    .catch((err: unknown) => {
      if (codeOf(err) !== 409) throw err;
    });
}

async function main(): Promise<void> {
  // The four throughput rows create THROUGHPUT_N each; the bulk row makes up the rest.
  if (ROWS.has('bulk') && TOTAL <= 4 * THROUGHPUT_N)
    throw new Error(`BENCH_TOTAL (${TOTAL}) must be more than the ${4 * THROUGHPUT_N} load balancers the throughput rows create`);
  const startedAt = new Date();
  const t0 = performance.now();
  const loadBefore = os.loadavg();
  // Before anything else: what dist/ was just built from (others may commit during the run).
  const source = sourceState();
  // The test helper finds the build script relative to its source; from dist/ it would not.
  process.env.KUBE_APISERVER_BIN ??= execFileSync(path.join(REPO, 'scripts/build-kube-component.sh'), ['kube-apiserver'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  const kubeVersion = path.basename(path.dirname(process.env.KUBE_APISERVER_BIN)).replace('kube-apiserver-', '');

  log('starting etcd + kube-apiserver and installing the CRDs...');
  const server: KubeApiServer = await startKubeApiServer({ auditWrites: true });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-cluster-'));
  const operators: Operator[] = [];
  let tracker: RunningTracker | undefined;
  try {
    await installCrds(server);
    // Keep-alive like the operator's (src/store/index.ts), so the baseline is the API server's best.
    const kc = new KeepAliveKubeConfig();
    kc.loadFromString(server.kubeconfigYaml);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const base = ROWS.has('baseline') ? await baseline(kc, THROUGHPUT_N, server.workDir) : null;
    const operatorEnv: Record<string, string> = {
      CLOUDPLANE_PORT: '0',
      CLOUDPLANE_HOST: '127.0.0.1',
      CLOUDPLANE_DATA_DIR: dataDir,
      CLOUDPLANE_LOG_LEVEL: 'warn',
      CLOUDPLANE_BOOTSTRAP_API_KEY: KEY,
      CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000000',
      // A benchmark creates far more than a team's default quota.
      CLOUDPLANE_QUOTAS: 'load_balancer=100000000,bucket=100000000,server=100000000,file_share=100000000,vpn_gateway=100000000',
      CLOUDPLANE_STORE: 'kubernetes',
      CLOUDPLANE_KUBECONFIG: server.kubeconfigPath,
      CLOUDPLANE_SYSTEM_NAMESPACE: SYSTEM_NAMESPACE,
      // Every family's driver simulated (in cluster mode load balancers would otherwise be
      // HAProxy Deployments and Services): the figures are the operator's, not a provider's.
      CLOUDPLANE_PROVIDER: 'simulated',
      CLOUDPLANE_SIM_DELAY_MS: String(SIM_DELAY_MS),
      CLOUDPLANE_OUTBOX_DRAIN_SECONDS: String(OUTBOX_DRAIN_S),
      CLOUDPLANE_WORKERS: String(WORKERS),
    };
    const startOperator = async (mode: 'service' | 'store', workers = WORKERS) => {
      const op = await Operator.start(mode, { ...operatorEnv, CLOUDPLANE_WORKERS: String(workers) });
      operators.push(op);
      return op;
    };

    log('starting the operator...');
    let operator = await startOperator('service');
    let url = operator.url;
    const namespace = namespaceOfTeam(known(operator.ready.team_id, 'the bootstrap team'), SYSTEM_NAMESPACE);
    await ensureNamespace(kc, namespace);
    tracker = new RunningTracker(kc);
    await tracker.start();
    log(`measuring the empty operator (${SETTLE_S} s)...`);
    const empty: Memory = { ...(await operator.settled(SETTLE_S)), load_balancers: tracker.seen.size };

    const createViaApi = async (i: number) => {
      let res: Response;
      for (;;) {
        res = await fetch(`${url}/api/v1/load-balancers`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `api-${i}`, region: 'fra1' }),
        });
        // Load shedding (503 service_overloaded): a client waits and sends it again.
        if (res.status !== 503) break;
        shed++;
        await res.text();
        await sleep(1000);
      }
      if (res.status !== 201) throw new Error(`POST /api/v1/load-balancers answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { data: { id: string } }).data.id.replace('_', '-');
    };
    const createCr = (prefix: string) => async (i: number) => {
      const name = `${prefix}-${i}`;
      await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body: loadBalancerCr(name, namespace) });
      return name;
    };

    const results: ThroughputResult[] = [];
    let shed = 0;
    // API-made ids are unique; custom resources made by hand need a prefix of their own per row.
    if (ROWS.has('api'))
      results.push({
        ...(await throughput('through the API (POST)', WORKERS, THROUGHPUT_N, tracker, createViaApi, base, operator, server)),
        shed_503_so_far: shed,
      });
    if (ROWS.has('cr'))
      results.push(await throughput('as custom resources (kubectl-style, adopted)', WORKERS, THROUGHPUT_N, tracker, createCr('cr'), base, operator, server));
    if (ROWS.has('more') && MORE_WORKERS > 0) {
      await operator.stop();
      operator = await startOperator('service', MORE_WORKERS);
      url = operator.url;
      results.push({
        ...(await throughput('through the API (POST)', MORE_WORKERS, THROUGHPUT_N, tracker, createViaApi, base, operator, server)),
        shed_503_so_far: shed,
      });
      results.push(
        await throughput('as custom resources (kubectl-style, adopted)', MORE_WORKERS, THROUGHPUT_N, tracker, createCr('cr-more'), base, operator, server),
      );
      await operator.stop();
      operator = await startOperator('service');
      url = operator.url;
    }
    let interleaved: Report['interleaved'] = null;
    if (ROWS.has('interleaved') && ROUNDS > 0) {
      // The machine's load comes and goes: a baseline right before each row, rounds in
      // turn, and the median of the ratios is what one load cannot move.
      const rounds: NonNullable<Report['interleaved']>['rounds'] = [];
      for (let turn = 1; turn <= ROUNDS; turn++) {
        await operator.stop();
        const alone = await baseline(kc, THROUGHPUT_N, server.workDir, `round-${turn}`, await templateFrom(custom, namespace));
        operator = await startOperator('service');
        url = operator.url;
        // A restarted operator looks at every load balancer once: that pass over the earlier rounds' is not this round's work.
        await operator.reconciled('LoadBalancer', tracker.seen.size, 180_000);
        const row = await throughput(`through the API (POST), round ${turn}`, WORKERS, THROUGHPUT_N, tracker, createViaApi, alone, operator, server);
        results.push(row);
        // CPU per load balancer, the API server's and its client's: the operator (and the REST client) in the row, this process in the baseline.
        const rowCpuMs = ((row.cpu.api_server_and_etcd_s + row.cpu.operator_s + row.cpu.benchmark_s) * 1000) / THROUGHPUT_N;
        const aloneCpuMs = alone.cpu_ms_per_resource.api_server_and_etcd + alone.cpu_ms_per_resource.client;
        rounds.push({
          baseline_per_s: alone.per_s,
          running_per_s: row.running_per_s,
          ratio: row.ratio_to_baseline ?? NaN,
          baseline_cpu_ms: round(aloneCpuMs, 2),
          row_cpu_ms: round(rowCpuMs, 2),
          cpu_ratio: round(aloneCpuMs / rowCpuMs, 3),
        });
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
      interleaved = { rounds, median_ratio: median(rounds.map((r) => r.ratio)), median_cpu_ratio: median(rounds.map((r) => r.cpu_ratio)) };
      log(
        `interleaved: median ratio of the operator to the API server alone ${interleaved.median_ratio} by rate, ${interleaved.median_cpu_ratio} by CPU per load balancer (${JSON.stringify(rounds)})`,
      );
    }
    let bulk: ThroughputResult | null = null;
    let full: Memory | null = null;
    let afterRestart: Memory | null = null;
    let restart: Report['restart'] = null;
    if (ROWS.has('bulk')) {
      const bulkCount = TOTAL - tracker.seen.size;
      bulk = await throughput(`as custom resources, in bulk up to ${TOTAL}`, WORKERS, bulkCount, tracker, createCr('bulk'), base, operator, server);

      log(`measuring the operator with ${tracker.seen.size} load balancers (${SETTLE_S} s)...`);
      full = { ...(await operator.settled(SETTLE_S)), load_balancers: tracker.seen.size };

      log('restart: stopping the operator...');
      const stopMs = await operator.stop();
      log('timing the store alone...');
      const storeOnly = await startOperator('store');
      const storeMemory = await storeOnly.measure();
      await storeOnly.stop();
      log('starting the operator again...');
      operator = await startOperator('service');
      const firstPass = await operator.reconciled('LoadBalancer', tracker.seen.size, 180_000);
      log(`  started in ${Math.round(operator.ready.start_ms)} ms; ${firstPass.passes} reconcile passes at ${Math.round(firstPass.ms_since_start ?? NaN)} ms`);
      log(`measuring the restarted operator (${SETTLE_S} s)...`);
      afterRestart = { ...(await operator.settled(SETTLE_S)), load_balancers: tracker.seen.size };
      restart = {
        total_load_balancers: tracker.seen.size,
        stop_ms: stopMs,
        store_sync_ms: storeOnly.ready.start_ms,
        store_only_memory: storeMemory,
        service_start_ms: operator.ready.start_ms,
        first_pass_ms: firstPass.ms_since_start,
        first_pass_reconciles: firstPass.passes,
      };
    }
    await operator.stop();

    const report: Report = {
      started_at: startedAt.toISOString(),
      duration_s: 0,
      machine: machine(),
      source,
      load_average: { before: loadBefore, after: [] },
      settings: {
        kube_apiserver: kubeVersion,
        workers: WORKERS,
        more_workers: MORE_WORKERS,
        sim_delay_ms: SIM_DELAY_MS,
        outbox_drain_s: OUTBOX_DRAIN_S,
        concurrency: CONCURRENCY,
        throughput_n: THROUGHPUT_N,
        total: TOTAL,
        rows: [...ROWS],
        settle_s: SETTLE_S,
        wait_timeout_s: WAIT_TIMEOUT_S,
        resource: 'LoadBalancer (no backends)',
      },
      note:
        process.env.BENCH_NOTE ??
        "Run on a shared 2-CPU machine, with etcd, kube-apiserver, the operator and the load generator all on it and other engineers' processes beside them (see the load averages): orders of magnitude, not the ceiling of the hardware.",
      baseline: base,
      throughput: results,
      bulk,
      memory: { empty, full, after_restart: afterRestart },
      interleaved,
      restart,
    };
    report.load_average.after = os.loadavg();
    report.duration_s = round((performance.now() - t0) / 1000);
    const written = writeResults('cluster', startedAt, report, markdown(report));
    log(`wrote ${written.jsonFile} and ${written.markdownFile} (${report.duration_s} s in all)`);
  } finally {
    tracker?.stop();
    for (const op of operators) op.kill();
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
