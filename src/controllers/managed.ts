/**
 * The one reconciler of every driver-backed family (servers, load balancers, VPN
 * gateways, buckets, file shares), after crossplane-runtime's managed reconciler. Each
 * pass observes first, then asks the family's driver to create, update or delete, and
 * writes what it saw as the status. It is the only writer of these families' status: the
 * API records what is wanted (the spec, a deletion request) and this carries it out, so a
 * REST call and a kubectl edit go the same way.
 *
 * A family binds to it with a FamilyBinding: what its driver is asked for (the spec, with
 * references resolved) and how what the driver observes reads as status. Deletion keeps
 * the record: the resource is `deleted` at once (or through `deleting` while the driver
 * releases, for families deleted in the background), its external part is released, and
 * after the retention period it is `destroyed` and removed. Every step is one status
 * write, so a crash anywhere resumes at the same step.
 */
import type { Store } from '../store/types';
import type { AnyFamily, FamilyDefinition } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import { Driver, ExternalRecord, Observation, OwnerRefusal } from '../drivers/types';
import { configHash } from '../resources/transitions';
import { orphansOnDelete } from '../store/deletion-policy';
import { changedBy, deletedBy } from '../resources/intents';
import { sameJson } from '../lib/canonical-json';
import { nowIso } from '../lib/time';
import { fieldOf } from '../lib/unknown-values';
import type { ReconcileResult, Reconciler } from './controller';
import type { ConnectionDetails } from './connection-details';
import { Driven, managedOf } from './driven';
import { OUTBOX_POLL_MS } from '../events/write-timing';

/** The lifecycle state and status fields a family reads from what its driver observed. */
export interface SteadyState {
  state?: string;
  changes?: Record<string, unknown>;
  requeueAfterMs?: number;
}

/** `R`: the family's resources, of its spec and status types. */
export interface FamilyBinding<Desired, Outputs, Observed, R extends Driven = Driven> {
  family: FamilyDefinition<R['spec'], R['status']>;
  /** The state a successful creation ends in: running, active or available. */
  readyState: string;
  driver: Driver<Desired, Outputs, Observed>;
  /** What the driver is asked for: the spec, with references resolved. */
  desired(resource: R): Promise<Desired>;
  /** Status fields from a ready resource's outputs, written whenever they change. */
  outputs(outputs: Outputs): Record<string, unknown>;
  /** Status fields that record what a spec the driver has just applied holds (a database's logical databases). */
  applied?(resource: R): Record<string, unknown>;
  /** Status fields written once, as the resource first becomes ready, from what the driver then observed. */
  onReady?(observed: Observed): Record<string, unknown>;
  /** The state and status fields of a ready resource, from what the driver observed. */
  steady?(observed: Observed, resource: R, desired: Desired): SteadyState;
  /** Changes of other resources that call for a look at one of this family's (a load balancer's servers). Returns a stop. */
  watchRelated?(changed: (team: string, id: string) => void): () => void;
}

export type AnyBinding = FamilyBinding<unknown, unknown, unknown>;

const SYSTEM = 'system';
/** Look again this soon when a driver gave no hint (something it made is not visible yet). */
const DEFAULT_POLL_MS = 1_000;
/** How soon an update the provider refused is looked at again, unless the driver says when. */
const REJECTED_POLL_MS = 10_000;
/** A step the team's own limits refused is tried again this often, until they are raised. */
const OWNER_REFUSED_POLL_MS = 30_000;

/**
 * The configuration hash of a stored spec, made once per stored version: a store never
 * changes an object it handed out (see api/record-bytes.ts), and a resync hashes every
 * resource's spec again though few change. Held weakly by the spec object.
 */
const specHashes = new WeakMap<object, string>();
function specHashOf(family: AnyFamily, spec: object): string {
  let hash = specHashes.get(spec);
  if (hash === undefined) specHashes.set(spec, (hash = configHash(family, spec)));
  return hash;
}

