/**
 * The audit log forgets events older than its retention (src/audit/audit-log.ts, trim):
 * from every index, so that no filter finds them, while newer events stay searchable by
 * every filter. Events go through a real embedded bus, which the log follows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuditLog } from '../../src/audit/audit-log';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import type { CloudEvent } from '../../src/resources/cloud-event';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const eventOf = (n: number, createdAt: string, resource: string): CloudEvent => ({
  id: `evt_${String(n).padStart(20, '0')}`,
  type: n % 2 === 0 ? 'load_balancer.created' : 'bucket.deleted',
  created_at: createdAt,
  team_id: 'team_a',
  actor: n % 3 === 0 ? 'key_1' : 'system',
  data: { id: resource, note: `word${n}` },
});

describe('AuditLog retention', () => {
  let dir: string;
  let bus: EmbeddedEventBus;
  let audit: AuditLog;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-audit-'));
    bus = new EmbeddedEventBus(dir);
    await bus.start();
    // A 2 s retention: trimmed every 200 ms.
    audit = new AuditLog(bus, 2_000);
    audit.start();
  });
  afterEach(async () => {
    audit.stop();
    await bus.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('drops expired events from every index and keeps the rest searchable', async () => {
    const old = new Date(Date.now() - 60_000).toISOString();
    // Created later than the test lasts, so that these never expire during it.
    const fresh = new Date(Date.now() + 600_000).toISOString();
    const expired = Array.from({ length: 300 }, (_, n) => eventOf(n, old, `lb_old${n % 7}`));
    const kept = Array.from({ length: 30 }, (_, n) => eventOf(1_000 + n, fresh, n % 2 ? 'lb_old1' : 'lb_new'));
    for (const e of [...expired, ...kept]) await bus.publish(e);
    const ids = (events: CloudEvent[]) => events.map((e) => e.id);

    for (const deadline = Date.now() + 10_000; audit.search('team_a', {}).length > kept.length; await sleep(50)) {
      if (Date.now() > deadline) throw new Error('the audit log never trimmed');
    }
    expect(ids(audit.search('team_a', {}))).toEqual(ids(kept));
    expect(audit.search('team_a', { resource_id: 'lb_old3' })).toEqual([]);
    expect(ids(audit.search('team_a', { resource_id: 'lb_old1' }))).toEqual(ids(kept.filter((e) => e.data.id === 'lb_old1')));
    expect(ids(audit.search('team_a', { type: 'bucket.*' }))).toEqual(ids(kept.filter((e) => e.type === 'bucket.deleted')));
    expect(ids(audit.search('team_a', { actor: 'key_1', q: 'WORD10' }))).toEqual(
      ids(kept.filter((e) => e.actor === 'key_1' && /word10/.test(String(e.data.note)))),
    );
    expect(audit.page('team_a', { type: 'load_balancer.created' }, { order: 'desc', limit: 2 })).toEqual({
      events: [kept[28], kept[26]],
      next: { created_at: kept[26].created_at, id: kept[26].id },
    });
  });
});
