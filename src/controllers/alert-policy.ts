/**
 * Evaluates each alert policy: reads what its condition holds for (alerts/conditions.ts),
 * keeps each such resource `pending` until the condition has held for the policy's
 * duration, then fires: marks the target `firing` (alert.triggered) and opens its incident.
 * A target that stops holding is resolved (alert.resolved) after its incident is asked to
 * resolve. The policy is looked at again when a resource its condition reads changes (a
 * store watch), when a pending target's duration is up, and on the controller's resync.
 *
 * Every step is idempotent and safe to crash after: an incident's id is derived from the
 * policy, the resource and when the condition began to hold, so a pass that repeats a step
 * finds the incident already there, and a firing target whose incident is missing (a crash
 * between the two writes) has it opened by the next pass; the incident is asked to resolve
 * before the target is dropped, so a crash between leaves the target to resolve again.
 */
import { createHash } from 'node:crypto';
import { AlreadyExistsError, Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { AlertPolicy, AlertTarget, alertPolicyFamily as family, durationMsOf } from '../resources/alert';
import { CLOSED_INCIDENT_STATES, Incident, incidentFamily } from '../resources/incident';
import { configHash } from '../resources/transitions';
import { deletedBy } from '../resources/intents';
import { families } from '../resources/registry';
import { readerOf, WATCHED_KINDS, Holding } from '../alerts/conditions';
import { nowIso } from '../lib/time';
import { fieldOf } from '../lib/unknown-values';
import type { ReconcileResult, Reconciler } from './controller';
import { OUTBOX_POLL_MS } from '../events/write-timing';
import { asStored } from '../resources/family';

const SYSTEM = 'system';
const TITLE_LIMIT = 300;

/** The incident of one firing: the same for every pass and replica. */
export function incidentIdFor(policyId: string, resourceId: string, since: string): string {
  const digest = createHash('sha256').update(`${policyId}/${resourceId}@${since}`).digest('hex');
  return `${incidentFamily.idPrefix}_${BigInt(`0x${digest}`).toString(36).padStart(20, '0').slice(0, 20)}`;
}

const titleOf = (resourceId: string) => families.find((f) => f.idPrefix === resourceId.slice(0, resourceId.indexOf('_')))?.title ?? 'resource';

export class AlertPolicyReconciler implements Reconciler {
  readonly kind = family.kind;

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
    private readonly retentionMs: number,
  ) {}

  /** A change of a resource some condition reads, or of an incident, is a reason to evaluate the team's policies again. */
  watchExternal(changed: (team: string, id: string) => void): () => void {
    return this.store.watch((event) => {
      const { kind, team } = event.object.meta;
      if (kind === incidentFamily.kind) {
        const policyId = fieldOf(event.object.spec, 'policy_id');
        if (typeof policyId === 'string') changed(team, policyId);
        return;
      }
      if (!WATCHED_KINDS.includes(kind)) return;
      void this.store.list<AlertPolicy['spec'], AlertPolicy['status']>(this.kind, team).then(
        (policies) => {
          for (const policy of policies)
            if (asStored(policy.spec).condition && readerOf(policy.spec.condition).kinds.includes(kind)) changed(team, policy.meta.id);
        },
        // The resync looks again; nothing is lost by a failed list here.
        () => undefined,
      );
    });
  }

  async reconcile(team: string, id: string): Promise<ReconcileResult | undefined> {
    const policy = await this.store.get<AlertPolicy['spec'], AlertPolicy['status']>(this.kind, team, id);
    if (!policy?.status.status) return;
    if (policy.meta.deletionTimestamp) return this.reconcileDeletion(policy);
    if (['deleted', 'failed'].includes(policy.status.status)) return;

    const reader = readerOf(policy.spec.condition);
    const holding = !policy.spec.enabled ? [] : await reader.holding(this.store, policy);
    const now = Date.now();
    const byId = new Map(holding.map((h) => [h.resource_id, h]));
    let current = policy;

    // Targets that stopped holding, or (an occurrence) whose incident was resolved by hand.
    for (const target of asStored(policy.status).targets ?? []) {
      const still = byId.get(target.resource_id);
      const handled = reader.occurrence && target.state === 'firing' && (await this.incidentClosed(team, target));
      if (still && !handled) continue;
      if (target.state === 'firing' && !handled) await this.requestResolve(team, target);
      byId.delete(target.resource_id);
      current = await this.changeTargets(
        current,
        (targets) => targets.filter((t) => t.resource_id !== target.resource_id),
        target.state === 'firing' ? { target, change: 'resolved' } : undefined,
        reader.occurrence && target.state === 'firing' ? target.since : undefined,
      );
    }

    // New holdings start pending; pending ones whose duration is up fire.
    const durationMs = durationMsOf(policy.spec.condition);
    const known = new Set((asStored(current.status).targets ?? []).map((t) => t.resource_id));
    const fresh = holding.filter((h) => !known.has(h.resource_id) && byId.has(h.resource_id));
    if (fresh.length > 0) current = await this.changeTargets(current, (targets) => [...targets, ...fresh.map((h) => pendingTarget(h))]);
    let nextDueMs: number | undefined;
    for (const target of asStored(current.status).targets ?? []) {
      if (target.state !== 'pending') {
        // A pass that stopped between marking the target firing and opening its incident.
        if (target.incident_id && !(await this.store.get(incidentFamily.kind, team, target.incident_id))) await this.openIncident(current, target);
        const detail = byId.get(target.resource_id)?.detail;
        if (detail && detail !== target.detail)
          current = await this.changeTargets(current, (targets) => targets.map((t) => (t.resource_id === target.resource_id ? { ...t, detail } : t)));
        continue;
      }
      const dueAt = Date.parse(target.since) + durationMs;
      if (dueAt > now) {
        nextDueMs = Math.min(nextDueMs ?? Infinity, dueAt - now);
        continue;
      }
      // The alert fires first and its incident opens after, so that alert.triggered comes
      // before the incident.opened it causes; the incident's id is known beforehand.
      const fired: AlertTarget = {
        ...target,
        state: 'firing',
        triggered_at: nowIso(),
        incident_id: incidentIdFor(policy.meta.id, target.resource_id, target.since),
      };
      current = await this.changeTargets(current, (targets) => targets.map((t) => (t.resource_id === target.resource_id ? fired : t)), {
        target: fired,
        change: 'triggered',
      });
      await this.openIncident(current, fired);
    }

    await this.settle(current);
    return nextDueMs === undefined ? undefined : { requeueAfterMs: Math.max(1, nextDueMs) };
  }

  private async incidentClosed(team: string, target: AlertTarget): Promise<boolean> {
    if (!target.incident_id) return false;
    const incident = await this.store.get<Incident['spec'], Incident['status']>(incidentFamily.kind, team, target.incident_id);
    // Not there yet: the firing pass stopped before opening it, and this pass opens it.
    return incident !== undefined && CLOSED_INCIDENT_STATES.includes(incident.status.status);
  }

  /** Opens the target's incident, or finds the one an earlier pass opened. */
  private async openIncident(policy: AlertPolicy, target: AlertTarget): Promise<void> {
    const id = incidentIdFor(policy.meta.id, target.resource_id, target.since);
    const title = `${policy.spec.name}: ${titleOf(target.resource_id)} ${target.resource_id} ${target.detail}`.slice(0, TITLE_LIMIT);
    const spec: Incident['spec'] = {
      title,
      policy_id: policy.meta.id,
      condition_type: policy.spec.condition.type,
      resource_id: target.resource_id,
      acknowledge_requested: false,
      acknowledged_by: null,
      resolve_requested: false,
      resolved_by: null,
    };
    try {
      await this.writer.create(incidentFamily, policy.meta.team, spec, SYSTEM, id);
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  }

  /** The alert resolved by itself: its incident is resolved by the service, unless someone did already. */
  private async requestResolve(team: string, target: AlertTarget): Promise<void> {
    if (!target.incident_id || !(await this.store.get(incidentFamily.kind, team, target.incident_id))) return;
    await this.writer.mutateSpec<Incident>(
      incidentFamily,
      team,
      target.incident_id,
      (incident) =>
        incident.spec.resolve_requested || CLOSED_INCIDENT_STATES.includes(incident.status.status)
          ? null
          : { ...incident.spec, resolve_requested: true, resolved_by: SYSTEM },
      SYSTEM,
    );
  }

  /** One status write per change of the targets, so that each alert event names its own target (last_transition). */
  private changeTargets(
    policy: AlertPolicy,
    change: (targets: AlertTarget[]) => AlertTarget[],
    transition?: { target: AlertTarget; change: 'triggered' | 'resolved' },
    handledSince?: string,
  ): Promise<AlertPolicy> {
    return this.writer.mutateStatus<AlertPolicy>(
      family,
      policy.meta.team,
      policy.meta.id,
      (latest) => {
        const targets = change(asStored(latest.status).targets ?? []);
        const firing = targets.some((t) => t.state === 'firing');
        return {
          targets,
          status: firing ? 'triggered' : 'ok',
          ...(transition
            ? {
                last_transition: {
                  resource_id: transition.target.resource_id,
                  change: transition.change,
                  incident_id: transition.target.incident_id,
                  at: nowIso(),
                },
              }
            : {}),
          ...(transition && handledSince ? { handled: { ...(asStored(latest.status).handled ?? {}), [transition.target.resource_id]: handledSince } } : {}),
        };
      },
      SYSTEM,
    );
  }

  /** A spec change (PATCH, kubectl edit) is observed: `alert.updated`. */
  private async settle(policy: AlertPolicy): Promise<void> {
    const hash = configHash(family, policy.spec);
    if (policy.status.observed_generation === policy.meta.generation && policy.status.observed_config === hash) return;
    await this.writer.mutateStatus<AlertPolicy>(
      family,
      policy.meta.team,
      policy.meta.id,
      (latest) => ({ observed_generation: latest.meta.generation, observed_config: configHash(family, latest.spec) }),
      SYSTEM,
    );
  }

  /** DELETE (or kubectl delete): `deleted` at once; removed after the retention period. Its incidents stay, to be resolved by hand. */
  private async reconcileDeletion(policy: AlertPolicy): Promise<ReconcileResult | undefined> {
    const { meta, status } = policy;
    if (status.status !== 'deleted') {
      await this.writer.mutateStatus<AlertPolicy>(
        family,
        meta.team,
        meta.id,
        (latest) => (latest.status.status === 'deleted' ? null : { status: 'deleted', deleted_at: nowIso() }),
        deletedBy(policy) ?? SYSTEM,
      );
      return;
    }
    const deletedAt = status.deleted_at ?? meta.deletionTimestamp;
    // No time of deletion kept (a status edited by hand): there is nothing to wait for.
    const expiry = deletedAt === undefined ? 0 : Date.parse(deletedAt) + this.retentionMs;
    if (Date.now() < expiry) return { requeueAfterMs: expiry - Date.now() };
    // The deleted event must reach the bus before the record disappears.
    if (!this.writer.relayed(policy)) return { requeueAfterMs: OUTBOX_POLL_MS };
    await this.store.remove(this.kind, meta.team, meta.id, meta.resourceVersion);
  }
}

function pendingTarget(holding: Holding): AlertTarget {
  return {
    resource_id: holding.resource_id,
    state: 'pending',
    since: holding.failed_at ?? nowIso(),
    triggered_at: null,
    incident_id: null,
    detail: holding.detail,
  };
}
