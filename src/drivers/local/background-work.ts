/**
 * Work a local driver runs in the background (initdb, pg_basebackup, starting a control
 * plane): in one fair gate (at most two pieces at once, one per team: they are disk- and
 * CPU-heavy), one piece at a time per resource; what a piece ended with is kept until the
 * next one, and every outcome counts in the driver's health.
 */
import type { Logger } from 'pino';
import type { DriverHealth } from '../types';
import { OutcomeWindow } from '../health';
import { FairGate } from '../../lib/fair-gate';
import { textOf } from '../../lib/unknown-values';

/** Work under way for one resource, and how it ended. */
export interface Work {
  kind: string;
  done: boolean;
  failure: string | null;
}

export class BackgroundWork {
  private readonly outcomes = new OutcomeWindow();
  private readonly work = new Map<string, Work>();
  private readonly gate = new FairGate({ total: 2, perTeam: 1, maxWaitingPerTeam: 1000, maxWaitMs: 30 * 60_000 });

  constructor(readonly logger: Logger) {}

  health(): DriverHealth {
    return this.outcomes.health();
  }

  /** The work of a resource: under way (done false), or how it ended until the next piece is begun. */
  workOf(id: string): Work | undefined {
    return this.work.get(id);
  }

  /** Runs a piece of work in the background, in the fair gate; nothing when one is under way for `id`. */
  begin(id: string, team: string, kind: string, body: () => Promise<void>): void {
    const previous = this.work.get(id);
    if (previous && !previous.done) return;
    const work: Work = { kind, done: false, failure: null };
    this.work.set(id, work);
    void this.gate
      .run(team, body)
      .then(() => {
        this.outcomes.succeeded();
        // Forgotten once done: what exists is read from the disk from now on.
        this.work.delete(id);
      })
      .catch((err: unknown) => {
        const message = textOf(err);
        this.logger.warn({ id, team, step: kind, err: message }, 'local driver step failed');
        this.outcomes.failed(message);
        work.failure = message;
        work.done = true;
      });
  }
}
