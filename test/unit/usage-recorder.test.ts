/**
 * The usage recorder (src/usage/interval-recorder.ts) on the embedded bus and store: a
 * burst of metered events is written per meter record, not per resource; a resource metered
 * before meter records goes on in its own record; and the report reads both.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { EmbeddedStore } from '../../src/store/embedded';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import { IntervalRecorder, USAGE_BATCH_EVENTS, USAGE_CONSUMER } from '../../src/usage/interval-recorder';
import { intervalName, intervalsOfRecord, intervalToRecord, METER_PREFIX } from '../../src/usage/records';
import type { CloudEvent } from '../../src/resources/cloud-event';

const TEAM = 'team_usagerecorder0000000';
const CREATED = '2026-11-30T09:47:12.000Z';

let dir: string;
let store: EmbeddedStore;
let bus: EmbeddedEventBus;
let recorder: IntervalRecorder;
/** Writes of usage records, counted on their way to the real store. */
let recordWrites = 0;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-usage-recorder-'));
  store = new EmbeddedStore({ dataDir: path.join(dir, 'store') });
  await store.start();
  bus = new EmbeddedEventBus(path.join(dir, 'bus'));
  await bus.start();
  recordWrites = 0;
  const { records } = store;
  for (const write of ['add', 'swap', 'put'] as const) {
    const real = records[write].bind(records);
    Object.assign(records, {
      [write]: (...args: Parameters<typeof real>) => {
        recordWrites++;
        return (real as (...a: unknown[]) => unknown)(...args);
      },
    });
  }
  recorder = new IntervalRecorder(bus, store, pino({ level: 'silent' }));
});
afterEach(async () => {
  await recorder.stop();
  await bus.stop();
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const running = (id: string, at: string): CloudEvent => ({
  id: `evt_${id}_running`,
  type: 'load_balancer.running',
  created_at: at,
  team_id: TEAM,
  actor: 'system',
  data: { id, status: 'running', created_at: CREATED },
});

async function settled(): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (((await bus.pending())[USAGE_CONSUMER] ?? 0) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the usage consumer did not finish');
}

const intervals = async () => (await store.records.list('usage-')).flatMap((r) => intervalsOfRecord(r.name, r.data));

it('writes a burst of 200 resources in a handful of record writes, every interval kept', async () => {
  await recorder.start();
  const ids = Array.from({ length: 200 }, (_, i) => `lb_burst${String(i).padStart(4, '0')}`);
  await Promise.all(ids.map((id) => bus.publish(running(id, '2026-11-30T09:47:13.000Z'))));
  await settled();

  const kept = await intervals();
  expect(kept.map((i) => i.resource_id).sort()).toEqual(ids);
  expect(kept.every((i) => i.segments.length === 1 && i.segments[0].to === null)).toBe(true);
  // One meter record: of the ten seconds the resources were created in.
  expect((await store.records.list(METER_PREFIX)).map((r) => r.name)).toEqual([`${METER_PREFIX}20261130-094710`]);
  expect(recordWrites).toBeLessThan(ids.length / 10);
});

it('writes a full batch at once rather than at the end of its window, so a burst is metered as fast as it is written', async () => {
  // A window of an hour: only a full batch can be written within the test.
  await recorder.stop();
  recorder = new IntervalRecorder(bus, store, pino({ level: 'silent' }), 3_600_000);
  await recorder.start();
  const ids = Array.from({ length: 2 * USAGE_BATCH_EVENTS + 100 }, (_, i) => `lb_full${String(i).padStart(5, '0')}`);
  for (const id of ids) await bus.publish(running(id, '2026-11-30T09:47:13.000Z'));
  for (let i = 0; i < 500 && (await intervals()).length < 2 * USAGE_BATCH_EVENTS; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  // Two full batches written, in order; the last 100 wait for their window.
  const kept = (await intervals()).map((i) => i.resource_id).sort();
  expect(kept).toEqual(ids.slice(0, 2 * USAGE_BATCH_EVENTS));
  expect((await bus.pending())[USAGE_CONSUMER]).toBe(100);
});

it("goes on writing a resource's own record when it has one from before meter records", async () => {
  const id = 'lb_legacy0000000000000001';
  await store.records.add(TEAM, intervalName(id), intervalToRecord({ family: 'load_balancer', resource_id: id, segments: [], ended: false }));
  await recorder.start();
  await bus.publish(running(id, '2026-11-30T09:48:00.000Z'));
  await bus.publish({
    ...running(id, '2026-11-30T10:48:00.000Z'),
    id: 'evt_legacy_deleted',
    type: 'load_balancer.deleted',
    data: { id, status: 'deleted', created_at: CREATED },
  });
  await settled();

  expect(await store.records.list(METER_PREFIX)).toEqual([]);
  expect(await intervals()).toEqual([
    {
      family: 'load_balancer',
      resource_id: id,
      segments: [{ plan: 'standard', from: '2026-11-30T09:48:00.000Z', to: '2026-11-30T10:48:00.000Z' }],
      ended: true,
    },
  ]);
});
