/**
 * Kubernetes Events about resources, the ones `kubectl describe` lists under the custom
 * resource: every change of state, configuration applied and refusal (transitions.ts
 * objectEventsForChange), recorded by the ResourceWriter after the status write that made
 * it, so each is recorded once, by the replica that made the change.
 *
 * In cluster mode they are core/v1 Events in the resource's namespace (the chart grants
 * `create` on `events`). The embedded store has no Event API; its record of the same
 * changes is the event log (CloudEvents in the audit log), so there the recorder does
 * nothing. An Event is a courtesy to the reader: one that cannot be written is logged
 * and dropped, never failing or delaying the write it reports.
 *
 * Like the API server's own clients, the recorder correlates (event-correlator.ts): a
 * repeat raises the count of the Event written, and past ten similar changes in a
 * namespace within ten minutes (a burst of creates) they are combined into one Event
 * whose count rises, written at most every two seconds.
 */
import { CoreV1Api, CoreV1Event, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { StoredObject } from '../store/types';
import type { ObjectEvent } from '../resources/transitions';
import { API_VERSION, namespaceOfTeam } from '../store/kubernetes/names';
import { newId } from '../lib/ids';
import { textOf } from '../lib/unknown-values';
import type { EventRecorder } from '../resources/writer';
import { EventCorrelator, EventSeries } from './event-correlator';

/** The embedded store's: its event log already holds every change. */
export const embeddedEventRecorder: EventRecorder = { record: () => undefined };

/** The component named as the Events' source (`kubectl describe`'s From column). */
export const EVENT_SOURCE = 'cloudplane';
/** The API server caps an Event's message at 1 KiB. */
const MAX_MESSAGE = 1024;

/** How often raised counts are written: a burst's repeats cost one update per Event per interval. */
const COUNT_FLUSH_MS = 2_000;

export class KubernetesEventRecorder implements EventRecorder {
  private readonly core: CoreV1Api;
  private readonly correlator: EventCorrelator;
  /** The object each counted Event names now (a combined one names the latest). */
  private readonly involved = new WeakMap<EventSeries, Involved>();
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(
    kubeConfig: KubeConfig,
    private readonly systemNamespace: string,
    private readonly logger: Logger,
    private readonly instance = process.env.HOSTNAME ?? EVENT_SOURCE,
    correlator = new EventCorrelator(),
  ) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.correlator = correlator;
  }

  record(object: StoredObject<unknown, unknown>, event: ObjectEvent): void {
    const { meta } = object;
    if (!meta.object) return; // no custom resource to point at (not yet created)
    const namespace = namespaceOfTeam(meta.team, this.systemNamespace);
    const message = event.message.length > MAX_MESSAGE ? `${event.message.slice(0, MAX_MESSAGE - 1)}…` : event.message;
    const involved = { kind: meta.kind, name: meta.object.name, uid: meta.object.uid, resourceVersion: meta.resourceVersion };
    const correlation = this.correlator.correlate({ namespace, kind: meta.kind, uid: meta.object.uid, type: event.type, reason: event.reason, message });
    if ('counted' in correlation) {
      this.involved.set(correlation.counted, involved);
      this.flushSoon();
      return;
    }
    const series = correlation.create;
    const name = `${meta.object.name}.${newId('ev').slice(3)}`;
    const body = this.eventBody(series, name, involved);
    // API call: events recorder: Events
    this.core.createNamespacedEvent({ namespace, body }).then(
      () => {
        series.name = name;
      },
      (err: unknown) => {
        this.correlator.forget(series);
        this.logger.warn({ err: textOf(err), kind: meta.kind, id: meta.id, reason: event.reason }, 'could not record a Kubernetes Event');
      },
    );
  }

  private flushSoon(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      void this.flushCounts();
    }, COUNT_FLUSH_MS);
    this.flushTimer.unref();
  }

  /** Writes the counts raised since the last flush: one merge patch per Event. */
  private async flushCounts(): Promise<void> {
    for (const series of this.correlator.takeDue()) {
      const involved = this.involved.get(series);
      if (!series.name || !involved) {
        // Its creation is still on its way: counted with the next flush.
        this.correlator.retry(series);
        this.flushSoon();
        continue;
      }
      const { metadata: _metadata, ...changes } = this.eventBody(series, series.name, involved);
      try {
        // API call: events recorder: Events
        await this.core.patchNamespacedEvent(
          { name: series.name, namespace: series.namespace, body: changes },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        series.writtenCount = series.count;
      } catch (err) {
        this.logger.warn({ err: textOf(err), event: series.name }, "could not raise a Kubernetes Event's count");
        this.correlator.forget(series);
      }
    }
  }

  private eventBody(series: EventSeries, name: string, involved: Involved): CoreV1Event {
    const { latest } = series;
    return {
      metadata: { name, namespace: series.namespace },
      involvedObject: { apiVersion: API_VERSION, namespace: series.namespace, ...involved },
      type: latest.type,
      reason: latest.reason,
      message: series.message,
      source: { component: EVENT_SOURCE },
      reportingComponent: `${EVENT_SOURCE}.dev/controller`,
      reportingInstance: this.instance,
      action: latest.reason,
      firstTimestamp: new Date(series.firstAt),
      lastTimestamp: new Date(series.lastAt),
      eventTime: undefined,
      count: series.count,
    };
  }
}

/** The object an Event is about, as its involvedObject names it. */
interface Involved {
  kind: string;
  name: string;
  uid: string;
  resourceVersion: string;
}
