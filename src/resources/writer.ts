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
import type { AnyFamily, BaseStatus, FamilyDefinition, Resource } from './family';
import { asStored } from './family';
import { buildEvents, conditionsFor, configHash, objectEventsForChange, ObjectEvent } from './transitions';
import { changedByLabels, deletedByLabels } from './intents';
import { sameJson } from '../lib/canonical-json';
import { fieldOf } from '../lib/unknown-values';

const MAX_CONFLICT_RETRIES = 20;

/** A resource as the store hands it back: of R's spec and status types. */
type Stored<R extends Resource> = Resource<R['spec'], R['status']>;

/** Returns the status fields to change, or null when nothing needs writing. */
export type StatusMutation<R extends Resource = Resource> = (resource: Stored<R>) => (Partial<BaseStatus> & Record<string, unknown>) | null;

/** Which events of outboxes are on the bus already (the outbox relay, events/outbox-relay.ts). */
export interface PublishedEvents {
  isPublished(eventId: string): boolean;
}

/** Where the Kubernetes Events of each status change go (controllers/events-recorder.ts). */
export interface EventRecorder {
  record(object: StoredObject<unknown, unknown>, event: ObjectEvent): void;
}

/** Judges each version of a resource a write reads before writing it; throws to refuse (a client's If-Match). */
export type WritePrecondition = (latest: Resource) => void;

export class ResourceWriter {
  /** The relay whose published events every status write takes out of the outbox (on the leader). */
  private published: PublishedEvents | undefined;

  /** `events`: where the Kubernetes Events of each status change go (cluster mode). */
  constructor(
    private readonly store: Store,
    private readonly events?: EventRecorder,
  ) {}

  /**
   * From now on every status write leaves out of the outbox the events `published` has put
   * on the bus (undefined: none, as when this replica stops leading): the removal rides on
   * a write that happens anyway, which spares the relay a write of its own (outbox-relay.ts).
   */
  drainPublishedWith(published: PublishedEvents | undefined): void {
    this.published = published;
  }

  /**
   * Whether every event in the object's outbox is on the bus: a record may then be removed
   * with its outbox (the relay leaves published events there for the next write).
   */
  relayed(object: StoredObject<unknown, unknown>): boolean {
    const pending = fieldOf(object.status, 'pending_events');
    return (
      !Array.isArray(pending) ||
      pending.every((event) => {
        const id = fieldOf(event, 'id');
        return typeof id === 'string' && this.published?.isPublished(id) === true;
      })
    );
  }

  /** Creates a resource in its first state; its creation event is in the same write. */
  async create<Spec extends object>(
    family: FamilyDefinition<Spec>,
    team: string,
    spec: NoInfer<Spec>,
    actor: string,
    id = newId(family.idPrefix),
  ): Promise<Resource<Spec>> {
    const { status } = this.preview(family, team, spec, actor, id);
    const created = await this.store.create({ meta: { kind: family.kind, id, team }, spec, status });
    this.report(family, undefined, created);
    return created;
  }

  /** The resource `create` would write, written nowhere (a dry run, api/dry-run.ts). */
  preview<Spec extends object>(family: FamilyDefinition<Spec>, team: string, spec: NoInfer<Spec>, actor: string, id: string): Resource<Spec> {
    const now = new Date().toISOString();
    const meta = { kind: family.kind, id, team, resourceVersion: '', generation: 1, createdAt: now, updatedAt: now, labels: {} };
    return { meta, spec, status: this.firstStatus(family, { meta, spec }, undefined, actor) };
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
    const previous = resource.status.status ? resource : undefined;
    const status = this.firstStatus(family, resource, previous, actor, refusal);
    const written = await this.store.updateStatus({ ...resource, status });
    this.report(family, previous, written);
    return written;
  }

  /** The Kubernetes Events of a committed status change; after the write, so that only what happened is told. */
  private report(family: AnyFamily, previous: Resource | undefined, next: Resource): void {
    if (!this.events) return;
    for (const event of objectEventsForChange(family, previous, next)) this.events.record(next, event);
  }

  /** The first status of `resource`; `previous`: the resource as it was, when it had one (a refused one judged again). */
  private firstStatus(
    family: AnyFamily,
    resource: Pick<Resource, 'meta' | 'spec'>,
    previous: Resource | undefined,
    actor: string,
    refusal?: string,
  ): BaseStatus {
    const refused = refusal !== undefined;
    const first: BaseStatus = {
      ...family.initialStatus(resource.spec),
      status: refused ? 'failed' : (family.firstState?.(resource.spec) ?? family.states[0]),
      status_reason: refusal ?? null,
      observed_generation: resource.meta.generation,
      observed_config: refused && previous ? previous.status.observed_config : configHash(family, resource.spec),
      deleted_at: null,
      conditions: previous?.status.conditions ?? [],
      pending_events: [],
    };
    const status = { ...first, conditions: conditionsFor(family, { ...resource, status: first }, first, refused) };
    // Events not yet relayed stay in the outbox.
    return { ...status, pending_events: [...(previous?.status.pending_events ?? []), ...buildEvents(family, previous, { ...resource, status }, actor)] };
  }

