/**
 * What kept delivery records cost (issue 36, item 5): the memory of the service holding
 * N finished deliveries, and its CPU per delivery before and after they piled up.
 *
 *   npx tsc -p tsconfig.json && node --expose-gc dist/bench/delivery-records.js
 *
 * The real service runs in this process (embedded store, fresh data directory), with
 * BENCH_SUBSCRIPTIONS (10) subscriptions to a receiver in a child process that answers 204.
 * Events are published straight onto the bus in batches, and a batch is done when the
 * store's watch has seen each of its deliveries succeed. Measured:
 * - fresh: the CPU of this process per delivery over BENCH_BATCH deliveries, with none kept;
 * - memory after two forced collections with none kept, and with BENCH_DELIVERIES kept,
 *   and again once the process was left idle BENCH_SETTLE_SECONDS (20) (report.ts memorySettled);
 * - piled: the CPU per delivery over another BENCH_BATCH, with BENCH_DELIVERIES kept.
 * With BENCH_HEAP_SNAPSHOTS=<dir>, V8 heap snapshots of both memory readings are written
 * there, for `node dist/bench/memory.js analyze`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { known } from '../src/lib/known';
import type { CloudEvent } from '../src/resources/cloud-event';
import { deliveryFamily, MAX_RATE_LIMIT_PER_MINUTE } from '../src/resources/webhook';
import type { Store } from '../src/store/types';
import { directorySize } from '../test/helpers/directory-size';
import { machine, memoryAfterGc, memorySettled, round, sourceState, writeResults } from './report';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 260_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 10_000);
/** Subscriptions matching every event, as the Svix comparison has endpoints: a batch of deliveries is BATCH / SUBSCRIPTIONS events. */
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 10);
const KEY = 'cpk_Bench0123456789abcdefghijABCDEFGHIJKLMNO';
const HEAP_SNAPSHOTS = process.env.BENCH_HEAP_SNAPSHOTS;
const SETTLE_MS = Number(process.env.BENCH_SETTLE_SECONDS ?? 20) * 1000;
/** The subscription's own limit, at its most: this measures the dispatcher, not the limit. */
const RATE_LIMIT_PER_MINUTE = MAX_RATE_LIMIT_PER_MINUTE;

/** Counts deliveries that turned `succeeded`, from the store's watch (no set of ids: this process's heap is what is measured). */
class Succeeded {
  count = 0;
  readonly stop: () => void;
  constructor(store: Store, kind: string) {
    this.stop = store.watch(({ type, object, previous }) => {
      if (type === 'deleted' || object.meta.kind !== kind) return;
      if (object.status.status === 'succeeded' && previous?.status.status !== 'succeeded') this.count++;
    });
  }
}

