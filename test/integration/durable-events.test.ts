/**
 * Durable events in cluster mode without NATS, the chart's default install: the operator
 * (`node dist/src/main.js`, CLOUDPLANE_STORE=kubernetes against a real kube-apiserver) is
 * SIGKILLed while buckets are being created, as a deleted or OOM-killed pod is, and a new
 * operator process (another pod name, so it waits out the dead one's Lease) starts on the
 * same data directory, the role of the chart's PersistentVolumeClaim.
 *
 * Afterwards the audit log holds every event it showed before the kill, unchanged, and a
 * `bucket.created` event for every bucket that exists; every acknowledged create has
 * reached a real webhook receiver, those whose events the dead process had published to
 * its bus but not yet turned into deliveries included. Last, an operator on a fresh data
 * directory (an emptyDir) against the same kube-apiserver has none of that history: the
 * data directory is what keeps it, so the chart must keep the directory.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startChildService, ChildService, createBucketStream } from '../helpers/child-service';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { kubectlBinary, startKubeApiServer, KubeApiServer } from '../helpers/kube-apiserver';
import { startReceiver, Receiver } from '../helpers/receiver';
import { pageAll } from '../helpers/paging';
import { eventually, tempDataDir } from '../helpers/service';

jest.setTimeout(240_000);

const KEY = 'cpk_DurableEvents0123456789abcdefghijABCDEFGH';
const WRITERS = 3;
/** How long creates run before the kill and after the restart. */
const STREAM_MS = 3_000;
const ARRIVAL_TIMEOUT_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface AuditEvent {
  id: string;
  type: string;
  created_at: string;
  data: { id?: string };
}

const auditLog = (svc: ChildService) => pageAll<AuditEvent>(svc.api, '/api/v1/audit-log?order=asc');

/** The ids of the events in the embedded bus's log on disk (a torn last line, which the bus cuts off, aside). */
function publishedOnDisk(dataDir: string): string[] {
  const lines = fs.readFileSync(path.join(dataDir, 'events', 'events.log'), 'utf8').split('\n');
  return lines.flatMap((line) => {
    try {
      const record = JSON.parse(line);
      return record.header ? [] : [record.id as string];
    } catch {
      return [];
    }
  });
}

/** How many published events the webhook consumer had not yet saved as handled. */
function unconsumedOnDisk(dataDir: string): number {
  const positions = path.join(dataDir, 'events', 'events.consumers.json');
  const position = fs.existsSync(positions) ? (JSON.parse(fs.readFileSync(positions, 'utf8')).webhooks ?? 0) : 0;
  return publishedOnDisk(dataDir).length - position;
}

