/** Prometheus metrics of the process, served at /metrics. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const httpRequests = new Counter({
  name: 'cloudplane_http_requests_total',
  help: 'HTTP requests answered, by method, route and status code.',
  labelNames: ['method', 'route', 'status_code'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'cloudplane_http_request_duration_seconds',
  help: 'Time to answer an HTTP request.',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const reconcileCounter = new Counter({
  name: 'cloudplane_reconcile_total',
  help: 'Reconcile passes, by kind and result.',
  labelNames: ['kind', 'result'] as const,
  registers: [registry],
});

export const reconcileDuration = new Histogram({
  name: 'cloudplane_reconcile_duration_seconds',
  help: 'Time of one reconcile pass.',
  labelNames: ['kind'] as const,
  buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
  registers: [registry],
});

export const eventsPublished = new Counter({
  name: 'cloudplane_events_published_total',
  help: 'Events published to the event bus, by type.',
  labelNames: ['type'] as const,
  registers: [registry],
});

export const leaderGauge = new Gauge({
  name: 'cloudplane_leader',
  help: '1 while this replica holds the leader Lease and runs the reconcilers, else 0 (always 1 in embedded mode).',
  registers: [registry],
});

export const dataDirFailingWrites = new Gauge({
  name: 'cloudplane_data_dir_failing_writes',
  help: 'Embedded mode: kinds of write (store log, snapshot, event log, consumer positions) the data directory refuses now; above 0, persistence is stale and writes answer 503 until it recovers.',
  registers: [registry],
});

export const eventLogEvents = new Gauge({
  name: 'cloudplane_event_log_events',
  help: 'Embedded event bus: events kept (in memory and in events.log), those older than CLOUDPLANE_EVENT_RETENTION_DAYS dropped.',
  registers: [registry],
});

export const eventLogBytes = new Gauge({
  name: 'cloudplane_event_log_bytes',
  help: 'Embedded event bus: size of events.log.',
  registers: [registry],
});
