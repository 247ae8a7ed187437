/**
 * Usage metering (docs/api.md, Usage; docs/architecture/usage.md). Every replica
 * counts the requests it serves and flushes them; the leader also records resource
 * intervals from the bus, counts the deliveries its dispatcher makes, and watches the
 * teams' thresholds.
 */
import type { Logger } from 'pino';
import type { EventBus } from '../events/types';
import type { Store } from '../store/types';
import type { UsageConfig } from '../config';
import { UsageCounters } from './counters';
import { IntervalRecorder } from './interval-recorder';
import { ThresholdWatch } from './thresholds';
import { UsageRetention } from './retention';
import { usageReport, UsageReport } from './report';

export class UsageMeter {
  readonly counters: UsageCounters;

  constructor(private readonly deps: { store: Store; bus: EventBus; config: UsageConfig; logger: Logger }) {
    this.counters = new UsageCounters(deps.store, deps.config.flushMs, deps.logger);
  }

  /** Counting on this replica; stop flushes what is left. */
  start(): void {
    this.counters.start();
  }

  stop(): Promise<void> {
    return this.counters.stop();
  }

  /** What only the leader runs: new parts per term of leadership. */
  leaderParts(): Array<{ start(): Promise<void>; stop(): Promise<void> }> {
    const { store, bus, config, logger } = this.deps;
    return [
      new IntervalRecorder(bus, store, logger),
      new ThresholdWatch({ store, bus, counters: this.counters, logger, intervalMs: config.flushMs }),
      new UsageRetention({ store, logger, retentionMs: config.retentionMs }),
    ];
  }

  report(team: string, since: Date, until: Date): Promise<UsageReport> {
    return usageReport(this.deps.store, this.counters, team, since, until);
  }
}
