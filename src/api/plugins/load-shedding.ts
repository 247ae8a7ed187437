/**
 * Load shedding with @fastify/under-pressure: while the event loop lags or the heap is
 * nearly full, /api/v1 answers 503 service_overloaded with Retry-After at once, before
 * authentication or any store work, instead of queueing requests it cannot serve in time.
 * Registered in the API's context only: /healthz, /readyz and /metrics keep answering.
 */
import { getHeapStatistics } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import underPressure from '@fastify/under-pressure';
import type { OverloadConfig } from '../../config';
import { ApiError } from '../../lib/errors';

export const overloaded = (retryAfterSeconds: number, reason: string) =>
  new ApiError(503, 'service_overloaded', `The service is overloaded (${reason}); retry in ${retryAfterSeconds} s.`, undefined, {
    'Retry-After': String(retryAfterSeconds),
  });

const REASONS: Record<string, string> = {
  eventLoopDelay: 'event loop delay',
  heapUsedBytes: 'memory in use',
};

/** How often the event-loop delay and the heap are sampled. */
const SAMPLE_INTERVAL_MS = 1000;

export async function shedLoad(api: FastifyInstance, config: OverloadConfig): Promise<void> {
  const maxHeapUsedBytes = Math.floor((getHeapStatistics().heap_size_limit * config.maxHeapUsedPercent) / 100);
  if (config.maxEventLoopDelayMs === 0 && maxHeapUsedBytes === 0) return;
  // The first sample after start-up measures the start-up itself (compiling every route's
  // schemas blocks the loop for a while), not load: shed only from the sample after it.
  let armedAt = Infinity;
  api.addHook('onReady', async () => {
    armedAt = Date.now() + 2 * SAMPLE_INTERVAL_MS;
  });
  await api.register(underPressure, {
    sampleInterval: SAMPLE_INTERVAL_MS,
    maxEventLoopDelay: config.maxEventLoopDelayMs,
    maxHeapUsedBytes,
    // Nothing returned lets the request through; a rejected promise goes to the error
    // handler, so the 503 is in the envelope.
    pressureHandler: (request, _reply, type) => {
      if (Date.now() < armedAt) return undefined;
      request.log.debug({ type }, 'shedding load');
      return Promise.reject(overloaded(config.retryAfterSeconds, REASONS[type] ?? type));
    },
  });
}
