/**
 * The audit log's pages come from ordered indexes (src/audit/audit-log.ts). Property: for
 * any events, filter, order, page size and bound on the events a page may look at, a walk
 * of pages, with events arriving between the pages, returns every event that matched
 * before the walk began exactly once, never one twice, in order, and nothing that does not
 * match. Events are published to a real
 * embedded bus in a temporary data directory, which the log follows as in the service.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { AuditFilter, AuditLog, AuditPosition } from '../../src/audit/audit-log';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';
import type { CloudEvent } from '../../src/resources/cloud-event';
import { categoryOf } from '../../src/events/types';

const TYPES = ['load_balancer.created', 'load_balancer.running', 'bucket.created', 'bucket.deleted', 'server.running'];
const TEAMS = ['team_a', 'team_b'];
const ACTORS = ['system', 'key_1', 'key_2'];
const RESOURCES = ['lb_1', 'lb_2', 'bkt_1'];
// Few distinct times, so that many events share one and the id must break the tie.
const TIMES = ['2026-11-24T10:00:00.000Z', '2026-11-24T10:00:01.000Z', '2026-11-24T10:00:02.000Z', '2026-11-24T10:00:03.000Z'];

interface DrawnEvent {
  type: string;
  created_at: string;
  team_id: string;
  actor: string;
  resource: string;
  word: string;
}

const eventArbitrary: fc.Arbitrary<DrawnEvent> = fc.record({
  type: fc.constantFrom(...TYPES),
  created_at: fc.constantFrom(...TIMES),
  team_id: fc.constantFrom(...TEAMS),
  actor: fc.constantFrom(...ACTORS),
  resource: fc.constantFrom(...RESOURCES),
  word: fc.constantFrom('alpha', 'Beta', 'gamma'),
});

/** A filter value, absent six times in seven, so that walks often match many events. */
const sometimes = <T>(values: T[]) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: fc.constantFrom(...values), weight: 1 });

const filterArbitrary: fc.Arbitrary<AuditFilter> = fc
  .record({
    type: sometimes([...TYPES, 'load_balancer.*', 'bucket.*']),
    resource_id: sometimes(RESOURCES),
    actor: sometimes(ACTORS),
    since: sometimes(TIMES),
    until: sometimes(TIMES),
    q: sometimes(['beta', 'ALPHA']),
  })
  .map((filter) => Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined)) as AuditFilter);

function matchesReference(event: CloudEvent, team: string, filter: AuditFilter): boolean {
  const type = filter.type;
  return (
    event.team_id === team &&
    (!type || (type.endsWith('.*') ? categoryOf(event.type) === type.slice(0, -2) : event.type === type)) &&
    (!filter.resource_id || event.data.id === filter.resource_id) &&
    (!filter.actor || event.actor === filter.actor) &&
    (!filter.since || event.created_at >= filter.since) &&
    (!filter.until || event.created_at < filter.until) &&
    (!filter.q || JSON.stringify(event).toLowerCase().includes(filter.q.toLowerCase()))
  );
}

const byPosition = (a: CloudEvent, b: CloudEvent) =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

describe('audit log pages', () => {
  let serial = 0;

  const publish = async (bus: EmbeddedEventBus, log: CloudEvent[], drawn: DrawnEvent[]) => {
    for (const e of drawn) {
      const event: CloudEvent = {
        id: `evt_${String(++serial).padStart(6, '0')}${(serial * 7919) % 97}`,
        type: e.type,
        created_at: e.created_at,
        team_id: e.team_id,
        actor: e.actor,
        data: { id: e.resource, note: e.word },
      };
      await bus.publish(event);
      log.push(event);
    }
  };

  it('walks every matching event exactly once, in order, whatever arrives between pages', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArbitrary, { minLength: 5, maxLength: 60 }),
        fc.array(fc.array(eventArbitrary, { maxLength: 5 }), { maxLength: 8 }),
        fc.constantFrom(...TEAMS),
        filterArbitrary,
        fc.constantFrom('asc' as const, 'desc' as const),
        fc.integer({ min: 1, max: 7 }),
        fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined }),
        async (before, arrivals, team, filter, order, limit, scanLimit) => {
          // A bus of its own per run: the log must hold this run's events only.
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-pages-'));
          const bus = new EmbeddedEventBus(dir);
          await bus.start();
          const published: CloudEvent[] = [];
          await publish(bus, published, before);
          // Retention reaches back far enough for the fixed times above.
          const audit = new AuditLog(bus, 10 * 365 * 24 * 3_600_000);
          audit.start();
          try {
            const existing = published.filter((e) => matchesReference(e, team, filter));
            const walked: CloudEvent[] = [];
            let after: AuditPosition | undefined;
            for (let pageNumber = 0; ; pageNumber++) {
              const { events, next } = audit.page(team, filter, { order, after, limit, scanLimit });
              expect(events.length).toBeLessThanOrEqual(limit);
              // Without a bound on what it looks at, a page stops early only when it is full.
              if (scanLimit === undefined && next) expect(events.length).toBe(limit);
              walked.push(...events);
              if (!next) break;
              // A walk that does not move on would never end: every page looks at an event of its own.
              expect(pageNumber).toBeLessThan(published.length + 1);
              after = next;
              await publish(bus, published, arrivals[pageNumber] ?? []);
            }
            const ids = walked.map((e) => e.id);
            expect(new Set(ids).size).toBe(ids.length);
            for (const event of walked) expect(matchesReference(event, team, filter)).toBe(true);
            const sorted = [...walked].sort(byPosition);
            expect(walked).toEqual(order === 'asc' ? sorted : sorted.reverse());
            expect(ids).toEqual(expect.arrayContaining(existing.map((e) => e.id)));
            // Without arrivals during the walk, the walk is exactly the reference.
            if (arrivals.every((a) => a.length === 0))
              expect(ids).toEqual(
                existing
                  .sort(byPosition)
                  [order === 'asc' ? 'slice' : 'reverse']()
                  .map((e) => e.id),
              );
            // A search is the whole walk, oldest first.
            expect(audit.search(team, filter).map((e) => e.id)).toEqual(
              published
                .filter((e) => matchesReference(e, team, filter))
                .sort(byPosition)
                .map((e) => e.id),
            );
          } finally {
            audit.stop();
            await bus.stop();
            fs.rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
