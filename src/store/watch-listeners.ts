/** The listeners of a store's changes (Store.watch), told of each change in turn. */
import { WatchEvent, WatchListener } from './types';

export class WatchListeners {
  private readonly listeners = new Set<WatchListener>();
  /** Changes told later (notifyLater), in commit order, each with the listeners there when it was committed. */
  private readonly due: Array<{ event: WatchEvent; listeners: WatchListener[] }> = [];

  /** Store.watch: adds a listener, and answers how to remove it. */
  readonly watch = (listener: WatchListener): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /**
   * Tells of the change once the turn of the event loop that committed it is over, as an
   * API server's watch does: the writer has its answer before any watcher hears of its
   * write, so code that runs on the embedded store meets the order it meets in cluster
   * mode. Only the listeners there at the commit hear of it, and not those gone since.
   */
  readonly notifyLater = (event: WatchEvent | null): void => {
    if (!event) return;
    if (this.due.length === 0) setImmediate(this.tellDue);
    this.due.push({ event, listeners: [...this.listeners] });
  };

  clear(): void {
    this.listeners.clear();
    this.due.length = 0;
  }

  private readonly tellDue = (): void => {
    for (const { event, listeners } of this.due.splice(0)) {
      this.tell(
        event,
        listeners.filter((listener) => this.listeners.has(listener)),
      );
    }
  };

  private tell(event: WatchEvent, listeners: Iterable<WatchListener>): void {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not undo or hide a committed write.
      }
    }
  }
}
