/**
 * Bounded growth, end to end: over 100,000 events (`make soak`; 20,000 in `make test`, the
 * same run scaled down, with as many samples) go through the real service, every one
 * caused by an API call, with retentions of a few seconds:
 * - webhook subscriptions created and deleted (webhook.created, webhook.deleted; a
 *   deleted subscription is removed once the delivery retention has passed), one in ten
 *   of whose deletions is delivered by a tap subscription to a real receiver;
 * - beside them, buckets created and deleted (created, available or not, deleted,
 *   destroyed, then removed), so provider-backed records come and go too.
 * The data directory's size, the store's record count and the event log level off
 * instead of growing with the traffic, and nothing younger than the retentions is lost:
 * the audit log still finds the recent subscriptions' events, and the delivery history
 * still lists the recent deliveries.
 */
import { startTestService, TestService, eventually, request } from '../helpers/service';
import { startReceiver, Receiver } from '../helpers/receiver';
import { directorySize } from '../helpers/directory-size';
import { families } from '../../src/resources/registry';
import { deliveryFamily } from '../../src/resources/webhook';

jest.setTimeout(30 * 60_000);

const SOAK = process.env.CLOUDPLANE_SOAK === '1';
const RETENTION_S = 10;
const SUBSCRIPTION_CYCLES = SOAK ? 50_000 : 10_000; // two events each
const CONCURRENCY = 8;
/** Ten samples either way; the first three are the "early" ones the later are held to. */
const SAMPLE_EVERY_CYCLES = SUBSCRIPTION_CYCLES / 10;
const EARLY_CYCLES = 3 * SAMPLE_EVERY_CYCLES;
/** Scaled with the run, so the store's log goes through several compactions either way. */
const COMPACT_BYTES = (SOAK ? 4 : 1) * 1024 * 1024;
/** The retention, and as long again for the sweeps that remove what outlived it. */
const RETENTION_WINDOW_MS = 2 * RETENTION_S * 1000;

const days = (seconds: number) => String(seconds / 86_400);

interface Sample {
  cycles: number;
  bytes: number;
  records: number;
  eventLog: number;
  /** Subscription cycles finished in the RETENTION_WINDOW_MS before the sample: what retention should keep. */
  recentCycles: number;
}

let t: TestService;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  t = await startTestService({
    CLOUDPLANE_SIM_DELAY_MS: '0',
    CLOUDPLANE_EVENT_RETENTION_DAYS: days(RETENTION_S),
    CLOUDPLANE_WEBHOOK_DELIVERY_RETENTION_DAYS: days(RETENTION_S),
    // Each bucket that became available leaves a usage interval, kept this long after its deletion.
    CLOUDPLANE_USAGE_RETENTION_DAYS: days(RETENTION_S),
    CLOUDPLANE_DELETED_RETENTION_SECONDS: '0',
    // Compacted at a few MiB instead of 64 MiB, so the store's log is seen to level off too.
    CLOUDPLANE_STORE_COMPACT_BYTES: String(COMPACT_BYTES),
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000000',
    CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
    CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  });
});

afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

/** Every object the store holds, of every kind the service keeps (deliveries included). */
async function storeRecords(): Promise<number> {
  const kinds = [...families.map((f) => f.kind), deliveryFamily.kind];
  let total = 0;
  for (const kind of new Set(kinds)) total += (await t.service.ctx.store.list(kind)).length;
  return total;
}

async function metricLines(prefix: string): Promise<number[]> {
  const text = (await request(t.url, 'GET', '/metrics')).body as string;
  return text
    .split('\n')
    .filter((l) => l.startsWith(prefix))
    .map((l) => Number(l.split(' ').pop()));
}

async function eventLogEvents(): Promise<number> {
  const [events] = await metricLines('cloudplane_event_log_events ');
  if (events === undefined) throw new Error('cloudplane_event_log_events is missing from /metrics');
  return events;
}

/** Events put on the bus, of every type. */
async function eventsPublished(): Promise<number> {
  return (await metricLines('cloudplane_events_published_total{')).reduce((a, b) => a + b, 0);
}