const minDefined = (...values: Array<number | undefined>): number | undefined => {
  const defined = values.filter((v): v is number => v !== undefined);
  return defined.length > 0 ? Math.max(1, Math.min(...defined)) : undefined;
};

/** Only the fields that differ from the status: a pass that changes nothing writes nothing. */
function differing(status: object, changes: Record<string, unknown>): Record<string, unknown> | null {
  const entries = Object.entries(changes).filter(([field, value]) => !sameJson(fieldOf(status, field) ?? null, value ?? null));
  return entries.length > 0 ? Object.fromEntries(entries) : null;
}

export class ManagedReconciler implements Reconciler {
  readonly kind: string;
  /** team/id -> a replayable step's record not yet written, and the stored record it followed. */
  private readonly held = new Map<string, { after: ExternalRecord | null; external: ExternalRecord }>();

  constructor(
    private readonly binding: AnyBinding,
    private readonly store: Store,
    private readonly writer: ResourceWriter,
    private readonly retentionMs: number,
    /** Cluster mode: where connection details are published (writeConnectionSecretToRef). */
    private readonly connectionDetails?: ConnectionDetails,
  ) {
    this.kind = binding.family.kind;
  }

  watchExternal(changed: (team: string, id: string) => void): () => void {
    const stops = [this.binding.driver.watchMade?.(changed), this.binding.watchRelated?.(changed)];
    return () => {
      for (const stop of stops) stop?.();
    };
  }

  async reconcile(team: string, id: string): Promise<ReconcileResult | undefined> {
    const resource = await this.store.get<Driven['spec'], Driven['status']>(this.kind, team, id);
    if (!resource) {
      this.held.delete(`${team}/${id}`);
      return;
    }
    if (resource.meta.deletionTimestamp) return this.reconcileDeletion(resource);
    const state = resource.status.status;
    if (state === 'deleted' || state === 'deleting') {
      // Written by versions whose API set the state before asking for deletion: finish it.
      await this.store.requestDeletion(this.kind, team, id);
      return;
    }
    if (state === 'failed' || state === 'destroyed') return;

    const { driver } = this.binding;
    const desired = await this.binding.desired(resource);
    const stored = resource.status.external ?? null;
    const heldRecord = this.heldOf(resource);
    const managed = { ...managedOf(this.binding.family, resource, desired), ...(heldRecord ? { external: heldRecord } : {}) };
    let observation = await driver.observe(managed);
    let external = managed.external;
    let stepPollMs: number | undefined;
    let replayable = heldRecord !== undefined;
    if (!observation.exists || (!observation.upToDate && !observation.failure)) {
      // Absent: made for the first time, or again after it vanished (drift). Out of date: brought back to the spec.
      let step;
      try {
        step = observation.exists ? await driver.update(managed) : await driver.create(managed);
      } catch (err) {
        if (!(err instanceof OwnerRefusal)) throw err;
        return this.ownerRefused(resource, err);
      }
      external = step.external;
      stepPollMs = step.pollAfterMs;
      replayable = step.replayable === true;
      // Looked at again in the same pass: waiting for this write's own watch event would put the resource behind every other one.
      observation = await driver.observe({ ...managed, external });
    }
    const judged = this.judge(resource, observation, desired);
    const changes = differing(resource.status, { ...(sameJson(external, stored) ? {} : { external: external ?? undefined }), ...judged.changes });
    // A replayable record alone is kept for the write of the state it explains (Step.replayable).
    const onlyRecord = changes !== null && Object.keys(changes).every((field) => field === 'external');
    const hold = replayable && onlyRecord ? external : null;
    if (hold) this.held.set(`${team}/${id}`, { after: stored, external: hold });
    else this.held.delete(`${team}/${id}`);
    const written = changes && !hold ? await this.write(resource, changes, SYSTEM, changedBy(resource) ?? SYSTEM) : null;
    await this.connectionDetails?.publish(this.binding.family, { ...resource, status: { ...resource.status, ...changes } });
    // A refused update is no work under way: looking again every second would only repeat the refusal.
    const rejected = observation.exists && !observation.upToDate && Boolean(observation.rejected);
    const pending =
      !observation.exists || (!observation.upToDate && !observation.failure && !rejected) || (state === this.binding.family.states[0] && !observation.ready);
    const retry = rejected ? (stepPollMs ?? REJECTED_POLL_MS) : stepPollMs;
    const requeueAfterMs = minDefined(
      judged.requeueAfterMs,
      observation.exists ? observation.pollAfterMs : undefined,
      retry,
      pending ? DEFAULT_POLL_MS : undefined,
    );
    // A write that kept the state (the record of a driver's step, outputs, health) needs no
    // pass of its own: what comes next is what this pass asked for. A new state does (its
    // steady changes), and so does a write made on a version this pass did not read.
    const settled = written?.base === resource.meta.resourceVersion && written.object.status.status === state;
    return { requeueAfterMs, ...(settled ? { settledVersion: written.object.meta.resourceVersion } : {}) };
  }