  /**
   * Applies `mutate` to the latest version of the resource and writes the status,
   * re-reading and retrying when another writer got there first.
   */
  /**
   * `requester`: who asked for the spec this write carries out, the actor of the change's
   * own events (transitions.ts buildEvents); by default `actor`.
   */
  async mutateStatus<R extends Resource>(
    family: AnyFamily,
    team: string,
    id: string,
    mutate: StatusMutation<R>,
    actor: string,
    requester = actor,
  ): Promise<Stored<R>> {
    return this.onLatest<R, Stored<R>>(family, team, id, async (current) => {
      const changes = mutate(current);
      return changes ? this.writeStatus(family, current, changes, actor, requester) : current;
    });
  }

  /**
   * Writes the spec on behalf of `actor`; a change of it is reconciled (and reported, naming
   * `actor`: intents.ts) by the family's reconciler. `precondition` judges each version read
   * before `mutate` does (it throws to refuse: a client's If-Match).
   */
  async mutateSpec<R extends Resource>(
    family: AnyFamily,
    team: string,
    id: string,
    mutate: (resource: Stored<R>) => object | null,
    actor: string,
    precondition?: WritePrecondition,
  ): Promise<Stored<R>> {
    return this.onLatest<R, Stored<R>>(family, team, id, async (current) => {
      precondition?.(current);
      const spec = mutate(current);
      if (!spec) return current;
      const labels = sameJson(spec, current.spec) ? current.meta.labels : changedByLabels(current.meta.labels, actor, current.meta.generation + 1);
      return this.store.update({ ...current, meta: { ...current.meta, labels }, spec });
    });
  }

  /**
   * Asks for a reconcile pass of the resource now (ObjectMeta.reconcileRequestedAt, the
   * annotation `cloudplane.dev/reconcile-requested-at` in cluster mode): `at` marks the ask,
   * which the pass records as handled. `judge` refuses on each version read (If-Match, an
   * ask too soon after the last).
   */
  async requestReconcile<R extends Resource>(family: AnyFamily, team: string, id: string, at: string, judge: WritePrecondition): Promise<Stored<R>> {
    return this.onLatest<R, Stored<R>>(family, team, id, async (latest) => {
      judge(latest);
      return this.store.update({ ...latest, meta: { ...latest.meta, reconcileRequestedAt: at } });
    });
  }

  /**
   * Asks for a resource's deletion on behalf of `actor`, whose id is recorded first so that
   * the reconciler's events of the deletion name them (intents.ts). `precondition` judges
   * each version read before the write (it throws to refuse: a client's If-Match).
   */
  async requestDeletion(family: AnyFamily, team: string, id: string, actor: string, precondition?: WritePrecondition): Promise<void> {
    const current = await this.onLatest(family, team, id, async (latest) => {
      precondition?.(latest);
      if (latest.meta.deletionTimestamp) return latest;
      return this.store.update({ ...latest, meta: { ...latest.meta, labels: deletedByLabels(latest.meta.labels, actor) } });
    });
    if (!current.meta.deletionTimestamp) await this.store.requestDeletion(family.kind, team, id);
  }

  /**
   * Applies `write` to the latest version of the resource, reading it again and retrying
   * when another writer got there first (a resourceVersion conflict).
   */
  private async onLatest<R extends Resource, T>(family: AnyFamily, team: string, id: string, write: (current: Stored<R>) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.store.get<R['spec'], R['status']>(family.kind, team, id);
      if (!current) throw notFound(family.name, id);
      try {
        return await write(current);
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= MAX_CONFLICT_RETRIES) throw err;
      }
    }
  }

  private async writeStatus<R extends Resource>(
    family: AnyFamily,
    current: Stored<R>,
    changes: Record<string, unknown>,
    actor: string,
    requester: string,
  ): Promise<Stored<R>> {
    const changed: R['status'] = { ...current.status, ...changes };
    const status: R['status'] = { ...changed, conditions: conditionsFor(family, { ...current, status: changed }, changed) };
    // `changes` may add events of its own to the outbox (a delivery's webhook.delivery_failed).
    const unpublished = (asStored(status).pending_events ?? []).filter((event) => !this.published?.isPublished(event.id));
    const pending_events = [...unpublished, ...buildEvents(family, current, { ...current, status }, actor, requester)];
    const written = await this.store.updateStatus<R['spec'], R['status']>({ ...current, status: { ...status, pending_events } });
    this.report(family, current, written);
    return written;
  }
}
