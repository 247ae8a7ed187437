/**
 * The agent's reads of the newest events (src/audit/audit-log.ts, newest): newest first,
 * only those wanted, and from no more events than the bound allows, so that a question
 * about a busy team never reads its whole history. Events go through a real embedded bus,
 * which the log follows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuditLog } from '../../src/audit/audit-log';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import type { CloudEvent } from '../../src/resources/cloud-event';
import { eventually } from '../helpers/service';

const START = Date.parse('2026-11-30T10:00:00.000Z');

const eventOf = (n: number, type: string): CloudEvent => ({
  id: `evt_${String(n).padStart(20, '0')}`,
  type,
  created_at: new Date(START + n * 1_000).toISOString(),
  team_id: 'team_a',
  actor: 'system',
  data: { id: `res_${n}` },
});

describe('AuditLog newest', () => {
  let dir: string;
  let bus: EmbeddedEventBus;
  let audit: AuditLog;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-audit-newest-'));
    bus = new EmbeddedEventBus(dir);
    await bus.start();
    audit = new AuditLog(bus, 10 * 365 * 24 * 3_600_000);
    audit.start();
    // Five load balancer events, then thirty of a conversation after them.
    for (let n = 0; n < 5; n++) await bus.publish(eventOf(n, 'load_balancer.created'));
    for (let n = 5; n < 35; n++) await bus.publish(eventOf(n, 'message.created'));
    await eventually(async () => audit.search('team_a', {}).length === 35);
  });
  afterAll(async () => {
    audit.stop();
    await bus.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const notConversation = (event: CloudEvent) => !event.type.startsWith('message.');
  const ids = (events: CloudEvent[]) => events.map((event) => event.id);

  it('answers the newest wanted events, newest first, up to the count', () => {
    expect(ids(audit.newest('team_a', {}, 3, notConversation, 1_000))).toEqual([4, 3, 2].map((n) => eventOf(n, '').id));
    expect(ids(audit.newest('team_a', { type: 'load_balancer.*' }, 10, () => true, 10))).toEqual([4, 3, 2, 1, 0].map((n) => eventOf(n, '').id));
    expect(audit.newest('team_a', { since: new Date(START + 3_000).toISOString() }, 10, notConversation, 1_000).map((e) => e.data.id)).toEqual([
      'res_4',
      'res_3',
    ]);
  });

  it('looks at no more events than the bound', () => {
    // The thirty newest are the conversation's: a bound of twenty finds none of the others.
    expect(audit.newest('team_a', {}, 10, notConversation, 20)).toEqual([]);
    expect(ids(audit.newest('team_a', {}, 10, notConversation, 31))).toEqual([eventOf(4, '').id]);
  });
});
