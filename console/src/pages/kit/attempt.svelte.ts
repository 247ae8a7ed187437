/**
 * One kind of request a page makes on the user's behalf (a save, an invite, a revoke): busy
 * while it runs, so that its buttons are disabled, and the problem it ended with, if any, so
 * that its form shows it. Pages used to spell this out as a try/catch/finally around each
 * call; the rules (clear the last problem, turn what the API refused with into a Problem,
 * always leave busy) now live here once.
 */
import { problemOf, type Problem } from './problems';

export class Attempt {
  busy = $state(false);
  problem = $state<Problem | null>(null);

  /** Runs `work`; true when it succeeded. Its failure becomes `problem`, never an unhandled rejection. */
  async run(work: () => Promise<unknown>): Promise<boolean> {
    this.busy = true;
    this.problem = null;
    try {
      await work();
      return true;
    } catch (err) {
      this.problem = problemOf(err);
      return false;
    } finally {
      this.busy = false;
    }
  }

  /** A problem found before any request (a form's own check). */
  refuse(message: string, fields: Record<string, string> = {}): void {
    this.problem = { message, code: null, fields };
  }

  clear(): void {
    this.problem = null;
  }
}
