/**
 * The reconciler shared by provider-backed families (load balancers, VPN gateways,
 * servers, buckets, file shares): provision while in the first state, apply spec changes
 * with a `configure` operation, run the family's steady-state work, and on deletion go to
 * `deleted` (at once, or through `deleting` while the provider tears down), keep the
 * record for the retention period, then release, report `destroyed` and remove it.
 * Every step is one status write, so a crash anywhere resumes at the same step.
 */
import type { Store } from '../store/types';
import type { Provider, OperationRef } from '../providers/types';
import type { AnyFamily, BaseStatus, Resource } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import { configHash } from '../resources/transitions';
import { nowIso } from '../lib/time';
import type { ReconcileResult, Reconciler } from './controller';

export interface OperatedStatus extends BaseStatus {
  operation: OperationRef | null;
}

export type Operated = Resource<Record<string, any>, OperatedStatus>;

export interface SteadyResult {
  changes?: Record<string, unknown> | null;
  requeueAfterMs?: number;
}

/**
 * A move between steady states carried out by a provider operation, such as a server's
 * stop: from `from`, when `wanted`, the resource shows `via` while `operation` runs and
 * ends in `to` (or `failed`).
 */
export interface OperatedMove {
  from: string;
  via: string;
  to: string;
  operation: string;
  wanted(resource: Operated): boolean;
  /** Further status fields once the move is done. */
  done?(resource: Operated): Record<string, unknown>;
}

export interface LifecycleOptions {
  family: AnyFamily;
  /** The state a successful provisioning ends in: running, active or available. */
  readyState: string;
  store: Store;
  writer: ResourceWriter;
  provider: Provider;
  retentionMs: number;
  /** Status fields to write from the provider's provisioning outputs. */
  outputs?: (outputs: Record<string, unknown>) => Record<string, unknown>;
  /** Work on a resource that is provisioned and not being deleted. */
  steady?: (resource: Operated) => Promise<SteadyResult | void>;
  moves?: OperatedMove[];
}

const SYSTEM = 'system';
const OUTBOX_POLL_MS = 200;
/** States in which the family's steady work does not run. */
const NOT_STEADY = new Set(['failed', 'deleting', 'deleted', 'destroyed']);

export class LifecycleReconciler implements Reconciler {
  readonly kind: string;

  constructor(private readonly o: LifecycleOptions) {
    this.kind = o.family.kind;
  }

  async reconcile(team: string, id: string): Promise<ReconcileResult | void> {
    const resource = (await this.o.store.get(this.kind, team, id)) as Operated | undefined;
    if (!resource) return;
    if (resource.meta.deletionTimestamp) return this.reconcileDeletion(resource);
    const state = resource.status.status;
    if (state === 'deleted' || state === 'deleting') {
      // The API writes the state first and then asks for deletion; finish what a crash interrupted.
      await this.o.store.requestDeletion(this.kind, team, id);
      return;
    }
    if (state === this.o.family.states[0]) return this.provision(resource);
    if (NOT_STEADY.has(state)) return;
    const move = this.o.moves?.find((m) => m.via === state || (m.from === state && resource.status.operation === null && m.wanted(resource)));
    if (move) return this.runMove(resource, move);
    return this.reconcileSteady(resource);
  }

  /**
   * Starts `name` unless it is the operation in progress, then polls it, in the same pass:
   * waiting for the start's own watch event would put the resource at the back of the
   * queue, behind every other one (in a bulk apply, behind all the others' adoption).
   */
  private async runOperation(resource: Operated, name: string, onDone: (outputs: Record<string, unknown>) => Record<string, unknown>, onFailed: (reason: string) => Record<string, unknown>, startChanges: Record<string, unknown> = {}): Promise<ReconcileResult | void> {
    let op = resource.status.operation;
    if (!op || op.name !== name) {
      const started = await this.write(resource, () => ({ ...startChanges, operation: { name, started_at: nowIso() } }));
      // Another change came first (the write stood back): the next pass judges anew.
      if (started.status.operation?.name !== name) return;
      op = started.status.operation;
    }
    const result = await this.o.provider.operate(this.o.family.name, resource.meta.id, op, resource.spec);
    if (result.state === 'pending') return { requeueAfterMs: result.retryAfterMs };
    const changes = result.state === 'succeeded' ? onDone(result.outputs) : onFailed(result.reason);
    await this.write(resource, (latest) => (latest.status.operation?.started_at === op.started_at ? { ...changes, operation: null } : null));
  }

