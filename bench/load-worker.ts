/**
 * autocannon in a worker thread, with latencies in microseconds. autocannon's own
 * histogram holds whole milliseconds, so at a p99 of 2-4 ms one count moves a ratio by a
 * half or more; here every 2xx response's time (autocannon measures it with hrtime) is
 * recorded in µs into Node's HdrHistogram. The worker keeps the load generator off the
 * event loop of whatever else the benchmark process serves (its baseline route).
 *
 * loadInWorker(options) from the benchmark; this file is also the worker's entry point.
 */
import { createHistogram } from 'node:perf_hooks';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { resultOfWorker } from './report';

export interface LoadOptions {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
}

export interface LoadResult {
  req_per_s: number;
  p50_us: number;
  p99_us: number;
  max_us: number;
  /** Responses whose time was recorded (2xx). */
  recorded: number;
  errors: number;
  non_2xx: number;
}

/** autocannon's raw result: in a worker thread it leaves aggregation to a main thread, so the average is ours to take. */
interface RawResult {
  totalCompletedRequests: number;
  /** One-second samples of the run. */
  samples: number;
  errors: number;
  non2xx: number;
}

interface AutocannonInstance extends PromiseLike<RawResult> {
  on(event: 'response', listener: (client: unknown, statusCode: number, bytes: number, responseTimeMs: number) => void): void;
}

/** Runs one load in a fresh worker thread and resolves with its figures. */
export function loadInWorker(options: LoadOptions): Promise<LoadResult> {
  return resultOfWorker<LoadResult>('load-worker.js', options, 'load worker');
}

async function runInThisWorker(options: LoadOptions): Promise<LoadResult> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const autocannon = require('autocannon') as (options: LoadOptions) => AutocannonInstance;
  const latencies = createHistogram({ lowest: 1, highest: 60_000_000, figures: 3 });
  const instance = autocannon(options);
  instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
    if (statusCode >= 200 && statusCode < 300) latencies.record(Math.max(1, Math.round(responseTimeMs * 1000)));
  });
  const r = await instance;
  const recorded = latencies.count;
  return {
    req_per_s: Math.round((r.totalCompletedRequests / Math.max(1, r.samples)) * 10) / 10,
    p50_us: recorded > 0 ? latencies.percentile(50) : 0,
    p99_us: recorded > 0 ? latencies.percentile(99) : 0,
    max_us: recorded > 0 ? latencies.max : 0,
    recorded,
    errors: r.errors,
    non_2xx: r.non2xx,
  };
}

if (!isMainThread && parentPort && (workerData as LoadOptions | undefined)?.url) {
  const port = parentPort;
  // A failed run is left unhandled on purpose: it ends the worker, and loadInWorker rejects with it.
  void runInThisWorker(workerData as LoadOptions).then((result) => {
    port.postMessage(result);
  });
}
