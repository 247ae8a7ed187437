/**
 * Live status by a watch (docs/api.md, Watching changes): the service pushes each change of
 * a family, or of one resource, as server-sent events, which the browser's EventSource
 * reads with the session cookie, and resumes from its last event (Last-Event-ID) when the
 * stream ends. Nothing is asked while nothing changes.
 *
 * Open while the page is visible: a hidden tab holds none of its team's watches. Where a
 * watch cannot be had (the team holds all it may, a proxy that does not pass the stream)
 * the page polls instead (polling.ts), as it did before watches.
 */
import { poll } from './polling';
import { watchableOf } from './openapi';

/**
 * What a watch tells: a resource added, changed or gone; that every resource as it was is
 * sent (`synced`); or that what was sent before is to be forgotten (`reset`).
 */
export type WatchEventType = 'added' | 'modified' | 'deleted' | 'synced' | 'reset';

const EVENT_TYPES: readonly WatchEventType[] = ['added', 'modified', 'deleted', 'synced', 'reset'];
/** The events whose data is a record (or, for `deleted`, what is left of one). */
const RECORD_EVENTS: readonly WatchEventType[] = ['added', 'modified', 'deleted'];

/**
 * Calls `onEvent` with each event of the watch of a family's resources (`family` its path,
 * `load-balancers`), or of one (`id`), and the record it carries (null for synced and
 * reset): records of type T, as the API's reads answer them (lib/api.ts). Where it cannot
 * watch (a family whose routes take no watch, by the OpenAPI document), polls `load`
 * instead. Returns the stop function (for an $effect's cleanup).
 */
export function watchOrPoll<T>(
  family: string,
  id: string | undefined,
  onEvent: (type: WatchEventType, record: T | null) => void,
  load: () => Promise<void>,
): () => void {
  const path = `/api/v1/${family}${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
  let source: EventSource | null = null;
  let stopPolling: (() => void) | null = null;
  let stopped = false;
  /** Known once the OpenAPI document is read: until then, nothing is opened. */
  let watchable: boolean | undefined;

  const open = () => {
    if (stopped || watchable === undefined || source || stopPolling) return;
    if (!watchable) {
      stopPolling = poll(load);
      return;
    }
    const opened = new EventSource(`${path}?watch=true`);
    for (const type of EVENT_TYPES)
      opened.addEventListener(type, (event) => {
        if (!(event instanceof MessageEvent) || typeof event.data !== 'string') return;
        const record: T | null = RECORD_EVENTS.includes(type) ? JSON.parse(event.data) : null;
        onEvent(type, record);
      });
    // CLOSED: refused (429, 503) or not a stream at all; a stream that broke is CONNECTING again by itself.
    opened.onerror = () => {
      if (opened.readyState !== EventSource.CLOSED) return;
      opened.close();
      source = null;
      stopPolling = poll(load);
    };
    source = opened;
  };
  const close = () => {
    source?.close();
    source = null;
  };
  // Polling pauses itself while hidden (polling.ts); a watch is closed.
  const onVisibility = () => {
    if (document.visibilityState === 'visible') open();
    else close();
  };

  document.addEventListener('visibilitychange', onVisibility);
  void watchableOf(family, id !== undefined)
    .catch(() => false)
    .then((known) => {
      watchable = known;
      if (document.visibilityState === 'visible') open();
    });
  return () => {
    stopped = true;
    document.removeEventListener('visibilitychange', onVisibility);
    close();
    stopPolling?.();
  };
}