  /**
   * Says on the resource why its step was refused by its team's own limits (the provider is
   * fine), and tries again later: the limit may be raised.
   */
  private async ownerRefused(resource: Driven, refusal: OwnerRefusal): Promise<ReconcileResult> {
    const reason = `Waiting for room in the team's limits: ${refusal.message}.`;
    if (resource.status.status_reason !== reason) await this.write(resource, { status_reason: reason }, SYSTEM);
    return { requeueAfterMs: OWNER_REFUSED_POLL_MS };
  }

  /** The status that what the driver observed calls for. */
  private judge(resource: Driven, observation: Observation<unknown, unknown>, desired: unknown): SteadyState {
    const { binding } = this;
    const state = resource.status.status;
    if (!observation.exists) return {};
    const creating = state === binding.family.states[0];
    if (observation.failure) {
      const reason = creating ? `Provisioning failed: ${observation.failure}.` : `${observation.failure}.`;
      return { changes: { status: 'failed', status_reason: reason } };
    }
    const hash = specHashOf(binding.family, resource.spec);
    // A configuration just applied clears what a rejected one said; a reason written by others stays.
    const applied = observation.upToDate
      ? {
          observed_generation: resource.meta.generation,
          observed_config: hash,
          ...binding.applied?.(resource),
          ...(hash !== resource.status.observed_config ? { status_reason: null } : {}),
        }
      : observation.rejected
        ? { observed_generation: resource.meta.generation, status_reason: `The last configuration change was not applied: ${observation.rejected}.` }
        : {};
    const outputs = observation.ready && observation.outputs ? binding.outputs(observation.outputs) : {};
    if (creating) {
      // A first configuration refused is said while creating too (cleared below once ready); nothing else is written before.
      if (!observation.ready) return observation.rejected ? { changes: { status_reason: `The configuration was not applied: ${observation.rejected}.` } } : {};
      return { changes: { ...outputs, ...binding.onReady?.(observation.observed), ...applied, status: binding.readyState, status_reason: null } };
    }
    const steady = binding.steady?.(observation.observed, resource, desired) ?? {};
    const moved = steady.state && steady.state !== state ? { status: steady.state } : {};
    return { changes: { ...outputs, ...steady.changes, ...applied, ...moved }, requeueAfterMs: steady.requeueAfterMs };
  }

  /**
   * The record of a replayable step this reconciler keeps for the resource, while the
   * stored record is still the one it followed (another writer's change drops it).
   */
  private heldOf(resource: Driven): ExternalRecord | undefined {
    const held = this.held.get(`${resource.meta.team}/${resource.meta.id}`);
    return held && sameJson(held.after, resource.status.external ?? null) ? held.external : undefined;
  }

