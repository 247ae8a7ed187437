/**
 * Every write of a resource goes through here, from the API and from the reconcilers
 * alike. A status write carries, in the same atomic write, the events it causes
 * (status.pending_events, an outbox); the outbox relay publishes them. A crash between
 * the write and the publish therefore loses no event, and the relay's retry cannot
 * double one, because the bus drops a second publish of the same event id.
 */
import { ConflictError, Store, StoredObject } from '../store/types';
import { newId } from '../lib/ids';
import { notFound } from '../lib/errors';
import type { AnyFamily, BaseStatus, Resource } from './family';
import { buildEvents, conditionsFor, configHash, objectEventsForChange, ObjectEvent } from './transitions';
import { deletedByLabels } from './intents';

const MAX_CONFLICT_RETRIES = 20;

/** Returns the status fields to change, or null when nothing needs writing. */
export type StatusMutation<R extends Resource = Resource> = (resource: R) => (Partial<BaseStatus> & Record<string, unknown>) | null;

/** Where the Kubernetes Events of each status change go (controllers/events-recorder.ts). */
export interface EventRecorder {
  record(object: StoredObject<unknown, unknown>, event: ObjectEvent): void;
}

export class ResourceWriter {
  /** `events`: where the Kubernetes Events of each status change go (cluster mode). */
  constructor(
    private readonly store: Store,
    private readonly events?: EventRecorder,
  ) {}

  /** Creates a resource in its first state; its creation event is in the same write. */
  async create(family: AnyFamily, team: string, spec: object, actor: string, id = newId(family.idPrefix)): Promise<Resource> {
    const now = new Date().toISOString();
    const draft = {
      meta: { kind: family.kind, id, team, resourceVersion: '', generation: 1, createdAt: now, updatedAt: now, labels: {} },
      spec,
      status: {},
    } as Resource;
    const status = this.firstStatus(family, draft, actor);
    const created = (await this.store.create({ meta: { kind: family.kind, id, team }, spec, status })) as Resource;
    this.report(family, undefined, created);
    return created;
  }

  /**
   * Gives a resource made outside the API (kubectl, GitOps) the first status the API
   * would have given it, with its creation event. With a `refusal` (the message of the
   * create rule it breaks) it starts `failed` instead, is never provisioned, and its
   * Synced condition says SPEC_REFUSED (transitions.ts). A refused resource judged again (its spec was
   * changed) starts over the same way; its events are then those of the change from
   * `failed`, and a refusal again keeps the observed config, since none was applied.
   */
  async initialize(family: AnyFamily, resource: Resource, actor: string, refusal?: string): Promise<Resource> {
    const status = this.firstStatus(family, resource, actor, refusal);
    const written = (await this.store.updateStatus({ ...resource, status })) as Resource;
    this.report(family, resource.status?.status ? resource : undefined, written);
    return written;
  }

  /** The Kubernetes Events of a committed status change; after the write, so that only what happened is told. */
  private report(family: AnyFamily, previous: Resource | undefined, next: Resource): void {
    if (!this.events) return;
    for (const event of objectEventsForChange(family, previous, next)) this.events.record(next, event);
  }

  private firstStatus(family: AnyFamily, resource: Resource, actor: string, refusal?: string): BaseStatus {
    const previous = resource.status?.status ? resource : undefined;
    const refused = refusal !== undefined;
    const status: BaseStatus & Record<string, unknown> = {
      ...family.initialStatus(resource.spec),
      status: refused ? 'failed' : (family.firstState?.(resource.spec) ?? family.states[0]),
      status_reason: refusal ?? null,
      observed_generation: resource.meta.generation,
      observed_config: refused && previous ? previous.status.observed_config : configHash(family, resource.spec as Record<string, unknown>),
      deleted_at: null,
      conditions: previous?.status.conditions ?? [],
      pending_events: [],
    };
    const next = { ...resource, status } as Resource;
    status.conditions = conditionsFor(family, next, status, refused);
    // Events not yet relayed stay in the outbox.
    status.pending_events = [...(previous?.status.pending_events ?? []), ...buildEvents(family, previous, next, actor)];
    return status;
  }

  /**
   * Applies `mutate` to the latest version of the resource and writes the status,
   * re-reading and retrying when another writer got there first.
   */
  async mutateStatus<R extends Resource>(family: AnyFamily, team: string, id: string, mutate: StatusMutation<R>, actor: string): Promise<R> {
    return this.onLatest<R, R>(family, team, id, async (current) => {
      const changes = mutate(current);
      return changes ? ((await this.writeStatus(family, current, changes, actor)) as R) : current;
    });
  }

  /** Writes the spec; a change of it is reconciled (and reported) by the family's reconciler. */
  async mutateSpec<R extends Resource>(family: AnyFamily, team: string, id: string, mutate: (resource: R) => Record<string, unknown> | null): Promise<R> {
    return this.onLatest<R, R>(family, team, id, async (current) => {
      const spec = mutate(current);
      return spec ? ((await this.store.update({ ...current, spec })) as R) : current;
    });
  }

  /**
   * Asks for a resource's deletion on behalf of `actor`, whose id is recorded first so that
   * the reconciler's events of the deletion name them (intents.ts).
   */
  async requestDeletion(family: AnyFamily, team: string, id: string, actor: string): Promise<void> {
    const current = await this.onLatest(family, team, id, async (latest) => {
      if (latest.meta.deletionTimestamp) return latest;
      return this.store.update({ ...latest, meta: { ...latest.meta, labels: deletedByLabels(latest.meta.labels, actor) } });
    });
    if (!current.meta.deletionTimestamp) await this.store.requestDeletion(family.kind, team, id);
  }

  /**
   * Applies `write` to the latest version of the resource, reading it again and retrying
   * when another writer got there first (a resourceVersion conflict).
   */
  private async onLatest<R extends Resource, T>(family: AnyFamily, team: string, id: string, write: (current: R) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const current = (await this.store.get(family.kind, team, id)) as R | undefined;
      if (!current) throw notFound(family.name, id);
      try {
        return await write(current);
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= MAX_CONFLICT_RETRIES) throw err;
      }
    }
  }

  private async writeStatus(family: AnyFamily, current: Resource, changes: Record<string, unknown>, actor: string): Promise<Resource> {
    const status = { ...current.status, ...changes };
    const next = { ...current, status };
    status.conditions = conditionsFor(family, next, status);
    // `changes` may add events of its own to the outbox (a delivery's webhook.delivery_failed).
    status.pending_events = [...(status.pending_events ?? []), ...buildEvents(family, current, next, actor)];
    const written = (await this.store.updateStatus(next)) as Resource;
    this.report(family, current, written);
    return written;
  }
}
