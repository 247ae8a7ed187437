/**
 * Webhook benchmark (`make bench-webhooks`): the real service, started in-process through
 * startService on a fresh data directory, with one subscription to `bucket.created` whose
 * URL is a local receiver. Buckets are created through the API and every event's way is
 * timed from its `created_at` (stamped by the resource write, the state change) to the
 * delivery's arrival at the receiver. Beside it, in the same run, a bare HTTP POST loop
 * sends a body of the same size to the same receiver: the ceiling of the HTTP leg alone.
 *
 * The receiver and the load generator each run in a worker thread, so neither shares an
 * event loop with the service; they do share the CPUs. Writes
 * bench/results/webhooks-<timestamp>.json and bench/results/webhooks-latest.md.
 *
 * Last, Cloudplane against Svix (svix-server, built from its own repository and named by
 * BENCH_SVIX_BIN; skipped with a line saying why when it is not found): Cloudplane's service
 * in a child process of its own (bench/cluster-operator.ts) and svix-server with its
 * PostgreSQL (bench/svix.ts), each with BENCH_SVIX_ENDPOINTS subscriptions or endpoints on the
 * same receiver, take the same events through their APIs, one after the other; delivered/s
 * and the CPU per delivery of every process of each are read from /proc.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { startService } from '../src/service';
import { known } from '../src/lib/known';
import { fieldOf, hasStrings } from '../src/lib/unknown-values';
import type { Store } from '../src/store/types';
import type { EventBus } from '../src/events/types';
import type { CloudEvent } from '../src/resources/cloud-event';
import { Delivery, deliveryFamily, MAX_RATE_LIMIT_PER_MINUTE, Webhook, webhookFamily } from '../src/resources/webhook';
import { machine, machineCpuSeconds, nextReply, sourceState, writeResults } from './report';
import type { OperatorReply } from './cluster-operator';
import { findSvix, startSvix, svixCall, svixSettings, treeCpuSeconds, type RunningSvix, type SvixBuild } from './svix';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
/** Creates per second of the paced row: light load, to show the pipeline's own latency. */
const PACED_RATE = Number(process.env.BENCH_PACED_RATE ?? 50);
const DRAIN_TIMEOUT_MS = 120_000;
/** Subscriptions to each event in the fan-out row: deliveries outnumber creates, so the dispatcher, not the create API, is what saturates. */
const FANOUT = Number(process.env.BENCH_FANOUT ?? 8);
/** Events of the dispatcher row, published onto the bus at once. */
const BURST_EVENTS = Number(process.env.BENCH_BURST_EVENTS ?? 1000);
const KEY = 'cpk_BenchWebhooks0123456789abcdefghijABCDEFG';
/** The most a subscription may ask for, so that the limit is not what is measured. */
const RATE_LIMIT_PER_MINUTE = MAX_RATE_LIMIT_PER_MINUTE;
/** Windows of the churn section, back to back: the deleted subscriptions pile up across them. */
const CHURN_WINDOWS = Number(process.env.BENCH_CHURN_WINDOWS ?? 3);
/** Which parts run: `rows` (the delivery rows), `churn`, `svix` (Cloudplane against Svix). */
const PARTS = new Set((process.env.BENCH_PARTS ?? 'rows,churn,svix').split(',').map((part) => part.trim()));
/** Endpoints on Svix, subscriptions on Cloudplane, all to the one receiver: each event is this many deliveries. */
const SVIX_ENDPOINTS = Number(process.env.BENCH_SVIX_ENDPOINTS ?? 10);
/** Paced rows against Svix, in deliveries per second (events per second times SVIX_ENDPOINTS). */
const SVIX_PACED_RATES = (process.env.BENCH_SVIX_PACED_RATES ?? '500,1500')
  .split(',')
  .map(Number)
  .filter((rate) => rate > 0);
/** How long a row against Svix may wait for its last deliveries. */
const SVIX_DRAIN_TIMEOUT_MS = Number(process.env.BENCH_SVIX_DRAIN_TIMEOUT_S ?? 600) * 1000;
/** After the last delivery, CPU is still read this long: each outcome's write comes after its arrival. */
const SVIX_SETTLE_MS = 1000;
/** Seconds with nothing sent, over which each side's idle CPU is read. */
const SVIX_IDLE_S = 5;

// ---------------------------------------------------------------- worker threads

/** Arrival of one request at the receiver. */
interface Arrival {
  at: number;
  /** The event's created_at in ms, for deliveries; null for baseline POSTs. */
  createdAt: number | null;
  deliveryId: string | null;
  /** The path the delivery was sent to (each subscription or endpoint of the Svix section has its own). */
  path: string;
}

/** An arrival of a delivery (not of a baseline POST): it has an id and its event's created_at. */
type DeliveryArrival = Arrival & { deliveryId: string; createdAt: number };
const isDelivery = (a: Arrival): a is DeliveryArrival => a.deliveryId !== null && a.createdAt !== null;

type ReceiverCommand = { cmd: 'take' } | { cmd: 'close' };
/**
 * Where delivery rows send their events: Cloudplane's API (bucket creates; the in-process
 * service when absent), or Svix's (messages to one application, each a copy of `event`, the
 * JSON of a Cloudplane event, with its own ids and `created_at` stamped just before the POST).
 */
type Target = { system: 'cloudplane'; url: string } | { system: 'svix'; url: string; token: string; event: string };
type LoadCommand =
  | { cmd: 'closed'; connections: number; durationMs: number; target?: Target }
  | { cmd: 'paced'; rate: number; durationMs: number; target?: Target }
  | { cmd: 'post'; url: string; body: string; connections: number; durationMs: number }
  /** Subscriptions created and deleted in a closed loop: one cycle is both calls. */
  | { cmd: 'churn'; url: string; connections: number; durationMs: number };
interface LoadResult {
  ok: number;
  failed: number;
  /** The failed requests by the status they were answered with (`error <code>` when none came). */
  failedStatuses: Record<string, number>;
  /** Client-side round trips, ms. */
  latencies: number[];
  startedAt: number;
  endedAt: number;
}