  private async reconcileDeletion(resource: Driven): Promise<ReconcileResult | undefined> {
    const { family } = this.binding;
    const { status, meta } = resource;
    const heldRecord = this.heldOf(resource);
    this.held.delete(`${meta.team}/${meta.id}`);
    await this.connectionDetails?.withdraw(resource);
    if (status.status === 'destroyed') {
      // The destroyed event must reach the bus before the record disappears.
      if (!this.writer.relayed(resource)) return { requeueAfterMs: OUTBOX_POLL_MS };
      if (family.secret) await this.store.secrets.delete(meta.team, family.secret.secretName(meta.id));
      await this.store.remove(this.kind, meta.team, meta.id, meta.resourceVersion);
      return;
    }
    // Orphan: no release (the store also has the garbage collector spare what the CR owns: store.ts remove).
    const orphaned = orphansOnDelete(resource.spec);
    if (status.status !== 'deleted' && status.status !== 'deleting') {
      // What the driver made is released next; `{}` marks a release due where it recorded
      // nothing yet. Orphaned, it is left in place: the record forgets it, no driver call.
      const release = { external: orphaned ? undefined : (heldRecord ?? status.external ?? {}) };
      const first = family.deletion === 'immediate' ? { status: 'deleted', deleted_at: nowIso() } : { status: 'deleting' };
      await this.write(resource, { ...first, ...release }, deletedBy(resource) ?? SYSTEM);
      return;
    }
    if (status.external !== undefined) {
      if (!orphaned) return this.release(resource);
      // The policy became Orphan while a release was due: nothing more is released.
      await this.write(resource, { external: undefined }, SYSTEM);
      return;
    }
    if (status.status === 'deleting') {
      await this.write(resource, { status: 'deleted', deleted_at: nowIso() }, SYSTEM);
      return;
    }
    const deletedAt = status.deleted_at ?? meta.deletionTimestamp;
    // No time of deletion kept (a status edited by hand): there is nothing to wait for.
    const expiry = deletedAt === undefined ? 0 : Date.parse(deletedAt) + this.retentionMs;
    if (Date.now() < expiry) return { requeueAfterMs: expiry - Date.now() };
    await this.write(resource, { status: 'destroyed' }, SYSTEM);
  }

  /** Asks the driver to remove what it made until it observes nothing left; then the record says so (external absent). */
  private async release(resource: Driven): Promise<ReconcileResult | undefined> {
    const { driver } = this.binding;
    const managed = managedOf(this.binding.family, resource, await this.binding.desired(resource));
    const observation = await driver.observe(managed);
    if (observation.exists) {
      const step = await driver.delete(managed);
      if (!sameJson(step.external, managed.external)) await this.write(resource, { external: step.external }, SYSTEM);
      return { requeueAfterMs: minDefined(step.pollAfterMs, observation.pollAfterMs) ?? DEFAULT_POLL_MS };
    }
    const done = resource.status.status === 'deleting' ? { status: 'deleted', deleted_at: nowIso() } : {};
    await this.write(resource, { ...done, external: undefined }, SYSTEM);
  }

  /**
   * Writes status changes; skipped (null) if the resource moved on (another state, a
   * deletion) since it was read. Answers the
   * written object and the version it was written on (another than `resource`'s after a
   * lost race).
   */
  /** `requester`: who asked for the spec the write carries out (writer.ts mutateStatus); by default `actor`. */
  private async write(resource: Driven, changes: Record<string, unknown>, actor: string, requester = actor): Promise<{ object: Driven; base: string } | null> {
    const { meta } = resource;
    // Set by the mutation, which runs inside mutateStatus (an object: the compiler would take a `let` for never set).
    const read: { base: string | null } = { base: null };
    const object = await this.writer.mutateStatus<Driven>(
      this.binding.family,
      meta.team,
      meta.id,
      (latest) => {
        const applies = latest.status.status === resource.status.status && Boolean(latest.meta.deletionTimestamp) === Boolean(meta.deletionTimestamp);
        read.base = applies ? latest.meta.resourceVersion : null;
        return applies ? changes : null;
      },
      actor,
      requester,
    );
    return read.base === null ? null : { object, base: read.base };
  }
}
