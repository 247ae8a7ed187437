/**
 * Work done every `intervalMs`, one run at a time: a run asked for while another is under
 * way starts when it ends, and the asks made while one waits share it, so work slower than
 * its interval never piles up runs. A failed run is handed to `onError`, and the next one
 * tries again. The timer does not hold the process open; `stop` waits for the run under way.
 */
export class Periodic {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  /** The run asked for that has not started yet. */
  private waiting: Promise<void> | null = null;

  constructor(
    private readonly intervalMs: number,
    private readonly work: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runNow(), this.intervalMs);
    this.timer.unref();
  }

  /** A run that starts after any under way (the waiting one, if there is one); resolves when it ended, failed or not. */
  runNow(): Promise<void> {
    if (this.waiting) return this.waiting;
    const run = this.running
      .then(() => {
        this.waiting = null;
        return this.work();
      })
      .catch(this.onError);
    this.waiting = run;
    this.running = run;
    return run;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
