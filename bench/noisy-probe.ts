/**
 * The quiet team of bench/noisy-neighbours.ts, in a worker thread: the noisy team's load
 * runs on the benchmark's main thread, so a busy main thread cannot delay the quiet
 * team's clock. For its phase it reads one load balancer every GET_EVERY_MS, creates one
 * every CREATE_EVERY_MS and follows each create to `running`, and reads its own job now
 * and then to see which `meta.provider` the quiet team is told.
 *
 * runQuietProbe(options) from the benchmark; this file is also the worker's entry point.
 */
import { createHistogram, RecordableHistogram } from 'node:perf_hooks';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { resultOfWorker } from './report';

export interface ProbeOptions {
  url: string;
  /** Keys taken in turn for reads, for creates and for following them, so that the quiet team stays inside its per-key rate limit. */
  readKeys: string[];
  writeKey: string;
  pollKeys: string[];
  loadBalancerId: string;
  jobId: string;
  durationMs: number;
  region: string;
}

export interface Percentiles {
  count: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface ProbeResult {
  get_one: Percentiles;
  create: Percentiles;
  create_to_running: Percentiles;
  /** Answers other than the expected 200/201 (status → count): a quiet team should see none. */
  refused: Record<string, number>;
  /** Creates acknowledged whose resource did not reach `running` within FOLLOW_TIMEOUT_MS. */
  not_running: number;
  /** Every `meta.provider` state the quiet team's answers carried, with how often. */
  provider_states: Record<string, number>;
  created_ids: string[];
  /** Every latency measured, in microseconds, so that phases can be pooled (the two alone phases make one baseline). */
  samples_us: Record<Measure, number[]>;
  /** The slowest samples of each measure with the second of the phase they started in: whether a p99 is one burst or spread over the phase. */
  slowest: Record<Measure, Array<{ at_s: number; ms: number }>>;
}

/** How many of each measure's slowest samples a result names. */
const SLOWEST = 8;

export type Measure = 'get_one' | 'create' | 'create_to_running';

/**
 * Often enough for a p99 that rests on several samples, not on the one or two worst of a
 * phase: at one create every 250 ms a 30 s phase had 120 creates, so its p99 was the
 * second-slowest create, and one stall of the whole process decided the phase.
 */
export const GET_EVERY_MS = 25;
export const CREATE_EVERY_MS = 100;
const JOB_READ_EVERY_MS = 1000;
/** A create is polled every 50 ms at first, then less often (up to every 500 ms), so that a slow one cannot spend the poll key's rate limit. */
const POLL_FIRST_MS = 50;
const POLL_MAX_MS = 500;
/** How long a create is followed; one still not `running` then counts as not_running. */
const FOLLOW_TIMEOUT_MS = 60_000;

/** Runs the quiet team's probe for one phase in a fresh worker and resolves with its figures. */
export function runQuietProbe(options: ProbeOptions): Promise<ProbeResult> {
  return resultOfWorker<ProbeResult>('noisy-probe.js', options, 'quiet probe');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const newHistogram = () => createHistogram({ lowest: 1, highest: 600_000_000, figures: 3 });
/** Percentiles of latencies in microseconds. */
export function percentilesOf(samplesUs: number[]): Percentiles {
  const h = newHistogram();
  for (const us of samplesUs) h.record(us);
  return percentiles(h);
}
const percentiles = (h: RecordableHistogram): Percentiles => ({
  count: h.count,
  p50_ms: h.count ? Math.round(h.percentile(50) / 10) / 100 : 0,
  p99_ms: h.count ? Math.round(h.percentile(99) / 10) / 100 : 0,
  max_ms: h.count ? Math.round(h.max / 10) / 100 : 0,
});

async function probe(o: ProbeOptions): Promise<ProbeResult> {
  const samples: Record<Measure, number[]> = { get_one: [], create: [], create_to_running: [] };
  /** When each sample started, in ms from the phase's start, index for index with `samples`. */
  const startedAtMs: Record<Measure, number[]> = { get_one: [], create: [], create_to_running: [] };
  let phaseStart = performance.now();
  const record = (measure: Measure, us: number, startedAt: number) => {
    samples[measure].push(us);
    startedAtMs[measure].push(startedAt - phaseStart);
  };
  const refused: Record<string, number> = {};
  const providerStates: Record<string, number> = {};
  const createdIds: string[] = [];
  let notRunning = 0;
  const inTurn = (keys: string[]) => {
    let n = 0;
    return () => keys[(n += 1) % keys.length];
  };
  const readKey = inTurn(o.readKeys);
  const pollKey = inTurn(o.pollKeys);

  const call = async (key: string, method: string, urlPath: string, body?: unknown) => {
    const started = performance.now();
    try {
      const res = await fetch(`${o.url}${urlPath}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(30_000),
      });
      const json = (await res.json()) as { data?: { id?: string; status?: string }; meta?: { provider?: string } };
      const state = json.meta?.provider;
      if (state) providerStates[state] = (providerStates[state] ?? 0) + 1;
      if (res.status >= 300) refused[String(res.status)] = (refused[String(res.status)] ?? 0) + 1;
      return { status: res.status, json, us: Math.max(1, Math.round((performance.now() - started) * 1000)) };
    } catch (err) {
      const reason = `${(err as Error).name === 'TimeoutError' ? 'timeout' : 'network'} ${method} ${urlPath.split('/').slice(0, 4).join('/')}`;
      refused[reason] = (refused[reason] ?? 0) + 1;
      return { status: 0, json: {}, us: Math.max(1, Math.round((performance.now() - started) * 1000)) };
    }
  };

  // A fresh worker's first request pays for its connection and its own compilation (60 ms
  // where the service answers in 5): the probe's cost, not the service's, kept out of the figures.
  // Two at once: reads and creates overlap, and each needs a connection of its own.
  await Promise.all([0, 1].map(() => call(readKey(), 'GET', `/api/v1/load-balancers/${o.loadBalancerId}`)));
  phaseStart = performance.now();
  const end = Date.now() + o.durationMs;

  const reads = (async () => {
    for (let next = Date.now(); Date.now() < end; next += GET_EVERY_MS) {
      const startedAt = performance.now();
      const r = await call(readKey(), 'GET', `/api/v1/load-balancers/${o.loadBalancerId}`);
      if (r.status === 200) record('get_one', r.us, startedAt);
      await sleep(Math.max(0, next + GET_EVERY_MS - Date.now()));
    }
  })();

  const jobReads = (async () => {
    while (Date.now() < end) {
      await call(readKey(), 'GET', `/api/v1/jobs/${o.jobId}`);
      await sleep(JOB_READ_EVERY_MS);
    }
  })();

  const follows: Promise<void>[] = [];
  /** `startedAt` on the performance clock, from before the create was sent. */
  const follow = async (id: string, startedAt: number) => {
    const deadline = Date.now() + FOLLOW_TIMEOUT_MS;
    let poll = POLL_FIRST_MS;
    while (Date.now() < deadline) {
      const r = await call(pollKey(), 'GET', `/api/v1/load-balancers/${id}`);
      if (r.json.data?.status === 'running') {
        record('create_to_running', Math.max(1, Math.round((performance.now() - startedAt) * 1000)), startedAt);
        return;
      }
      await sleep(poll);
      poll = Math.min(POLL_MAX_MS, Math.round(poll * 1.5));
    }
    notRunning += 1;
  };
  const creates = (async () => {
    for (let n = 0, next = Date.now(); Date.now() < end; n += 1, next += CREATE_EVERY_MS) {
      const startedAt = performance.now();
      const r = await call(o.writeKey, 'POST', '/api/v1/load-balancers', { name: `quiet-${Date.now()}-${n}`, region: o.region });
      if (r.status === 201 && r.json.data?.id) {
        record('create', r.us, startedAt);
        createdIds.push(r.json.data.id);
        follows.push(follow(r.json.data.id, startedAt));
      }
      await sleep(Math.max(0, next + CREATE_EVERY_MS - Date.now()));
    }
  })();

  await Promise.all([reads, jobReads, creates]);
  await Promise.all(follows);
  return {
    get_one: percentilesOf(samples.get_one),
    create: percentilesOf(samples.create),
    create_to_running: percentilesOf(samples.create_to_running),
    refused,
    not_running: notRunning,
    provider_states: providerStates,
    created_ids: createdIds,
    samples_us: samples,
    slowest: {
      get_one: slowestOf(samples.get_one, startedAtMs.get_one),
      create: slowestOf(samples.create, startedAtMs.create),
      create_to_running: slowestOf(samples.create_to_running, startedAtMs.create_to_running),
    },
  };
}

function slowestOf(samplesUs: number[], startedAtMs: number[]): Array<{ at_s: number; ms: number }> {
  return samplesUs
    .map((us, i) => ({ at_s: Math.round(startedAtMs[i] / 100) / 10, ms: Math.round(us / 10) / 100 }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, SLOWEST);
}

if (!isMainThread && parentPort && (workerData as ProbeOptions | undefined)?.url) {
  const port = parentPort;
  // Held until the probe ends: fetch's own timers are unref'd, and a worker whose loop has
  // nothing else to wait for would exit in the middle of a phase.
  const alive = setInterval(() => undefined, 1000);
  // A failed probe is left unhandled on purpose: it ends the worker, and runQuietProbe rejects with it.
  void probe(workerData as ProbeOptions).then((result) => {
    clearInterval(alive);
    port.postMessage(result);
  });
}