it(`levels off under ${2 * SUBSCRIPTION_CYCLES} events with short retentions and loses nothing unexpired`, async () => {
  const tapUrl = `${receiver.url}/tap`;
  const tap = await t.api('POST', '/api/v1/webhooks', {
    url: receiver.url,
    events: ['webhook.deleted'],
    filter: { 'webhook.url': tapUrl },
    rate_limit_per_minute: 10_000,
  });
  expect(tap.status).toBe(201);

  const samples: Sample[] = [];
  const deletedAt = new Map<string, number>();
  let next = 0;
  let done = 0;
  let loadOver = false;
  const subscriptionCycles = async () => {
    while (next < SUBSCRIPTION_CYCLES) {
      const n = next++;
      const url = n % 10 === 0 ? tapUrl : `${receiver.url}/other`;
      const created = await t.api('POST', '/api/v1/webhooks', { url, events: ['server.destroyed'] });
      expect(created.status).toBe(201);
      const id = created.body.data.id as string;
      expect((await t.api('DELETE', `/api/v1/webhooks/${id}`)).status).toBe(200);
      deletedAt.set(id, Date.now());
      if (++done % SAMPLE_EVERY_CYCLES === 0) {
        const since = Date.now() - RETENTION_WINDOW_MS;
        const recentCycles = [...deletedAt.values()].filter((at) => at >= since).length;
        samples.push({ cycles: done, bytes: directorySize(t.dataDir), records: await storeRecords(), eventLog: await eventLogEvents(), recentCycles });
      }
    }
  };
  let buckets = 0;
  const bucketCycles = async () => {
    while (!loadOver) {
      const created = await t.api('POST', '/api/v1/object-storage', { name: `bucket-${buckets++}`, region: 'fra1' });
      expect(created.status).toBe(201);
      expect((await t.api('DELETE', `/api/v1/object-storage/${created.body.data.id}`)).status).toBe(200);
    }
  };
  const sideLoad = bucketCycles();
  await Promise.all(Array.from({ length: CONCURRENCY }, subscriptionCycles));
  loadOver = true;
  await sideLoad;

  const published = await eventsPublished();
  console.log(
    `${published} events (${SUBSCRIPTION_CYCLES} subscription and ${buckets} bucket cycles); samples (cycles: data directory, store records, event log):\n` +
      samples
        .map(
          (s) =>
            `  ${s.cycles}: ${(s.bytes / 1e6).toFixed(1)} MB, ${s.records} records, ${s.eventLog} events, ${s.recentCycles} cycles in the last ${RETENTION_WINDOW_MS / 1000} s`,
        )
        .join('\n'),
  );
  expect(published).toBeGreaterThanOrEqual(2 * SUBSCRIPTION_CYCLES);

  // Level off: after the early samples (3 of 10) no sample is more than twice the largest of
  // them (the data directory with two compaction thresholds more, as it saws up and down
  // with each compaction), where growth with the traffic would have reached 3.3 times the
  // third sample by the tenth (over 40 MB of data directory in the soak run). Records
  // and events are counted per cycle of the last retention window: what retention keeps
  // follows the rate, which a busy machine changes from one sample to the next.
  const early = samples.filter((s) => s.cycles <= EARLY_CYCLES);
  const later = samples.filter((s) => s.cycles > EARLY_CYCLES);
  expect(early.length).toBe(3);
  expect(later.length).toBe(7);
  const perRecentCycle = (sample: Sample, field: 'records' | 'eventLog') => sample[field] / Math.max(1, sample.recentCycles);
  const ceiling = (measure: (sample: Sample) => number) => 2 * Math.max(...early.map(measure));
  for (const sample of later) {
    // The store's log saws up to its compaction threshold and back, and on a busy machine
    // a sample can land while a compaction is still writing the next snapshot beside the
    // log it replaces (9.1 MB against a ceiling of 8.4 MB in one CI run, 5.2 MB at the
    // end): two thresholds of slack, still far below the 40 MB that growth would reach.
    expect(sample.bytes).toBeLessThanOrEqual(ceiling((s) => s.bytes) + 2 * COMPACT_BYTES);
    expect(perRecentCycle(sample, 'records')).toBeLessThanOrEqual(ceiling((s) => perRecentCycle(s, 'records')));
    expect(perRecentCycle(sample, 'eventLog')).toBeLessThanOrEqual(ceiling((s) => perRecentCycle(s, 'eventLog')));
  }
  // The event log holds a window of the stream, not the stream: the two events of every
  // subscription cycle finished before the last window (twice the retention) are gone. Counted
  // in cycles, not as a share of the stream: a machine that runs the load faster keeps a
  // larger share of it inside the window.
  const last = samples[samples.length - 1];
  expect(last.eventLog).toBeLessThanOrEqual(published - 2 * (last.cycles - last.recentCycles));

  // Nothing unexpired is lost. The subscriptions deleted in the last three seconds (well
  // inside the ten-second retention) still have both their events in the audit log...
  const finishedAt = Date.now();
  const recent = [...deletedAt].filter(([, at]) => at >= finishedAt - 3_000).map(([id]) => id);
  expect(recent.length).toBeGreaterThan(0);
  for (const id of recent.slice(-50)) {
    const res = await t.api('GET', `/api/v1/audit-log?resource_id=${id}&limit=10`);
    expect((res.body.data as Array<{ type: string }>).map((e) => e.type).sort()).toEqual(['webhook.created', 'webhook.deleted']);
  }
  // ...every tapped deletion was delivered (no event expired before its consumer read it)...
  const tapped = Math.ceil(SUBSCRIPTION_CYCLES / 10);
  await eventually(async () => receiver.received.length >= tapped, 60_000, 200);
  const deliveryIds = new Set(receiver.received.map((r) => r.headers['x-service-delivery'] as string));
  expect(deliveryIds.size).toBe(tapped);
  // ...and the deliveries that arrived in the last three seconds are still in the history,
  // while the older ones went: the history is a window too.
  const recentDeliveries = receiver.received.filter((r) => r.at >= Date.now() - 3_000).map((r) => r.headers['x-service-delivery'] as string);
  expect(recentDeliveries.length).toBeGreaterThan(0);
  for (const deliveryId of recentDeliveries) {
    expect((await t.api('GET', `/api/v1/webhooks/${tap.body.data.id}/deliveries/${deliveryId}`)).status).toBe(200);
  }
  expect((await t.service.ctx.store.list(deliveryFamily.kind)).length).toBeLessThan(tapped / 2);
});
