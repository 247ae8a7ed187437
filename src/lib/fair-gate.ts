/**
 * A bounded number of places shared by teams in fair turns: at most `total` calls at once,
 * at most `perTeam` of one team, and when a place frees up the teams waiting take it in
 * turns (round robin; first come, first served within a team). A team whose calls are
 * slow or many holds its own places only, never all of them.
 *
 * Waiting is bounded too: a team has at most `maxWaitingPerTeam` calls waiting, and a call
 * waits at most `maxWaitMs`. Past either, `run` throws GateBusyError without running the
 * call, for the caller's fallback (the agent then answers from its rules).
 */
import { known } from './known';

export class GateBusyError extends Error {}

interface Waiter {
  start(): void;
  timer: NodeJS.Timeout;
}

export interface FairGateOptions {
  total: number;
  perTeam: number;
  maxWaitingPerTeam: number;
  maxWaitMs: number;
}

export class FairGate {
  private running = 0;
  private readonly runningByTeam = new Map<string, number>();
  /**
   * The calls waiting, by team. A Map keeps its insertion order: the first team that may
   * start is served and moves to the back, which makes the turns.
   */
  private readonly waiting = new Map<string, Waiter[]>();

  constructor(private readonly options: FairGateOptions) {}

  /** Calls running now, of one team or of all. */
  runningOf(team?: string): number {
    return team === undefined ? this.running : (this.runningByTeam.get(team) ?? 0);
  }

  async run<T>(team: string, call: () => Promise<T>): Promise<T> {
    await this.enter(team);
    try {
      return await call();
    } finally {
      this.leave(team);
    }
  }

  private mayStart(team: string): boolean {
    return this.running < this.options.total && this.runningOf(team) < this.options.perTeam;
  }

  private start(team: string): void {
    this.running++;
    this.runningByTeam.set(team, this.runningOf(team) + 1);
  }

  private enter(team: string): Promise<void> {
    const queue = this.waiting.get(team) ?? [];
    // A team's calls start in their order: none overtakes one of its own that waits.
    if (queue.length === 0 && this.mayStart(team)) {
      this.start(team);
      return Promise.resolve();
    }
    if (queue.length >= this.options.maxWaitingPerTeam) return Promise.reject(new GateBusyError(`${queue.length} calls of the team wait already`));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          clearTimeout(waiter.timer);
          this.start(team);
          resolve();
        },
        timer: setTimeout(() => {
          this.drop(team, waiter);
          reject(new GateBusyError(`no place within ${this.options.maxWaitMs} ms`));
        }, this.options.maxWaitMs),
      };
      waiter.timer.unref();
      queue.push(waiter);
      this.waiting.set(team, queue);
    });
  }

  private drop(team: string, waiter: Waiter): void {
    const queue = this.waiting.get(team);
    const at = queue?.indexOf(waiter) ?? -1;
    if (!queue || at < 0) return;
    queue.splice(at, 1);
    if (queue.length === 0) this.waiting.delete(team);
  }

  private leave(team: string): void {
    this.running--;
    const left = this.runningOf(team) - 1;
    if (left > 0) this.runningByTeam.set(team, left);
    else this.runningByTeam.delete(team);
    this.admit();
  }

  /** Hands free places to the waiting teams in turn. */
  private admit(): void {
    while (this.running < this.options.total) {
      const turn = [...this.waiting].find(([team]) => this.mayStart(team));
      if (turn === undefined) return;
      const [next, queue] = turn;
      const waiter = known(queue.shift(), 'a call waiting (a team is in the turns only while one waits)');
      // To the back of the turns, or out of them once it has no call waiting.
      this.waiting.delete(next);
      if (queue.length > 0) this.waiting.set(next, queue);
      waiter.start();
    }
  }
}