  private provision(resource: Operated): Promise<ReconcileResult | void> {
    return this.runOperation(
      resource,
      'provision',
      (outputs) => ({
        ...(this.o.outputs ? this.o.outputs(outputs) : outputs),
        status: this.o.readyState,
        status_reason: null,
        observed_generation: resource.meta.generation,
        observed_config: configHash(this.o.family, resource.spec),
      }),
      (reason) => ({ status: 'failed', status_reason: `Provisioning failed: ${reason}.` }),
    );
  }

  private runMove(resource: Operated, move: OperatedMove): Promise<ReconcileResult | void> {
    const startChanges = resource.status.status === move.from ? { status: move.via, status_reason: null } : {};
    return this.runOperation(
      resource,
      move.operation,
      () => ({ status: move.to, status_reason: null, ...move.done?.(resource) }),
      (reason) => ({ status: 'failed', status_reason: `${move.operation.replace(/_/g, ' ')} failed: ${reason}.` }),
      startChanges,
    );
  }

  private async reconcileSteady(resource: Operated): Promise<ReconcileResult | void> {
    const { family } = this.o;
    const status = resource.status;
    if (status.operation?.name === 'configure' || (status.operation === null && status.observed_config !== configHash(family, resource.spec))) {
      const generation = resource.meta.generation;
      const hash = configHash(family, resource.spec);
      return this.runOperation(
        resource,
        'configure',
        () => ({ observed_generation: generation, observed_config: hash, status_reason: null }),
        (reason) => ({ observed_generation: generation, status_reason: `The last configuration change was not applied: ${reason}.` }),
      );
    }
    const steady = (await this.o.steady?.(resource)) ?? {};
    const generationChanges = status.observed_generation !== resource.meta.generation ? { observed_generation: resource.meta.generation } : null;
    if (steady.changes || generationChanges) {
      await this.write(resource, () => ({ ...generationChanges, ...steady.changes }));
    }
    return steady.requeueAfterMs !== undefined ? { requeueAfterMs: steady.requeueAfterMs } : undefined;
  }

  private async reconcileDeletion(resource: Operated): Promise<ReconcileResult | void> {
    const { family, store, retentionMs } = this.o;
    const { status, meta } = resource;
    if (status.status === 'destroyed') {
      // The destroyed event must reach the bus before the record disappears.
      if ((status.pending_events ?? []).length > 0) return { requeueAfterMs: OUTBOX_POLL_MS };
      if (family.secret) await store.deleteSecret(meta.team, family.secret.secretName(meta.id));
      await store.remove(this.kind, meta.team, meta.id, meta.resourceVersion);
      return;
    }
    if (status.status === 'deleted') {
      const expiry = Date.parse(status.deleted_at ?? meta.deletionTimestamp!) + retentionMs;
      if (Date.now() < expiry) return { requeueAfterMs: expiry - Date.now() };
      if (family.deletion === 'background') {
        await this.write(resource, () => ({ status: 'destroyed' }));
        return;
      }
      return this.runOperation(resource, 'release', () => ({ status: 'destroyed' }), () => ({}));
    }
    if (family.deletion === 'immediate') {
      await this.write(resource, () => ({ status: 'deleted', deleted_at: nowIso(), operation: null }));
      return;
    }
    if (status.status !== 'deleting') {
      await this.write(resource, () => ({ status: 'deleting', operation: { name: 'release', started_at: nowIso() } }));
      return;
    }
    return this.runOperation(resource, 'release', () => ({ status: 'deleted', deleted_at: nowIso() }), () => ({}));
  }

  /** Writes status changes; skipped if the resource moved on since it was read. */
  private write(resource: Operated, changes: (latest: Operated) => Record<string, unknown> | null): Promise<Operated> {
    const { meta } = resource;
    return this.o.writer.mutateStatus<Operated>(
      this.o.family,
      meta.team,
      meta.id,
      (latest) => (latest.status.status === resource.status.status && Boolean(latest.meta.deletionTimestamp) === Boolean(meta.deletionTimestamp) ? changes(latest) : null),
      SYSTEM,
    );
  }
}
