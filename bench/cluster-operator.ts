/**
 * The operator under measurement in bench/cluster.ts, in a process of its own (forked
 * with --expose-gc), so that its memory is its own and the load generator does not share
 * its event loop. Configured by the environment like `make run`; driven over IPC:
 *   { type: 'measure' }                     -> CPU time so far, memory after a forced GC
 *   { type: 'reconciled', kind, count, timeoutMs }
 *                                           -> ms from start until `count` reconcile passes of `kind`
 *   { type: 'api-calls' }                   -> requests made to the API server so far, by `verb resource`
 *   { type: 'stop' }                        -> graceful stop (the Lease is released), then exit
 * Mode `service` (default) runs startService; mode `store` only starts the Kubernetes store,
 * i.e. the list + watch of every collection into the cache, to time that alone.
 */
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { startService } from '../src/service';
import { createStore } from '../src/resources/store-of-record';
import { kubeApiRequests, reconcileCounter } from '../src/metrics';
import { memoryAfterGc, sendReply, stackOf } from './report';

export type OperatorRequest =
  { type: 'measure' } | { type: 'reconciled'; kind: string; count: number; timeoutMs: number } | { type: 'api-calls' } | { type: 'stop' };

export interface Measurement {
  at: number;
  cpu_ms: number;
  rss_mb: number;
  heap_used_mb: number;
  heap_total_mb: number;
  external_mb: number;
}

export type OperatorReply =
  | { type: 'ready'; start_ms: number; url?: string; team_id?: string }
  | { type: 'failed'; error: string }
  | { type: 'measure'; measurement: Measurement }
  | { type: 'reconciled'; ms_since_start: number | null; passes: number }
  | { type: 'api-calls'; calls: Record<string, number>; load_balancer_passes: number }
  | { type: 'stopped'; stop_ms: number };

const send: (reply: OperatorReply) => void = sendReply;

async function measure(): Promise<Measurement> {
  const cpu = process.cpuUsage();
  const memory = await memoryAfterGc();
  return {
    at: Date.now(),
    cpu_ms: (cpu.user + cpu.system) / 1000,
    rss_mb: memory.rss_mb,
    heap_used_mb: memory.heap_used_mb,
    heap_total_mb: memory.heap_total_mb,
    external_mb: memory.external_mb,
  };
}

async function passes(kind: string): Promise<number> {
  const metric = await reconcileCounter.get();
  return metric.values.filter((v) => v.labels.kind === kind).reduce((sum, v) => sum + v.value, 0);
}

/** cloudplane_kube_api_requests_total so far, keyed `verb resource`. */
async function apiCalls(): Promise<Record<string, number>> {
  const metric = await kubeApiRequests.get();
  return Object.fromEntries(metric.values.map((v) => [`${v.labels.verb} ${v.labels.resource}`, v.value]));
}

async function main(): Promise<void> {
  const mode = process.argv[2] ?? 'service';
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const t0 = performance.now();
  let stop: () => Promise<void>;
  if (mode === 'store') {
    const store = createStore(config, logger);
    await store.start();
    stop = () => store.stop();
    send({ type: 'ready', start_ms: performance.now() - t0 });
  } else {
    const service = await startService(config, logger);
    stop = () => service.stop();
    send({ type: 'ready', start_ms: performance.now() - t0, url: service.url, team_id: service.bootstrap?.teamId });
  }

  process.on('message', (request: OperatorRequest) => {
    void (async () => {
      if (request.type === 'measure') send({ type: 'measure', measurement: await measure() });
      else if (request.type === 'api-calls') send({ type: 'api-calls', calls: await apiCalls(), load_balancer_passes: await passes('LoadBalancer') });
      else if (request.type === 'reconciled') {
        const deadline = Date.now() + request.timeoutMs;
        let done = await passes(request.kind);
        while (done < request.count && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          done = await passes(request.kind);
        }
        send({ type: 'reconciled', ms_since_start: done >= request.count ? performance.now() - t0 : null, passes: done });
      } else {
        // 'stop', the one request left.
        const started = performance.now();
        await stop();
        send({ type: 'stopped', stop_ms: performance.now() - started });
        process.disconnect();
        process.exit(0);
      }
    })().catch((err: unknown) => {
      send({ type: 'failed', error: stackOf(err) });
    });
  });
}

main().catch((err: unknown) => {
  send({ type: 'failed', error: stackOf(err) });
  process.exit(1);
});
