/**
 * A long history of one team's events on a service's bus, for tests of the audit log's
 * bounded pages: `count` events a millisecond apart from `start`, none of them matching
 * `needle` but the first (the oldest).
 */
import type { EventBus } from '../../src/events/types';

export async function publishHistory(bus: EventBus, team: string, count: number, needle: string, start = Date.now() - 3_600_000): Promise<void> {
  for (let i = 0; i < count; i++)
    await bus.publish({
      id: `evt_history${String(i).padStart(6, '0')}`,
      type: 'usage.recorded',
      created_at: new Date(start + i).toISOString(),
      team_id: team,
      actor: 'system',
      data: { note: i === 0 ? needle : 'hay' },
    });
}
