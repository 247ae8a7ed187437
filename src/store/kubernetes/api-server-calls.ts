/**
 * Whether the API server answers, as the store's requests find it. A request that gets no
 * answer (or a 5xx) fails with StoreUnavailableError (503) and makes the store `stale`
 * until the next success; the first success after that has the store watch anew, as its
 * watches may have missed events meanwhile.
 */
import { StoreUnavailableError } from '../types';
import { httpCode } from './http-code';

export class ApiServerCalls {
  /** Set when a request to the API server failed for lack of an answer; cleared by the next success. */
  private unreachableSince: number | null = null;

  /** `answeredAgain`: called on the first success after a request went unanswered. */
  constructor(private readonly answeredAgain: () => void) {}

  get unreachable(): boolean {
    return this.unreachableSince !== null;
  }

  /** Runs a request, telling an API server that does not answer (503) from one that says no. */
  readonly call = async <T>(request: () => Promise<T>): Promise<T> => {
    try {
      const answer = await request();
      if (this.unreachableSince !== null) {
        this.unreachableSince = null;
        this.answeredAgain();
      }
      return answer;
    } catch (err) {
      const code = httpCode(err);
      if (code === undefined || code >= 500) {
        this.unreachableSince ??= Date.now();
        throw new StoreUnavailableError(err);
      }
      this.unreachableSince = null;
      throw err;
    }
  };
}