describe('durable events: cluster mode without NATS, the operator SIGKILLed mid-stream and restarted on its data directory', () => {
  let kube: KubeApiServer;
  let receiver: Receiver;
  const running: ChildService[] = [];
  const dirs: string[] = [];
  let pod = 0;

  const start = (dataDir: string) =>
    startChildService({
      dataDir,
      key: KEY,
      startTimeoutMs: 60_000,
      env: {
        ...storeEnvFor(kube),
        // A new pod of the Deployment: another identity, which waits until the dead one's Lease runs out.
        POD_NAME: `cloudplane-${++pod}`,
        CLOUDPLANE_LEASE_DURATION_SECONDS: '3',
        CLOUDPLANE_SIM_DELAY_MS: '50',
        // The relay empties each outbox as soon as it published it: the fresh data directory
        // below then holds only what its own bus received, not outboxes published again.
        CLOUDPLANE_OUTBOX_DRAIN_SECONDS: '0',
        CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000',
        CLOUDPLANE_QUOTAS: 'bucket=1000000',
        CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
        CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.001',
      },
    }).then((svc) => {
      running.push(svc);
      return svc;
    });
  const dataDir = () => {
    const dir = tempDataDir();
    dirs.push(dir);
    return dir;
  };

  beforeAll(async () => {
    kube = await startKubeApiServer();
    await installCrds(kube);
    receiver = await startReceiver();
  }, 10 * 60_000);
  afterAll(async () => {
    for (const svc of running) await svc.kill();
    await receiver?.close();
    await kube?.stop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds every event in the audit log afterwards and delivers every webhook; a fresh data directory would have lost them', async () => {
    const kept = dataDir();
    let svc = await start(kept);
    const subscribed = await svc.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['bucket.created'], rate_limit_per_minute: 10_000 });
    expect(subscribed.status).toBe(201);

    const stream = createBucketStream(() => svc, WRITERS, 'durable');
    await sleep(STREAM_MS);
    // The history as the audit log showed it a moment before the kill, creates still coming.
    const before = await auditLog(svc);
    await svc.kill();
    // Everything the dead process had published, as it left it on disk.
    const publishedAtKill = publishedOnDisk(kept);
    const unconsumedAtKill = unconsumedOnDisk(kept);
    const acknowledgedAtKill = stream.acknowledged.size;
    svc = await start(kept);
    await sleep(STREAM_MS);
    await stream.stop();
    expect(stream.unexpected).toEqual([]);
    // The kill came mid-stream: there was history before it and creates after it.
    expect(before.filter((e) => e.type === 'bucket.created').length).toBeGreaterThan(0);
    expect(stream.acknowledged.size).toBeGreaterThan(acknowledgedAtKill);

    // Every bucket that exists (acknowledged or not) has its creation event, once. (A create
    // the kill cut in two shows up later, once adoption's grace has passed, with its event.)
    let buckets: Array<{ id: string }> = [];
    const after = await eventually(
      async () => {
        buckets = await pageAll<{ id: string }>(svc.api, '/api/v1/object-storage');
        const events = await auditLog(svc);
        const created = new Set(events.filter((e) => e.type === 'bucket.created').map((e) => e.data.id));
        return buckets.every((b) => created.has(b.id)) ? events : null;
      },
      ARRIVAL_TIMEOUT_MS,
      500,
    ).catch(async () => {
      const created = new Set((await auditLog(svc)).filter((e) => e.type === 'bucket.created').map((e) => e.data.id));
      const missing = buckets.filter((b) => !created.has(b.id)).map((b) => b.id);
      throw new Error(
        `${missing.length} of ${buckets.length} buckets have no bucket.created event in the audit log, e.g. ${missing.slice(0, 5).join(', ')}\n${svc.output()}`,
      );
    });
    expect(buckets.map((b) => b.id)).toEqual(expect.arrayContaining([...stream.acknowledged]));
    const createdEvents = after.filter((e) => e.type === 'bucket.created');
    expect(createdEvents.length).toBe(new Set(createdEvents.map((e) => e.data.id)).size);
    expect(after.length).toBe(new Set(after.map((e) => e.id)).size);
    // The history from before the kill is all there, unchanged.
    const afterById = new Map(after.map((e) => [e.id, e]));
    const lost = before.filter((e) => JSON.stringify(afterById.get(e.id)) !== JSON.stringify(e)).map((e) => `${e.type} ${e.data.id}`);
    expect({ lost: lost.slice(0, 10), count: lost.length }).toEqual({ lost: [], count: 0 });
    // So is every event the dead process had published, up to the kill.
    expect(publishedAtKill.filter((id) => !afterById.has(id))).toEqual([]);

    // Every acknowledged create reached the receiver, those published but not yet handed to webhooks at the kill included.
    const arrived = () => new Set(receiver.received.map((r) => JSON.parse(r.body).data.id as string));
    await eventually(async () => [...stream.acknowledged].every((id) => arrived().has(id)), ARRIVAL_TIMEOUT_MS, 500).catch(async () => {
      const missing = [...stream.acknowledged].filter((id) => !arrived().has(id));
      // What became of them: their events, and any delivery of those events.
      const events = after.filter((e) => missing.includes(e.data.id!) && e.type === 'bucket.created');
      const deliveries = (await pageAll<{ event_id: string }>(svc.api, `/api/v1/webhooks/${subscribed.body.data.id}/deliveries`)).filter((d) =>
        events.some((e) => e.id === d.event_id),
      );
      throw new Error(
        `${missing.length} of ${stream.acknowledged.size} acknowledged creates never reached the receiver, e.g. ${missing.slice(0, 5).join(', ')}\nevents: ${JSON.stringify(events.map((e) => ({ id: e.id, at: e.created_at, onDiskAtKill: publishedAtKill.includes(e.id) })))}\ndeliveries: ${JSON.stringify(deliveries)}\nunconsumed at kill: ${unconsumedAtKill}\n${svc.output()}`,
      );
    });
    process.stdout.write(
      `[durable-events] ${JSON.stringify({ acknowledged: stream.acknowledged.size, buckets: buckets.length, auditBeforeKill: before.length, publishedAtKill: publishedAtKill.length, auditAfter: after.length, unconsumedAtKill, receipts: receiver.received.length })}\n`,
    );
    expect(await svc.stop()).toBe(0);

    // The control: the same cluster, an operator on a fresh data directory (an emptyDir).
    // The resources are all there, the history is not: the data directory is what keeps it.
    const fresh = await start(dataDir());
    const freshBuckets = await pageAll<{ id: string }>(fresh.api, '/api/v1/object-storage');
    expect(freshBuckets.map((b) => b.id)).toEqual(expect.arrayContaining(buckets.map((b) => b.id)));
    const freshIds = new Set((await auditLog(fresh)).map((e) => e.id));
    expect(before.filter((e) => freshIds.has(e.id))).toEqual([]);
    expect(await fresh.stop()).toBe(0);
  });

  it('sends a delivery whose create a kill cut in two (its custom resource made, its status not) once the event is handed over again', async () => {
    // Found by the test above when a create was two writes: a kill between them left such a
    // delivery status-less for ever; the event handed over again found it "already made".
    const kubectl = (args: string[], input?: string) =>
      execFileSync(kubectlBinary(), ['--kubeconfig', kube.kubeconfigPath, ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
    // Alone on the cluster: whatever the case above left running stops (and gives up the Lease).
    for (const earlier of running.splice(0)) await earlier.stop();
    const dir = dataDir();
    let svc = await start(dir);
    const own = await startReceiver();
    try {
      // This bucket's events only (an unacknowledged create of the stream above may still be adopted meanwhile).
      const webhook = await svc.api('POST', '/api/v1/webhooks', { url: own.url, events: ['bucket.created'], filter: { 'bucket.name': 'cut-in-two' } });
      expect(webhook.status).toBe(201);
      const bucket = await svc.api('POST', '/api/v1/object-storage', { name: 'cut-in-two', region: 'fra1' });
      expect(bucket.status).toBe(201);
      // Sent, and its outcome recorded.
      const delivery = await eventually(
        async () => {
          const [only] = await pageAll<{ id: string; status: string }>(svc.api, `/api/v1/webhooks/${webhook.body.data.id}/deliveries`);
          return only?.status === 'succeeded' ? only : null;
        },
        ARRIVAL_TIMEOUT_MS,
        200,
      );
      expect(own.received).toHaveLength(1);
      expect(await svc.stop()).toBe(0);

      // The state such a kill left under an earlier version, whose create was two writes (a
      // rolling upgrade can still meet one): the delivery's custom resource as the create's
      // first write made it (marked status-pending, no status; this version's create is one
      // write, its first status sealed in annotations), and the webhook consumer's saved
      // position short of the event (positions are saved in batches).
      const [cr] = JSON.parse(kubectl(['get', 'webhookdeliveries', '-A', '-l', `cloudplane.dev/id=${delivery.id}`, '-o', 'json'])).items;
      const where = ['-n', cr.metadata.namespace, `webhookdeliveries/${cr.metadata.name}`];
      kubectl(['patch', ...where, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      kubectl(['delete', ...where, '--wait']);
      const { name, namespace, finalizers } = cr.metadata;
      const { 'cloudplane.dev/first-status': _first, 'cloudplane.dev/first-status-seal': _seal, ...annotations } = cr.metadata.annotations;
      const labels = { ...cr.metadata.labels, 'cloudplane.dev/status-pending': 'true' };
      kubectl(
        ['create', '-f', '-'],
        JSON.stringify({ apiVersion: cr.apiVersion, kind: cr.kind, metadata: { name, namespace, labels, annotations, finalizers }, spec: cr.spec }),
      );
      const positions = path.join(dir, 'events', 'events.consumers.json');
      fs.writeFileSync(positions, JSON.stringify({ ...JSON.parse(fs.readFileSync(positions, 'utf8')), webhooks: 0 }));

      svc = await start(dir);
      await eventually(async () => own.received.length === 2, ARRIVAL_TIMEOUT_MS, 200).catch(() => {
        const receipts = own.received.map((r) => ({ id: r.headers['webhook-id'], event: JSON.parse(r.body).id, bucket: JSON.parse(r.body).data.name }));
        throw new Error(`the delivery cut in two was not sent once more: ${JSON.stringify(receipts)}\n${svc.output()}`);
      });
      expect(own.received.map((r) => r.headers['webhook-id'])).toEqual([delivery.id, delivery.id]);
      expect(own.received[1].body).toBe(own.received[0].body);
      const again = await eventually(
        async () => {
          const res = await svc.api('GET', `/api/v1/webhooks/${webhook.body.data.id}/deliveries/${delivery.id}`);
          return res.body.data?.status === 'succeeded' ? res.body.data : null;
        },
        ARRIVAL_TIMEOUT_MS,
        200,
      );
      expect(again.id).toBe(delivery.id);
    } finally {
      await own.close();
      await svc.stop();
    }
  });
});
