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
 */
import { CoreV1Api, CoreV1Event, KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { StoredObject } from '../store/types';
import type { ObjectEvent } from '../resources/transitions';
import { API_VERSION, namespaceOfTeam } from '../store/kubernetes/names';
import { newId } from '../lib/ids';
import { textOf } from '../lib/unknown-values';
import type { EventRecorder } from '../resources/writer';
import { known } from '../lib/known';

/** The embedded store's: its event log already holds every change. */
export const embeddedEventRecorder: EventRecorder = { record: () => undefined };

/** The component named as the Events' source (`kubectl describe`'s From column). */
export const EVENT_SOURCE = 'cloudplane';
/** The API server caps an Event's message at 1 KiB. */
const MAX_MESSAGE = 1024;

export class KubernetesEventRecorder implements EventRecorder {
  private readonly core: CoreV1Api;

  constructor(
    kubeConfig: KubeConfig,
    private readonly systemNamespace: string,
    private readonly logger: Logger,
    private readonly instance = process.env.HOSTNAME ?? EVENT_SOURCE,
  ) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  record(object: StoredObject<unknown, unknown>, event: ObjectEvent): void {
    const body = this.eventFor(object, event);
    if (!body) return;
    // API call: events recorder: Events
    this.core
      .createNamespacedEvent({ namespace: known(body.metadata.namespace, 'the namespace of an Event (eventFor sets it)'), body })
      .catch((err: unknown) => {
        this.logger.warn({ err: textOf(err), kind: object.meta.kind, id: object.meta.id, reason: event.reason }, 'could not record a Kubernetes Event');
      });
  }

  /** The Event, or null for an object with no custom resource to point at (not yet created). */
  private eventFor(object: StoredObject<unknown, unknown>, event: ObjectEvent): CoreV1Event | null {
    const { meta } = object;
    if (!meta.object) return null;
    const namespace = namespaceOfTeam(meta.team, this.systemNamespace);
    const now = new Date();
    const message = event.message.length > MAX_MESSAGE ? `${event.message.slice(0, MAX_MESSAGE - 1)}…` : event.message;
    return {
      metadata: { name: `${meta.object.name}.${newId('ev').slice(3)}`, namespace },
      involvedObject: {
        apiVersion: API_VERSION,
        kind: meta.kind,
        name: meta.object.name,
        namespace,
        uid: meta.object.uid,
        resourceVersion: meta.resourceVersion,
      },
      type: event.type,
      reason: event.reason,
      message,
      source: { component: EVENT_SOURCE },
      reportingComponent: `${EVENT_SOURCE}.dev/controller`,
      reportingInstance: this.instance,
      action: event.reason,
      firstTimestamp: now,
      lastTimestamp: now,
      eventTime: undefined,
      count: 1,
    };
  }
}