function receiverThread(port: MessagePort): void {
  let arrivals: Arrival[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      // Cloudplane's id of the delivery (Standard Webhooks' header), or Svix's of the message (its default header names).
      const deliveryId = ((req.headers['webhook-id'] ?? req.headers['svix-id']) as string | undefined) ?? null;
      let createdAt: number | null = null;
      if (deliveryId) {
        const stamp = fieldOf(JSON.parse(Buffer.concat(chunks).toString('utf8')), 'created_at');
        createdAt = typeof stamp === 'string' ? Date.parse(stamp) : NaN;
      }
      arrivals.push({ at, createdAt, deliveryId, path: req.url ?? '' });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () => {
    port.postMessage({ port: (server.address() as AddressInfo).port });
  });
  port.on('message', (message: ReceiverCommand) => {
    if (message.cmd === 'take') {
      port.postMessage(arrivals);
      arrivals = [];
    } else {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
}

function loadThread(port: MessagePort, serviceUrl: string): void {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const call = (method: string, url: string, body: string | null, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const sent = body === null ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
      const req = http.request(url, { method, agent, headers: { ...headers, ...sent } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  const post = async (url: string, body: string, headers: Record<string, string>) => (await call('POST', url, body, headers)).status;
  const auth = { authorization: `Bearer ${KEY}` };
  let n = 0;
  /** One event through the target's API, and the status that means it was taken. */
  const sender = (target: Target | undefined): { send: () => Promise<number>; expected: number } => {
    if (target?.system !== 'svix') {
      const url = target?.url ?? serviceUrl;
      return { send: () => post(url, JSON.stringify({ name: `bench-${process.pid}-${n++}`, region: 'fra1' }), auth), expected: 201 };
    }
    const event = JSON.parse(target.event) as { type: string; data: Record<string, unknown> };
    const headers = { authorization: `Bearer ${target.token}` };
    const send = () => {
      const i = String(n++).padStart(20, '0');
      const payload = {
        ...event,
        id: `evt_${i}`,
        created_at: new Date().toISOString(),
        data: { ...event.data, id: `bkt_${i}`, name: `bench-${process.pid}-${i}` },
      };
      return post(target.url, JSON.stringify({ eventType: event.type, payload }), headers);
    };
    return { send, expected: 202 };
  };
  /** A subscription created and deleted again: 200 when both answered as they should. */
  const subscriptionCycle = async (receiverUrl: string) => {
    const webhooks = new URL('/api/v1/webhooks', serviceUrl).href;
    const created = await call('POST', webhooks, JSON.stringify({ url: receiverUrl, events: ['server.destroyed'] }), auth);
    if (created.status !== 201) return created.status;
    const { id } = (JSON.parse(created.body) as { data: { id: string } }).data;
    return (await call('DELETE', `${webhooks}/${id}`, null, auth)).status;
  };

  const serve = async (command: LoadCommand) => {
    const result: LoadResult = { ok: 0, failed: 0, failedStatuses: {}, latencies: [], startedAt: Date.now(), endedAt: 0 };
    const failed = (why: string) => {
      result.failed++;
      result.failedStatuses[why] = (result.failedStatuses[why] ?? 0) + 1;
    };
    const deadline = result.startedAt + command.durationMs;
    const one = async (send: () => Promise<number>, expected: number) => {
      const t0 = performance.now();
      try {
        const status = await send();
        if (status === expected) {
          result.ok++;
          result.latencies.push(performance.now() - t0);
        } else failed(String(status));
      } catch (err) {
        failed(`error ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
    };
    if (command.cmd === 'paced') {
      const { send, expected } = sender(command.target);
      const inFlight: Promise<void>[] = [];
      for (let i = 0; ; i++) {
        const due = result.startedAt + (i * 1000) / command.rate;
        if (due >= deadline) break;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
        inFlight.push(one(send, expected));
      }
      await Promise.all(inFlight);
    } else {
      const { send, expected } =
        command.cmd === 'post'
          ? { send: () => post(command.url, command.body, {}), expected: 200 }
          : command.cmd === 'churn'
            ? { send: () => subscriptionCycle(command.url), expected: 200 }
            : sender(command.target);
      await Promise.all(
        Array.from({ length: command.connections }, async () => {
          while (Date.now() < deadline) await one(send, expected);
        }),
      );
    }
    result.endedAt = Date.now();
    port.postMessage(result);
  };
  port.on('message', (command: LoadCommand) => {
    // A failed command is left unhandled on purpose: it ends the worker, and main() reports its error.
    void serve(command);
  });
}

// ---------------------------------------------------------------- main thread

/** One command to a worker and its one answer (each worker handles one command at a time). */
function ask<T>(worker: Worker, message: unknown): Promise<T> {
  return new Promise((resolve) => {
    worker.once('message', resolve);
    worker.postMessage(message);
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

interface Row {
  name: string;
  load: string;
  /** Requests (creates or bare POSTs) answered 2xx, and per second. */
  requests_ok: number;
  requests_failed: number;
  /** The failed requests by the status they were answered with (`error` when none came). */
  failed_statuses?: Record<string, number>;
  requests_per_s: number;
  /** Deliveries that reached the receiver, and per second from the first request to the last arrival. */
  delivered: number;
  delivered_per_s: number;
  /** Milliseconds: state change to arrival for deliveries, client round trip for the bare POST loop. */
  latency_ms: { p50: number; p99: number; max: number };
  /** Time from the end of the load to the last delivery. */
  drain_ms: number | null;
  /** delivered_per_s over the bare POST loop's of the same run (1 for the baseline itself). */
  ratio_to_baseline: number | null;
  /** Delivery rows: p50 ms of each stage of a delivery's way (see stages()). */
  stages_p50_ms?: Stages;
}

/**
 * Where a delivery's time goes, from its records: the event's `created_at` to its delivery
 * record's creation (outbox relay, bus, consumer: `to_record`), to the first attempt's
 * start (timer, rate limit, pump: `to_attempt`), to the arrival at the receiver (secrets,
 * signing, POST: `to_arrival`), and from the arrival to the outcome's durable write
 * (`to_outcome`: the answer's way back and the status write).
 */
interface Stages {
  /** Of to_record: the event's way onto the bus (outbox relay, durable publish). */
  to_bus: number;
  to_record: number;
  to_attempt: number;
  to_arrival: number;
  to_outcome: number;
}

const round = (n: number) => Math.round(n * 10) / 10;

/** Runs one row of creates and waits until each acknowledged create's delivery has arrived. */
async function deliveryRow(name: string, load: string, command: LoadCommand, loader: Worker, receiver: Worker, store: Store, perCreate = 1): Promise<Row> {
  await ask(receiver, { cmd: 'take' }); // start from an empty log
  const result = await ask<LoadResult>(loader, command);
  const arrivals: Arrival[] = [];
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  while (arrivals.length < result.ok * perCreate) {
    if (Date.now() > deadline) throw new Error(`${name}: ${arrivals.length} of ${result.ok * perCreate} deliveries arrived within ${DRAIN_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    arrivals.push(...(await ask<Arrival[]>(receiver, { cmd: 'take' })));
  }
  const deliveries = arrivals.filter(isDelivery);
  const distinct = new Set(deliveries.map((a) => a.deliveryId)).size;
  if (distinct !== deliveries.length) process.stdout.write(`  note: ${deliveries.length - distinct} repeated delivery ids\n`);
  const latencies = deliveries.map((a) => a.at - a.createdAt).sort((a, b) => a - b);
  const lastArrival = Math.max(...deliveries.map((a) => a.at));
  return {
    name,
    load,
    requests_ok: result.ok,
    requests_failed: result.failed,
    failed_statuses: result.failedStatuses,
    requests_per_s: round(result.ok / ((result.endedAt - result.startedAt) / 1000)),
    delivered: deliveries.length,
    delivered_per_s: round(deliveries.length / ((lastArrival - result.startedAt) / 1000)),
    latency_ms: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies[latencies.length - 1] },
    drain_ms: Math.max(0, lastArrival - result.endedAt),
    ratio_to_baseline: null,
    stages_p50_ms: await stages(store, deliveries),
  };
}

/** When each event reached the bus (a follower of it in the service), by event id. */
const onBusAt = new Map<string, number>();

/** p50 of each stage over the row's deliveries, once their outcomes are recorded. */
async function stages(store: Store, arrivals: DeliveryArrival[]): Promise<Stages> {
  const arrivedAt = new Map(arrivals.map((a) => [a.deliveryId, a]));
  const samples: Record<keyof Stages, number[]> = { to_bus: [], to_record: [], to_attempt: [], to_arrival: [], to_outcome: [] };
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    const records = ((await store.list(deliveryFamily.kind)) as Delivery[]).filter((d) => arrivedAt.has(d.meta.id));
    if (records.every((d) => d.status.status !== 'pending') || Date.now() > deadline) {
      for (const d of records) {
        const arrival = known(arrivedAt.get(d.meta.id), 'the arrival of a delivery');
        const recorded = Date.parse(d.meta.createdAt);
        const attempted = Date.parse(d.status.attempts?.[0]?.at ?? d.meta.createdAt);
        samples.to_record.push(recorded - arrival.createdAt);
        const published = onBusAt.get(d.spec.event_id);
        if (published !== undefined) samples.to_bus.push(published - arrival.createdAt);
        samples.to_attempt.push(attempted - recorded);
        samples.to_arrival.push(arrival.at - attempted);
        samples.to_outcome.push(Date.parse(d.meta.updatedAt) - arrival.at);
      }
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const p50 = (values: number[]) =>
    percentile(
      values.sort((a, b) => a - b),
      50,
    );
  return {
    to_bus: p50(samples.to_bus),
    to_record: p50(samples.to_record),
    to_attempt: p50(samples.to_attempt),
    to_arrival: p50(samples.to_arrival),
    to_outcome: p50(samples.to_outcome),
  };
}

/**
 * The dispatcher alone: `events` events published straight onto the bus at once (no create
 * API, no outbox relay), each matching every subscription; timed from the first publish to
 * the last arrival. What src/webhooks carries: delivery records, attempts, outcomes.
 */
async function dispatcherRow(bus: EventBus, team: string, events: number, subscriptions: number, receiver: Worker, store: Store): Promise<Row> {
  await ask(receiver, { cmd: 'take' });
  const startedAt = Date.now();
  const published = Array.from({ length: events }, (_, i): CloudEvent => ({
    id: `evt_bench${String(i).padStart(16, '0')}${startedAt}`,
    type: 'bucket.created',
    created_at: new Date().toISOString(),
    team_id: team,
    actor: 'system',
    data: { id: `bkt_bench${i}`, name: `burst-${i}`, region: 'fra1', status: 'creating' },
  }));
  await Promise.all(published.map((event) => bus.publish(event)));
  const publishedAt = Date.now();
  const arrivals: Arrival[] = [];
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  while (arrivals.length < events * subscriptions) {
    if (Date.now() > deadline)
      throw new Error(`dispatcher row: ${arrivals.length} of ${events * subscriptions} deliveries arrived within ${DRAIN_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    arrivals.push(...(await ask<Arrival[]>(receiver, { cmd: 'take' })));
  }
  // Every arrival of this row is a delivery: nothing else is sent to the receiver meanwhile.
  const deliveries = arrivals.filter(isDelivery);
  const latencies = deliveries.map((a) => a.at - a.createdAt).sort((a, b) => a - b);
  const lastArrival = Math.max(...arrivals.map((a) => a.at));
  return {
    name: `dispatcher alone, ${subscriptions} subscriptions`,
    load: `${events} events published onto the bus at once (no API, no outbox relay)`,
    requests_ok: events,
    requests_failed: 0,
    requests_per_s: round(events / Math.max(0.001, (publishedAt - startedAt) / 1000)),
    delivered: arrivals.length,
    delivered_per_s: round(arrivals.length / ((lastArrival - startedAt) / 1000)),
    latency_ms: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies[latencies.length - 1] },
    drain_ms: Math.max(0, lastArrival - publishedAt),
    ratio_to_baseline: null,
    stages_p50_ms: await stages(store, deliveries),
  };
}

async function postRow(receiverUrl: string, body: string, loader: Worker, receiver: Worker): Promise<Row> {
  await ask(receiver, { cmd: 'take' });
  const result = await ask<LoadResult>(loader, { cmd: 'post', url: receiverUrl, body, connections: CONNECTIONS, durationMs: DURATION_S * 1000 });
  const arrived = (await ask<Arrival[]>(receiver, { cmd: 'take' })).length;
  const latencies = result.latencies.sort((a, b) => a - b);
  const seconds = (result.endedAt - result.startedAt) / 1000;
  return {
    name: 'baseline: bare HTTP POST loop',
    load: `${CONNECTIONS} connections, closed loop, ${DURATION_S} s, ${Buffer.byteLength(body)}-byte body`,
    requests_ok: result.ok,
    requests_failed: result.failed,
    failed_statuses: result.failedStatuses,
    requests_per_s: round(result.ok / seconds),
    delivered: arrived,
    delivered_per_s: round(arrived / seconds),
    latency_ms: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(latencies[latencies.length - 1]) },
    drain_ms: null,
    ratio_to_baseline: 1,
  };
}

/** One window of subscription churn. */
interface ChurnWindow {
  /** Create-and-delete cycles that succeeded, and per second. */
  cycles: number;
  cycles_per_s: number;
  failed: number;
  /** One cycle's round trips (create, then delete), ms. */
  cycle_ms: { p50: number; p99: number };
  /** Deleted subscriptions the store keeps (their retention) when the window ended. */
  deleted_kept: number;
  /** cycles_per_s over the first window's, same run. */
  ratio_to_first: number;
}

/**
 * Subscriptions created and deleted by CONNECTIONS clients, in windows back to back. A
 * deleted subscription is kept for the delivery retention, so each window starts with
 * more of them: a rate that falls from window to window is work that grows with them
 * (each event's dispatch read every subscription of the team until 1b3d445).
 */
async function churnWindows(receiverUrl: string, loader: Worker, store: Store): Promise<ChurnWindow[]> {
  const windows: ChurnWindow[] = [];
  for (let i = 0; i < CHURN_WINDOWS; i++) {
    const result = await ask<LoadResult>(loader, { cmd: 'churn', url: receiverUrl, connections: CONNECTIONS, durationMs: DURATION_S * 1000 });
    const latencies = result.latencies.sort((a, b) => a - b);
    const perSecond = round(result.ok / ((result.endedAt - result.startedAt) / 1000));
    const kept = ((await store.list(webhookFamily.kind)) as Webhook[]).filter((w) => w.status.status === 'deleted').length;
    windows.push({
      cycles: result.ok,
      cycles_per_s: perSecond,
      failed: result.failed,
      cycle_ms: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
      deleted_kept: kept,
      ratio_to_first: Math.round((perSecond / (windows[0]?.cycles_per_s ?? perSecond)) * 1000) / 1000,
    });
    process.stdout.write(
      `churn window ${i + 1}: ${perSecond} cycles/s (${(windows[i].ratio_to_first * 100).toFixed(1)} % of the first), ${kept} deleted subscriptions kept, failed ${result.failed}\n`,
    );
  }
  return windows;
}

// ---------------------------------------------------------------- against Svix

/** One row of the Svix section: one system under one load. */
interface VersusRow {
  system: 'Cloudplane' | 'Svix';
  /** `saturated` or `paced <deliveries>/s`: the rows of each system under one load are compared. */
  load: string;
  detail: string;
  /** Events sent and taken (201 from Cloudplane, 202 from Svix), and per second. */
  requests_ok: number;
  requests_failed: number;
  /** The failed requests by the status they were answered with. */
  failed_statuses: Record<string, number>;
  requests_per_s: number;
  /** requests_ok times the endpoints: the deliveries waited for. */
  expected: number;
  /** Distinct deliveries (id and endpoint) that arrived, and per second from the first request to the last arrival. */
  delivered: number;
  delivered_per_s: number;
  /** Deliveries that arrived more than once (a retry after a lost answer). */
  repeated: number;
  /** Milliseconds from the event's `created_at` to the delivery's arrival. */
  latency_ms: { p50: number; p99: number; max: number };
  drain_ms: number;
  /** Seconds from the first request until SVIX_SETTLE_MS after the last arrival: the stretch the CPU is read over. */
  window_s: number;
  /** CPU seconds (user + system) over the window: every process of the system, and each part. */
  cpu_s: { total: number; parts: Record<string, number> };
  cpu_ms_per_delivery: number;
  /** The whole machine over the window (every process, /proc/stat), and the benchmark's own process (load generator, receiver). */
  machine_busy_pct: number;
  bench_process_cpu_s: number;
  /** CPU seconds of every other process of the machine over the window (busy, less the system's and the benchmark's): other work. */
  others_cpu_s: number;
}

interface Versus {
  svix: { build: SvixBuild; postgres: string; settings: Record<string, string>; processes: { server: number; postgres: number } };
  cloudplane: { settings: Record<string, string> };
  endpoints: number;
  /** Milliseconds of CPU per second with nothing sent, before the rows: what each costs at rest. */
  idle_cpu_ms_per_s: { cloudplane: number; svix: number; svix_parts: Record<string, number> };
  rows: VersusRow[];
  /** Cloudplane's figure over Svix's, per load (delivered/s only where both were saturated). */
  ratios: Array<{ load: string; delivered_per_s: number | null; cpu_per_delivery: number }>;
}

/** A system of the Svix section: where its events go, its receiver paths, the CPU of its processes. */
interface System {
  name: VersusRow['system'];
  target: Target;
  /** Its deliveries arrive under this path. */
  prefix: string;
  cpu(): Record<string, number>;
}

/** The environment Cloudplane's service runs with in this benchmark (in process, or as a child of its own). */
function serviceEnvironment(dataDir: string, simDelayMs: number): Record<string, string> {
  return {
    CLOUDPLANE_PORT: '0',
    CLOUDPLANE_DATA_DIR: dataDir,
    CLOUDPLANE_LOG_LEVEL: 'silent',
    CLOUDPLANE_BOOTSTRAP_API_KEY: KEY,
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000000',
    // No cap on one address's connections: the load generator's pool (up to 64 sockets) and the
    // benchmark's own calls all come from 127.0.0.1, and past the default 64 a new connection is
    // reset on arrival, which a paced row's burst of creates did (ECONNRESET).
    CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
    // A benchmark creates far more than a team's default quota.
    CLOUDPLANE_QUOTAS: 'load_balancer=100000000,bucket=100000000',
    CLOUDPLANE_SIM_DELAY_MS: String(simDelayMs),
    CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
    CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  };
}

async function subscribeTo(serviceUrl: string, receiverUrl: string): Promise<void> {
  const res = await fetch(`${serviceUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiverUrl, events: ['bucket.created'], rate_limit_per_minute: RATE_LIMIT_PER_MINUTE }),
  });
  if (res.status !== 201) throw new Error(`subscribing answered ${res.status}: ${await res.text()}`);
}

/** Cloudplane's service in a child process of its own (bench/cluster-operator.ts), so that its CPU is its process's. */
async function startCloudplaneChild(environment: Record<string, string>) {
  const child = fork(path.join(__dirname, 'cluster-operator.js'), ['service'], {
    execArgv: [],
    env: { PATH: process.env.PATH ?? '', ...environment },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await nextReply<OperatorReply, 'ready'>(child, 'Cloudplane service', 'ready', 120_000);
  return {
    url: known(ready.url, "the Cloudplane service's URL"),
    pid: known(child.pid, "the Cloudplane service's pid"),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      await nextReply<OperatorReply, 'stopped'>(child, 'Cloudplane service', 'stopped', 120_000).catch(() => child.kill('SIGKILL'));
      await exited;
    },
  };
}

const sum = (values: Record<string, number>) => Object.values(values).reduce((a, b) => a + b, 0);

/** One load on one system: the events, the wait for every delivery, and the CPU of the system's processes over it. */
async function versusRow(system: System, load: string, detail: string, command: LoadCommand, loader: Worker, receiver: Worker): Promise<VersusRow> {
  await ask(receiver, { cmd: 'take' });
  const cpuBefore = system.cpu();
  const machineBefore = machineCpuSeconds();
  const benchBefore = process.cpuUsage();
  const result = await ask<LoadResult>(loader, command);
  const expected = result.ok * SVIX_ENDPOINTS;
  const seen = new Map<string, DeliveryArrival>();
  let arrived = 0;
  const deadline = Date.now() + SVIX_DRAIN_TIMEOUT_MS;
  while (seen.size < expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const a of await ask<Arrival[]>(receiver, { cmd: 'take' })) {
      if (!isDelivery(a) || !a.path.startsWith(system.prefix)) continue;
      arrived++;
      const key = `${a.path} ${a.deliveryId}`;
      if (!seen.has(key)) seen.set(key, a);
    }
  }
  if (seen.size < expected)
    process.stdout.write(`  ${system.name}, ${load}: ${seen.size} of ${expected} deliveries arrived within ${SVIX_DRAIN_TIMEOUT_MS / 1000} s\n`);
  const deliveries = [...seen.values()];
  const lastArrival = Math.max(...deliveries.map((a) => a.at));
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastArrival + SVIX_SETTLE_MS - Date.now())));
  const cpuAfter = system.cpu();
  const machineAfter = machineCpuSeconds();
  const bench = process.cpuUsage(benchBefore);
  const windowS = (Date.now() - result.startedAt) / 1000;
  const parts = Object.fromEntries(Object.keys(cpuAfter).map((part) => [part, Math.round((cpuAfter[part] - cpuBefore[part]) * 100) / 100]));
  const total = sum(parts);
  const latencies = deliveries.map((a) => a.at - a.createdAt).sort((a, b) => a - b);
  return {
    system: system.name,
    load,
    detail,
    requests_ok: result.ok,
    requests_failed: result.failed,
    failed_statuses: result.failedStatuses,
    requests_per_s: round(result.ok / ((result.endedAt - result.startedAt) / 1000)),
    expected,
    delivered: deliveries.length,
    delivered_per_s: round(deliveries.length / ((lastArrival - result.startedAt) / 1000)),
    repeated: arrived - deliveries.length,
    latency_ms: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies[latencies.length - 1] },
    drain_ms: Math.max(0, lastArrival - result.endedAt),
    window_s: round(windowS),
    cpu_s: { total: Math.round(total * 100) / 100, parts },
    cpu_ms_per_delivery: Math.round(((total * 1000) / Math.max(1, deliveries.length)) * 1000) / 1000,
    machine_busy_pct: round(((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * 100),
    bench_process_cpu_s: Math.round(((bench.user + bench.system) / 1e6) * 100) / 100,
    others_cpu_s: round(Math.max(0, machineAfter.busy - machineBefore.busy - total - (bench.user + bench.system) / 1e6)),
  };
}

/**
 * Cloudplane against Svix: each with SVIX_ENDPOINTS subscriptions (endpoints) on the one
 * receiver, the same events through each one's API, saturated (CONNECTIONS in a closed loop)
 * and paced at each of SVIX_PACED_RATES deliveries per second; the two systems of a load run
 * back to back, Cloudplane first under the first load, then alternating.
 */
async function versusSvix(
  receiverBase: string,
  eventJson: string,
  loader: Worker,
  receiver: Worker,
  simDelayMs: number,
): Promise<Versus | { skipped: string }> {
  const found = findSvix();
  if ('skipped' in found) {
    process.stdout.write(`${found.skipped}\n`);
    return found;
  }
  process.stdout.write(`Cloudplane against Svix (${found.programs.bin}):\n`);
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-webhooks-child-'));
  const cloudplaneEnvironment = serviceEnvironment(dataDir, simDelayMs);
  let svix: RunningSvix | null = null;
  let cloudplane: Awaited<ReturnType<typeof startCloudplaneChild>> | null = null;
  try {
    svix = await startSvix(found.programs, log);
    cloudplane = await startCloudplaneChild(cloudplaneEnvironment);
    const { pid: cloudplanePid } = cloudplane;
    const { serverPid, postmasterPid } = svix;
    log(`  Cloudplane service on ${cloudplane.url}, pid ${cloudplanePid}`);

    const app = await svixCall<{ id: string }>(svix, 'POST', '/api/v1/app/', { name: 'cloudplane-bench' }, 201);
    for (let i = 0; i < SVIX_ENDPOINTS; i++) {
      await svixCall(svix, 'POST', `/api/v1/app/${app.id}/endpoint/`, { url: `${receiverBase}/svix/${i}`, description: `receiver ${i}` }, 201);
      await subscribeTo(cloudplane.url, `${receiverBase}/cloudplane/${i}`);
    }
    const systems: System[] = [
      {
        name: 'Cloudplane',
        target: { system: 'cloudplane', url: `${cloudplane.url}/api/v1/object-storage` },
        prefix: '/hook/cloudplane/',
        cpu: () => ({ cloudplane: treeCpuSeconds(cloudplanePid) }),
      },
      {
        name: 'Svix',
        target: { system: 'svix', url: `${svix.url}/api/v1/app/${app.id}/msg/`, token: svix.token, event: eventJson },
        prefix: '/hook/svix/',
        cpu: () => ({ 'svix-server': treeCpuSeconds(serverPid), postgresql: treeCpuSeconds(postmasterPid) }),
      },
    ];

    // Warm-up: a second of events end to end on each, thrown away.
    for (const system of systems)
      await versusRow(system, 'warm-up', '', { cmd: 'closed', connections: 2, durationMs: 1000, target: system.target }, loader, receiver);
    // At rest: what each costs with nothing sent.
    const idleBefore = systems.map((system) => system.cpu());
    const idleStart = Date.now();
    await new Promise((resolve) => setTimeout(resolve, SVIX_IDLE_S * 1000));
    const idleSeconds = (Date.now() - idleStart) / 1000;
    const idle = systems.map((system, i) => {
      const after = system.cpu();
      return Object.fromEntries(Object.keys(after).map((part) => [part, round(((after[part] - idleBefore[i][part]) * 1000) / idleSeconds)]));
    });

    const loads: Array<{ load: string; detail: string; command: (target: Target) => LoadCommand }> = [
      {
        load: 'saturated',
        detail: `${CONNECTIONS} connections sending events, closed loop, ${DURATION_S} s`,
        command: (target) => ({ cmd: 'closed', connections: CONNECTIONS, durationMs: DURATION_S * 1000, target }),
      },
      ...SVIX_PACED_RATES.map((rate) => ({
        load: `paced ${rate}/s`,
        detail: `${rate / SVIX_ENDPOINTS} events/s, open loop, ${DURATION_S} s`,
        command: (target: Target): LoadCommand => ({ cmd: 'paced', rate: rate / SVIX_ENDPOINTS, durationMs: DURATION_S * 1000, target }),
      })),
    ];
    const rows: VersusRow[] = [];
    const ratios: Versus['ratios'] = [];
    for (const [i, { load, detail, command }] of loads.entries()) {
      const order = i % 2 === 0 ? systems : [...systems].reverse();
      const pair: VersusRow[] = [];
      for (const system of order) {
        const row = await versusRow(system, load, detail, command(system.target), loader, receiver);
        pair.push(row);
        log(
          `  ${row.system}, ${row.load}: ${row.requests_per_s} events/s taken, ${row.delivered_per_s} delivered/s, ${row.cpu_ms_per_delivery} ms CPU per delivery (${JSON.stringify(row.cpu_s.parts)} s over ${row.window_s} s, machine ${row.machine_busy_pct} % busy, ${row.others_cpu_s} s of it other processes), p50 ${row.latency_ms.p50} ms, p99 ${row.latency_ms.p99} ms, failed ${row.requests_failed} ${JSON.stringify(row.failed_statuses)}`,
        );
      }
      const [cp, sv] = ['Cloudplane', 'Svix'].map((name) => pair.find((row) => row.system === name));
      if (!cp || !sv) throw new Error(`${load}: no row of Cloudplane or of Svix`);
      rows.push(cp, sv);
      ratios.push({
        load,
        delivered_per_s: load === 'saturated' ? Math.round((cp.delivered_per_s / sv.delivered_per_s) * 1000) / 1000 : null,
        cpu_per_delivery: Math.round((cp.cpu_ms_per_delivery / sv.cpu_ms_per_delivery) * 1000) / 1000,
      });
    }
    const { SVIX_JWT_SECRET: _secret, ...settings } = svixSettings(0, 0, '');
    return {
      svix: {
        build: svix.build,
        postgres: svix.postgresVersion,
        settings: { ...settings, SVIX_DB_DSN: 'postgresql://postgres@127.0.0.1:<free port>/postgres', SVIX_LISTEN_ADDRESS: '127.0.0.1:<free port>' },
        processes: svix.processes(),
      },
      cloudplane: { settings: { ...cloudplaneEnvironment, CLOUDPLANE_DATA_DIR: '<fresh temporary directory>' } },
      endpoints: SVIX_ENDPOINTS,
      idle_cpu_ms_per_s: { cloudplane: sum(idle[0]), svix: round(sum(idle[1])), svix_parts: idle[1] },
      rows,
      ratios,
    };
  } finally {
    await cloudplane?.stop();
    await svix?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Failed requests for a table: the count, and by which status when there were any (`3 (2x 503, 1x error)`). */
function failures(failed: number, statuses: Record<string, number> = {}): string {
  const by = Object.entries(statuses).map(([status, count]) => `${count}x ${status}`);
  return failed && by.length ? `${failed} (${by.join(', ')})` : String(failed);
}

/** The Svix section of webhooks-latest.md. */
function versusMarkdown(versus: Versus | { skipped: string } | null): string[] {
  if (versus === null) return [];
  if ('skipped' in versus) return ['## Cloudplane against Svix', '', versus.skipped, ''];
  const parts = (row: VersusRow) =>
    Object.entries(row.cpu_s.parts)
      .map(([part, seconds]) => `${part} ${seconds}`)
      .join(', ');
  const times = (ratio: number | null) => (ratio === null ? '-' : `${ratio.toFixed(2)}x`);
  const b = versus.svix.build;
  return [
    '## Cloudplane against Svix',
    '',
    `Svix: ${b.version} built from svix/svix-webhooks at ${b.commit}${b.local_changes.length ? ` (built with local changes: ${b.local_changes.map((c) => c.trim()).join('; ')})` : ''}; ${versus.svix.postgres}, a throwaway cluster on PostgreSQL's defaults (fsync and synchronous commit on); in-memory queue and cache, loopback whitelisted, RUST_LOG=warn. Cloudplane: its service in a child process of its own (embedded store, fsynced; embedded bus; simulated provider; logging off). ${versus.endpoints} endpoints on Svix and ${versus.endpoints} subscriptions on Cloudplane, all to the one receiver: each event is ${versus.endpoints} deliveries. Events go through each one's API: Cloudplane \`POST /api/v1/object-storage\` (bucket creates), Svix \`POST /api/v1/app/{app}/msg/\` (a copy of a Cloudplane \`bucket.created\` event as the payload).`,
    `CPU is user + system from /proc/<pid>/stat of every process of each (Svix: svix-server, and PostgreSQL's postmaster with every backend and background process below it, ended ones included; Cloudplane: its one process), from the first event sent until ${SVIX_SETTLE_MS / 1000} s after the last delivery. Machine busy: every process over the same stretch; in parentheses the CPU seconds of processes neither system nor the benchmark owns (other work on the machine). At rest (${SVIX_IDLE_S} s, nothing sent): Cloudplane ${versus.idle_cpu_ms_per_s.cloudplane} ms/s, Svix ${versus.idle_cpu_ms_per_s.svix} ms/s.`,
    '',
    '| load | system | events/s taken | delivered | delivered/s | CPU s over the row | CPU ms per delivery | machine busy (CPU s of other processes) | p50 ms | p99 ms | drain ms | failed requests |',
    '|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
    ...versus.rows.map(
      (r) =>
        `| ${r.load} (${r.detail}) | ${r.system} | ${r.requests_per_s} | ${r.delivered}${r.delivered < r.expected ? ` of ${r.expected}` : ''} | ${r.delivered_per_s} | ${r.cpu_s.total} (${parts(r)}) | ${r.cpu_ms_per_delivery} | ${r.machine_busy_pct} % (${r.others_cpu_s}) | ${r.latency_ms.p50} | ${r.latency_ms.p99} | ${r.drain_ms} | ${failures(r.requests_failed, r.failed_statuses)} |`,
    ),
    '',
    'Cloudplane over Svix, same run, back to back (below 1: Cloudplane delivers fewer per second, or spends less CPU per delivery):',
    '',
    '| load | delivered/s | CPU per delivery |',
    '|---|---:|---:|',
    ...versus.ratios.map((r) => `| ${r.load} | ${times(r.delivered_per_s)} | ${times(r.cpu_per_delivery)} |`),
    '',
  ];
}

function markdown(report: {
  started_at: string;
  machine: ReturnType<typeof machine>;
  source: ReturnType<typeof sourceState>;
  load_average: { before: number[]; after: number[] };
  settings: Record<string, unknown>;
  note: string;
  rows: Row[];
  churn: ChurnWindow[];
  svix: Versus | { skipped: string } | null;
}): string {
  const m = report.machine;
  const churnSection = report.churn.length
    ? [
        `Subscription churn: ${String(report.settings.connections)} clients each creating a subscription and deleting it again, in ${report.churn.length} windows of ${String(report.settings.duration_s)} s back to back, after the rows above. Deleted subscriptions are kept for the delivery retention, so each window starts with more of them; the first window is the baseline.`,
        '',
        '| window | cycles/s | vs first window | cycle p50 ms | cycle p99 ms | deleted subscriptions kept | failed |',
        '|---:|---:|---:|---:|---:|---:|---:|',
        ...report.churn.map(
          (w, i) =>
            `| ${i + 1} | ${w.cycles_per_s} | ${(w.ratio_to_first * 100).toFixed(1)} % | ${w.cycle_ms.p50} | ${w.cycle_ms.p99} | ${w.deleted_kept} | ${w.failed} |`,
        ),
      ]
    : [];
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
  const rows = report.rows.map(
    (r) =>
      `| ${r.name} | ${r.load} | ${r.requests_per_s} | ${r.delivered} | ${r.delivered_per_s} | ${r.ratio_to_baseline === null ? '-' : `${(r.ratio_to_baseline * 100).toFixed(1)} %`} | ${r.latency_ms.p50} | ${r.latency_ms.p99} | ${r.latency_ms.max} | ${r.drain_ms ?? '-'} | ${failures(r.requests_failed, r.failed_statuses)} |`,
  );
  const stageRows = report.rows.flatMap(({ name, stages_p50_ms: s }) =>
    s ? [`| ${name} | ${s.to_bus} | ${s.to_record} | ${s.to_attempt} | ${s.to_arrival} | ${s.to_outcome} |`] : [],
  );
  const rowsSection = report.rows.length
    ? [
        '| row | load | requests/s | delivered | delivered/s | delivered/s vs baseline | p50 ms | p99 ms | max ms | drain ms | failed requests |',
        '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
        ...rows,
        '',
        "Where a delivery's time goes (p50 ms of each stage): event to bus (outbox relay, durable publish; part of the next); event to delivery record (outbox relay, bus, consumer, durable create); record to first attempt (timer, rate limit, pump); attempt to arrival (secrets, signing, POST); arrival to the outcome's durable write.",
        '',
        '| row | to bus | to record | to attempt | to arrival | to outcome |',
        '|---|---:|---:|---:|---:|---:|',
        ...stageRows,
        '',
        "- Delivery rows: requests are `POST /api/v1/object-storage` (a durable create with its event in the outbox); latency runs from the event's `created_at` (stamped by the resource write) to the arrival of the delivery at the receiver, in whole ms; delivered/s counts from the first create to the last arrival; drain is how long the last deliveries came after the load stopped.",
        "- Baseline row: the same receiver answering a bare POST loop with a body of a delivery's size; latency is the client's round trip. It is the ceiling of the HTTP leg alone on this machine in this run.",
        "- delivered/s vs baseline: each row's delivered/s over the baseline row's, same run (`ratio_to_baseline` in the JSON).",
        '',
      ]
    : [];
  return [
    `# Webhook benchmark, ${report.started_at}`,
    '',
    `Machine: ${m.cpu_model}, ${m.cpu_count} CPUs, ${m.total_memory_gb} GB RAM, ${m.platform}, Node ${m.node}. Cloudplane at ${report.source.commit}${report.source.uncommitted_src.length ? ` with uncommitted src/ changes (${report.source.uncommitted_src.length} files)` : ''}.`,
    `Service: in-process startService, ${String(report.settings.bus)}, embedded store (fsynced), simulated provider (${String(report.settings.sim_delay_ms)} ms), one subscription to \`bucket.created\` at ${RATE_LIMIT_PER_MINUTE}/min. Receiver and load generator in worker threads of the same process.`,
    `Load average (1/5/15 min) before: ${load(report.load_average.before)}, after: ${load(report.load_average.after)}.`,
    '',
    `> ${report.note}`,
    '',
    ...rowsSection,
    ...churnSection,
    ...(report.churn.length ? [''] : []),
    ...versusMarkdown(report.svix),
    '- See bench/README.md.',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadBefore = os.loadavg();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-webhooks-'));
  const natsUrl = process.env.BENCH_NATS_URL;
  const simDelayMs = 50;
  const config = loadConfig({
    ...serviceEnvironment(dataDir, simDelayMs),
    ...(natsUrl ? { CLOUDPLANE_NATS_URL: natsUrl, CLOUDPLANE_NATS_STREAM: `BENCH_${Date.now()}` } : {}),
  });
  const service = await startService(config, createLogger('silent'));
  service.ctx.bus.follow(new Date().toISOString(), (event) => void onBusAt.set(event.id, Date.now()));
  const receiver = new Worker(__filename, { workerData: { role: 'receiver' } });
  const loader = new Worker(__filename, { workerData: { role: 'load', serviceUrl: `${service.url}/api/v1/object-storage` } });
  for (const worker of [receiver, loader]) {
    worker.on('error', (err) => {
      process.stderr.write(`bench worker failed: ${err.stack}\n`);
      process.exit(1);
    });
  }
  const rows: Row[] = [];
  let churn: ChurnWindow[] = [];
  let svix: Versus | { skipped: string } | null = null;
  let serviceStopped = false;
  try {
    const { port } = await new Promise<{ port: number }>((resolve) => receiver.once('message', resolve));
    const receiverUrl = `http://127.0.0.1:${port}/hook`;
    const subscribe = () => subscribeTo(service.url, receiverUrl);
    await subscribe();

    // Warm-up: a few creates end to end, thrown away; one body is kept for the baseline's size.
    await deliveryRow('warm-up', '', { cmd: 'closed', connections: 2, durationMs: 1000 }, loader, receiver, service.ctx.store);
    const sample = await fetch(`${service.url}/api/v1/object-storage?limit=1`, { headers: { authorization: `Bearer ${KEY}` } });
    const body = JSON.stringify({
      id: 'evt_00000000000000000000',
      type: 'bucket.created',
      created_at: new Date().toISOString(),
      team_id: 'team_0000000000000000',
      actor: 'key_00000000000000000000',
      data: ((await sample.json()) as { data: unknown[] }).data[0],
    });

    const plan: Array<() => Promise<Row>> = [
      () => postRow(receiverUrl, body, loader, receiver),
      () =>
        deliveryRow(
          'deliveries, paced',
          `${PACED_RATE} creates/s, open loop, ${DURATION_S} s`,
          { cmd: 'paced', rate: PACED_RATE, durationMs: DURATION_S * 1000 },
          loader,
          receiver,
          service.ctx.store,
        ),
      () =>
        deliveryRow(
          'deliveries, saturated',
          `${CONNECTIONS} connections creating, closed loop, ${DURATION_S} s`,
          { cmd: 'closed', connections: CONNECTIONS, durationMs: DURATION_S * 1000 },
          loader,
          receiver,
          service.ctx.store,
        ),
      async () => {
        for (let i = 1; i < FANOUT; i++) await subscribe();
        const paced = Math.round(PACED_RATE * 2);
        return deliveryRow(
          `deliveries, fan-out x${FANOUT}`,
          `${paced} creates/s, open loop, ${DURATION_S} s, ${FANOUT} subscriptions per event`,
          { cmd: 'paced', rate: paced, durationMs: DURATION_S * 1000 },
          loader,
          receiver,
          service.ctx.store,
          FANOUT,
        );
      },
      () => dispatcherRow(service.ctx.bus, known(service.bootstrap, 'the bootstrap team').teamId, BURST_EVENTS, FANOUT, receiver, service.ctx.store),
    ];
    for (const run of PARTS.has('rows') ? plan : []) {
      const row = await run();
      rows.push(row);
      row.ratio_to_baseline ??= Math.round((row.delivered_per_s / rows[0].delivered_per_s) * 1000) / 1000;
      process.stdout.write(
        `${row.name}: ${row.requests_per_s} req/s, ${row.delivered_per_s} delivered/s (${(row.ratio_to_baseline * 100).toFixed(1)} % of baseline), stages p50 ${JSON.stringify(row.stages_p50_ms ?? {})}, p50 ${row.latency_ms.p50} ms, p99 ${row.latency_ms.p99} ms, failed ${row.requests_failed}\n`,
      );
    }
    if (PARTS.has('churn')) churn = await churnWindows(receiverUrl, loader, service.ctx.store);
    // The in-process service is stopped first, so that the machine holds only the two systems measured.
    await service.stop();
    serviceStopped = true;
    if (PARTS.has('svix')) svix = await versusSvix(`http://127.0.0.1:${port}/hook`, body, loader, receiver, simDelayMs);
  } finally {
    await loader.terminate();
    receiver.postMessage({ cmd: 'close' });
    await new Promise((resolve) => receiver.once('exit', resolve));
    if (!serviceStopped) await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }

  const report = {
    started_at: startedAt.toISOString(),
    machine: machine(),
    source: sourceState(),
    load_average: { before: loadBefore, after: os.loadavg() },
    settings: {
      duration_s: DURATION_S,
      connections: CONNECTIONS,
      paced_rate: PACED_RATE,
      sim_delay_ms: simDelayMs,
      bus: natsUrl ? 'NATS JetStream bus' : 'embedded event bus',
      rate_limit_per_minute: RATE_LIMIT_PER_MINUTE,
      parts: [...PARTS],
      svix_endpoints: SVIX_ENDPOINTS,
      svix_paced_deliveries_per_s: SVIX_PACED_RATES,
    },
    note:
      process.env.BENCH_NOTE ??
      'Run on a shared 2-CPU machine while other processes were running (see the load averages): the figures show orders of magnitude and relations between rows, not the ceiling of the hardware.',
    rows,
    churn,
    svix,
  };
  const written = writeResults('webhooks', startedAt, report, markdown(report));
  process.stdout.write(`\nwrote ${written.jsonFile} and ${written.markdownFile}\n`);
}

if (isMainThread) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
} else {
  // A worker of main(): its role, and the load worker's service URL, are in its workerData.
  const port = known(parentPort, 'the channel to the main thread');
  const data: unknown = workerData;
  if (fieldOf(data, 'role') === 'receiver') receiverThread(port);
  else if (hasStrings(data, 'serviceUrl')) loadThread(port, data.serviceUrl);
  else throw new Error('a load worker needs the service URL (workerData.serviceUrl)');
}