/** A receiver in its own process (its CPU is not this one's), answering 204 to every POST. */
async function startReceiver(): Promise<{ url: string; child: ChildProcess }> {
  const source = `
    const http = require('node:http');
    const server = http.createServer((req, res) => { req.resume(); req.on('end', () => { res.statusCode = 204; res.end(); }); });
    server.keepAliveTimeout = 60_000;
    server.listen(0, '127.0.0.1', () => process.send(server.address().port));`;
  const child = fork('-e', [source], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => {
      resolve(Number(message));
    });
    child.once('exit', (code) => {
      reject(new Error(`the receiver exited (${code})`));
    });
  });
  return { url: `http://127.0.0.1:${port}/hook`, child };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const { loadConfig } = await import('../src/config');
  const { createLogger } = await import('../src/logger');
  const { startService } = await import('../src/service');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-deliveries-'));
  const receiver = await startReceiver();
  const config = loadConfig({
    CLOUDPLANE_PORT: '0',
    CLOUDPLANE_DATA_DIR: dataDir,
    CLOUDPLANE_LOG_LEVEL: 'silent',
    CLOUDPLANE_BOOTSTRAP_API_KEY: KEY,
    CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
    CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('CLOUDPLANE_'))),
  });
  const service = await startService(config, createLogger('silent'));
  const succeeded = new Succeeded(service.ctx.store, deliveryFamily.kind);
  try {
    const { teamId } = known(service.bootstrap, 'the bootstrap team and key');
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const created = await fetch(`${service.url}/api/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `${receiver.url}/${i}`, events: ['bucket.created'], rate_limit_per_minute: RATE_LIMIT_PER_MINUTE }),
      });
      if (created.status !== 201) throw new Error(`creating a subscription answered ${created.status}: ${await created.text()}`);
    }

    let published = 0;
    /** Publishes events for `count` deliveries and waits until each succeeded; the CPU of this process per delivery meanwhile. */
    const batch = async (count: number): Promise<{ deliveries: number; seconds: number; cpu_us_per_delivery: number }> => {
      const events = Math.ceil(count / SUBSCRIPTIONS);
      const deliveries = events * SUBSCRIPTIONS;
      const target = succeeded.count + deliveries;
      const cpuBefore = process.cpuUsage();
      const wallBefore = performance.now();
      const now = new Date().toISOString();
      for (let i = 0; i < events; i++, published++) {
        const event: CloudEvent = {
          id: `evt_bench${String(published).padStart(20, '0')}`,
          type: 'bucket.created',
          created_at: now,
          team_id: teamId,
          actor: 'system',
          data: { id: `bkt_bench${published}`, name: `pile-${published}`, region: 'fra1', status: 'creating' },
        };
        await service.ctx.bus.publish(event);
      }
      let reportAt = performance.now() + 10_000;
      while (succeeded.count < target) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (performance.now() > reportAt) {
          process.stderr.write(`${succeeded.count} of ${target} deliveries succeeded\n`);
          reportAt += 10_000;
        }
      }
      const cpu = process.cpuUsage(cpuBefore);
      return { deliveries, seconds: round((performance.now() - wallBefore) / 1000), cpu_us_per_delivery: round((cpu.user + cpu.system) / deliveries) };
    };
    const memory = async (label: string) => {
      const reading = await memoryAfterGc();
      if (HEAP_SNAPSHOTS) {
        fs.mkdirSync(HEAP_SNAPSHOTS, { recursive: true });
        v8.writeHeapSnapshot(path.join(HEAP_SNAPSHOTS, `deliveries-${label}.heapsnapshot`));
      }
      return { ...reading, settled: await memorySettled(SETTLE_MS) };
    };

    const fresh = await batch(BATCH);
    const before = await memory(`${succeeded.count}`);
    const keptBefore = succeeded.count;
    while (succeeded.count < DELIVERIES) await batch(Math.min(BATCH, DELIVERIES - succeeded.count));
    const after = await memory(`${succeeded.count}`);
    const keptAfter = succeeded.count;
    const piled = await batch(BATCH);
    const report = {
      benchmark: 'delivery-records',
      started_at: startedAt.toISOString(),
      machine: machine(),
      source: sourceState(),
      load_average: os.loadavg(),
      heap_growing_percent: config.heapGrowingPercent,
      subscriptions: SUBSCRIPTIONS,
      deliveries_kept: { before: keptBefore, after: keptAfter },
      memory: { before, after },
      settle_seconds: SETTLE_MS / 1000,
      heap_used_per_kept_delivery_bytes: Math.round(((after.heap_used_mb - before.heap_used_mb) * 1024 ** 2) / (keptAfter - keptBefore)),
      data_dir_mb: round(directorySize(dataDir) / 1024 ** 2),
      fresh,
      piled,
      cpu_per_delivery_piled_x_fresh: round(piled.cpu_us_per_delivery / fresh.cpu_us_per_delivery),
    };
    const { jsonFile } = writeResults('delivery-records', startedAt, report, markdown(report));
    process.stdout.write(`${markdown(report)}\n${jsonFile}\n`);
  } finally {
    succeeded.stop();
    await service.stop();
    receiver.child.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

type Reading = Awaited<ReturnType<typeof memoryAfterGc>> & { settled: Awaited<ReturnType<typeof memorySettled>> };

type Report = {
  started_at: string;
  subscriptions: number;
  deliveries_kept: { before: number; after: number };
  memory: { before: Reading; after: Reading };
  settle_seconds: number;
  heap_used_per_kept_delivery_bytes: number;
  data_dir_mb: number;
  fresh: { deliveries: number; seconds: number; cpu_us_per_delivery: number };
  piled: { deliveries: number; seconds: number; cpu_us_per_delivery: number };
  cpu_per_delivery_piled_x_fresh: number;
  source: { commit: string };
  load_average: number[];
};

function markdown(r: Report): string {
  const { before, after } = r.memory;
  return [
    `# Delivery records kept, ${r.started_at} (${r.source.commit})`,
    '',
    `${r.subscriptions} subscriptions matching every event, one receiver answering 204 in a process of its own; CPU and memory are the service's process.`,
    '',
    `Memory after two forced collections, and settled: after ${r.settle_seconds} s idle, once V8's memory reducer has given back what the burst of deliveries left committed (bench/report.ts memorySettled).`,
    '',
    '| deliveries kept | RSS MB | heap used MB | heap total MB | external MB | settled: RSS MB | heap used MB | heap total MB |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...[
      { kept: r.deliveries_kept.before, m: before },
      { kept: r.deliveries_kept.after, m: after },
    ].map(
      ({ kept, m }) =>
        `| ${String(kept)} | ${m.rss_mb} | ${m.heap_used_mb} | ${m.heap_total_mb} | ${m.external_mb} | ${m.settled.rss_mb} | ${m.settled.heap_used_mb} | ${m.settled.heap_total_mb} |`,
    ),
    '',
    `RSS grew by ${round(after.rss_mb - before.rss_mb)} MB after forced collections, **${round(after.settled.rss_mb - before.settled.rss_mb)} MB settled**; ` +
      `heap used by ${round(after.heap_used_mb - before.heap_used_mb)} MB (${r.heap_used_per_kept_delivery_bytes} bytes per kept delivery); the data directory holds ${r.data_dir_mb} MB.`,
    '',
    '| batch | deliveries | seconds | CPU µs per delivery |',
    '|---|---:|---:|---:|',
    `| fresh (${r.deliveries_kept.before - r.fresh.deliveries} kept before it) | ${r.fresh.deliveries} | ${r.fresh.seconds} | ${r.fresh.cpu_us_per_delivery} |`,
    `| piled (${r.deliveries_kept.after} kept before it) | ${r.piled.deliveries} | ${r.piled.seconds} | ${r.piled.cpu_us_per_delivery} |`,
    '',
    `CPU per delivery, piled over fresh: **${r.cpu_per_delivery_piled_x_fresh}**. Load average at the end: ${r.load_average.map((l) => l.toFixed(2)).join(', ')}.`,
    '',
  ].join('\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
