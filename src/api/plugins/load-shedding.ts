/**
 * Load shedding: while the event loop lags or the heap is nearly full, /api/v1 answers 503
 * service_overloaded with Retry-After at once, before authentication or any store work,
 * instead of queueing requests it cannot serve in time. Registered in the API's context
 * only: /healthz, /readyz and /metrics keep answering.
 *
 * The pressure is sampled here rather than by @fastify/under-pressure, which read
 * process.memoryUsage() (a read of /proc, so a file descriptor) and re-armed its timer
 * only after that read: when the process ran out of descriptors the read threw EMFILE,
 * the sampler stopped for good with its last readings, and a service that had recovered
 * went on shedding every request (test/integration/descriptors.test.ts). Here every
 * sample needs no descriptor (the event-loop delay histogram and V8's heap statistics)
 * and the next one is armed whatever the last one did.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import type { OverloadConfig } from '../../config';
import { ApiError } from '../../lib/errors';

export const overloaded = (retryAfterSeconds: number, reason: string) =>
  new ApiError(503, 'service_overloaded', `The service is overloaded (${reason}); retry in ${retryAfterSeconds} s.`, undefined, {
    'Retry-After': String(retryAfterSeconds),
  });

/** How often the event-loop delay and the heap are sampled. */
const SAMPLE_INTERVAL_MS = 1000;
/** The delay histogram's resolution, taken off its mean: an idle loop reads about this much. */
const RESOLUTION_MS = 10;

/** The last sample's verdict: why the service is overloaded, or null. */
class PressureGauge {
  reason: string | null = null;
  private readonly delays = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly maxEventLoopDelayMs: number,
    private readonly maxHeapUsedBytes: number,
  ) {}

  start(): void {
    this.delays.enable();
    this.arm();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.delays.disable();
  }

  private arm(): void {
    this.timer = setTimeout(() => {
      try {
        this.sample();
      } finally {
        if (this.timer) this.arm();
      }
    }, SAMPLE_INTERVAL_MS);
    this.timer.unref();
  }

  private sample(): void {
    // No delay sampled in a whole interval: the loop was blocked throughout.
    const delayMs = Number.isNaN(this.delays.mean) ? Infinity : Math.max(0, this.delays.mean / 1e6 - RESOLUTION_MS);
    this.delays.reset();
    if (this.maxEventLoopDelayMs > 0 && delayMs > this.maxEventLoopDelayMs) this.reason = 'event loop delay';
    else if (this.maxHeapUsedBytes > 0 && getHeapStatistics().used_heap_size > this.maxHeapUsedBytes) this.reason = 'memory in use';
    else this.reason = null;
  }
}

export function shedLoad(api: FastifyInstance, config: OverloadConfig): void {
  const maxHeapUsedBytes = Math.floor((getHeapStatistics().heap_size_limit * config.maxHeapUsedPercent) / 100);
  if (config.maxEventLoopDelayMs === 0 && maxHeapUsedBytes === 0) return;
  const gauge = new PressureGauge(config.maxEventLoopDelayMs, maxHeapUsedBytes);
  // The first sample after start-up measures the start-up itself (compiling every route's
  // schemas blocks the loop for a while), not load: shed only from the sample after it.
  let armedAt = Infinity;
  api.addHook('onReady', () => {
    gauge.start();
    armedAt = Date.now() + 2 * SAMPLE_INTERVAL_MS;
  });
  api.addHook('onClose', () => {
    gauge.stop();
  });
  // Passed on as an error, so the 503 goes through the error handler and is in the envelope.
  api.addHook('onRequest', (request, _reply, done) => {
    if (gauge.reason === null || Date.now() < armedAt) {
      done();
      return;
    }
    request.log.debug({ reason: gauge.reason }, 'shedding load');
    done(overloaded(config.retryAfterSeconds, gauge.reason));
  });
}
