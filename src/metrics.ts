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

/** Where cloudplane_leader reads this replica's leadership from; set by the service. */
let leading: () => boolean = () => false;

/**
 * Read from the elector when scraped, not set once the leader's work has started: a
 * replica that holds the Lease is the leader while its reconcilers are still starting
 * (seconds on a loaded machine), and a gauge set only after that showed no leader at all
 * while the Lease named one.
 */
export const leaderGauge = new Gauge({
  name: 'cloudplane_leader',
  help: '1 while this replica holds the leader Lease (and so runs, or is starting, the reconcilers), else 0 (always 1 in embedded mode).',
  registers: [registry],
  collect() {
    this.set(leading() ? 1 : 0);
  },
});

export function reportLeadership(isLeader: () => boolean): void {
  leading = isLeader;
}

/** Where cloudplane_event_consumer_pending reads the bus's consumers from; set by the service. */
let consumersPending: () => Promise<Record<string, number>> = () => Promise.resolve({});

/**
 * How far each durable consumer of the bus (the webhook dispatcher, the agent, ...) is
 * behind: the events it has yet to finish. Read from the bus when scraped; a lag that
 * only grows is a consumer that cannot keep up or keeps failing.
 */
export const eventConsumerPending = new Gauge({
  name: 'cloudplane_event_consumer_pending',
  help: 'Events each durable consumer of the event bus in this replica has yet to finish (its lag), by consumer.',
  labelNames: ['consumer'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    // A bus that cannot answer now (NATS unreachable) leaves the series out rather than failing the scrape.
    const pending = await consumersPending().catch(() => ({}));
    for (const [consumer, events] of Object.entries(pending)) this.set({ consumer }, events);
  },
});

export function reportEventConsumers(pending: () => Promise<Record<string, number>>): void {
  consumersPending = pending;
}

export const webhookRecordsRemoved = new Counter({
  name: 'cloudplane_webhook_records_removed_total',
  help: 'Finished webhook deliveries and deleted subscriptions removed after the delivery retention, by kind.',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const webhookRetentionFailures = new Counter({
  name: 'cloudplane_webhook_retention_failures_total',
  help: 'Retention passes or removals that the store refused; the next pass tries again.',
  registers: [registry],
});

/** Where the webhook gauges below read the leader's dispatcher from; set by the dispatcher. */
let webhookAttempts: () => { inFlight: number; waiting: number } = () => ({ inFlight: 0, waiting: 0 });

/**
 * No team label (decision): one series per team would grow with the installation; the
 * process-wide counts are what the caps bound, and a team's deliveries are in its records.
 */
export const webhookAttemptsInFlight = new Gauge({
  name: 'cloudplane_webhook_attempts_in_flight',
  help: 'Webhook delivery attempts under way in this replica (its dispatcher, on the leader): at most CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT.',
  registers: [registry],
  collect() {
    this.set(webhookAttempts().inFlight);
  },
});

export const webhookAttemptsWaiting = new Gauge({
  name: 'cloudplane_webhook_attempts_waiting',
  help: "Webhook deliveries due and waiting for a free place under the in-flight caps or for their subscription's rate limit.",
  registers: [registry],
  collect() {
    this.set(webhookAttempts().waiting);
  },
});

export function reportWebhookAttempts(read: () => { inFlight: number; waiting: number }): void {
  webhookAttempts = read;
}

let openWatches: () => number = () => 0;

/** No team label, as for webhook attempts: the caps bound these counts, and a team's own are at most CLOUDPLANE_WATCHES_PER_TEAM. */
export const watchesOpen = new Gauge({
  name: 'cloudplane_watches_open',
  help: 'Watches (GET ...?watch=true) this replica holds open: at most CLOUDPLANE_WATCHES_MAX.',
  registers: [registry],
  collect() {
    this.set(openWatches());
  },
});

export function reportOpenWatches(read: () => number): void {
  openWatches = read;
}

export const watchesRefused = new Counter({
  name: 'cloudplane_watches_refused_total',
  help: 'Watches refused: reason team_limit (429 too_many_watches, CLOUDPLANE_WATCHES_PER_TEAM) or replica_limit (503, CLOUDPLANE_WATCHES_MAX).',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const dataDirFailingWrites = new Gauge({
  name: 'cloudplane_data_dir_failing_writes',
  help: 'Embedded mode: kinds of write (store log, snapshot, event log, consumer positions) the data directory refuses now; above 0, persistence is stale and writes answer 503 until it recovers.',
  registers: [registry],
});

export const eventLogEvents = new Gauge({
  name: 'cloudplane_event_log_events',
  help: 'Embedded event bus: events kept in events.log, those older than CLOUDPLANE_EVENT_RETENTION_DAYS dropped.',
  registers: [registry],
});

export const eventLogBytes = new Gauge({
  name: 'cloudplane_event_log_bytes',
  help: 'Embedded event bus: size of events.log.',
  registers: [registry],
});

export const s3NotificationsDropped = new Counter({
  name: 'cloudplane_s3_notifications_dropped_total',
  help: "Bucket notifications of the S3 endpoint that became no data.* event, by reason: unknown_bucket (no bucket of Cloudplane's has that backend name), not_a_data_change (a restore, a test message).",
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const kubeApiRequests = new Counter({
  name: 'cloudplane_kube_api_requests_total',
  help: 'Cluster mode: requests made to the Kubernetes API server (watches aside), by verb and resource (`plural.group/subresource`, the core group bare).',
  labelNames: ['verb', 'resource'] as const,
  registers: [registry],
});
