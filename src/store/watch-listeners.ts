/** The listeners of a store's changes (Store.watch), told of each change in turn. */
import { WatchEvent, WatchListener } from './types';

export class WatchListeners {
  private readonly listeners = new Set<WatchListener>();

  /** Store.watch: adds a listener, and answers how to remove it. */
  readonly watch = (listener: WatchListener): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  notify(event: WatchEvent | null): void {
    if (!event) return;
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not undo or hide a committed write.
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
