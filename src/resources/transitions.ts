/**
 * The events of a committed change, derived from the change itself (previous and next
 * object), so that API writes, reconciler writes and kubectl edits emit alike.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json';
import { newId } from '../lib/ids';
import { nowIso } from '../lib/time';
import type { CloudEvent } from './cloud-event';
import type { AnyFamily, BaseStatus, Condition, Resource } from './family';
import { asStored } from './family';
import { CONDITION_MESSAGE_MAX } from './schema-kit';
import { DELETION_POLICY_FIELD } from '../store/deletion-policy';
import { recordOf } from './record-of';

/** Hash of the spec fields whose change is a `<family>.updated`. */
export function configHash(family: AnyFamily, spec: object): string {
  const ignored = new Set([...(family.actionFields ?? []), DELETION_POLICY_FIELD]);
  const relevant = Object.fromEntries(Object.entries(spec).filter(([k]) => !ignored.has(k)));
  return createHash('sha256').update(canonicalJson(relevant)).digest('hex').slice(0, 16);
}

export function stateEmitsEvent(family: AnyFamily, state: string): boolean {
  if (family.eventStates) return family.eventStates.includes(state);
  return state !== family.states[0] || family.creationEvent === null;
}

export function eventTypesForChange(family: AnyFamily, previous: Resource | undefined, next: Resource): string[] {
  const types: string[] = [];
  const before = previous?.status.status;
  const after = next.status.status;
  if (before === undefined && family.creationEvent) types.push(`${family.name}.${family.creationEvent}`);
  if (after !== before && stateEmitsEvent(family, after)) types.push(`${family.name}.${after}`);
  const configBefore = previous?.status.observed_config;
  if (configBefore && next.status.observed_config && configBefore !== next.status.observed_config) types.push(`${family.name}.updated`);
  for (const verb of family.extraEvents?.(previous, next) ?? []) types.push(`${family.name}.${verb}`);
  return types;
}

/**
 * The events of a write by `actor`. `requester`: who asked for the change of the spec that
 * the write carries out (resources/intents.ts), told as the actor of the change's own events
 * (`updated` and the family's extra verbs, a backend attached); the creation and the states
 * are the writer's (a state the provider reached is the system's).
 */
export function buildEvents(family: AnyFamily, previous: Resource | undefined, next: Resource, actor: string, requester = actor): CloudEvent[] {
  const types = eventTypesForChange(family, previous, next);
  const foreign = previous ? (family.dataEvents?.(previous, next) ?? []) : [];
  if (types.length === 0 && foreign.length === 0) return [];
  const created_at = nowIso();
  const stateTypes = new Set([family.creationEvent, ...family.states].map((verb) => `${family.name}.${verb}`));
  const event = (type: string, data: Record<string, unknown>, by: string): CloudEvent => ({
    id: newId('evt'),
    type,
    created_at,
    team_id: next.meta.team,
    actor: by,
    data,
  });
  const own = types.length > 0 ? types.map((type) => event(type, recordOf(family, next), stateTypes.has(type) ? actor : requester)) : [];
  return [...own, ...foreign.map(({ type, data }) => event(type, data, requester))];
}

/**
 * Reason of the Synced condition of a resource whose spec the create rules refused when it
 * was adopted (a provider failure says ReconcileError): what marks it for a new judgement
 * once its spec changes. It stays while the resource stays failed, whatever else is written.
 */
export const SPEC_REFUSED = 'SpecRefused';

/** Whether a state is work under way: the first (unless ready at once), a busy one, `deleting`, or one the family names. */
export function isReconcilingState(family: AnyFamily, state: string): boolean {
  if (family.readyStates.includes(state)) return false;
  return state === family.states[0] || state === 'deleting' || (family.busyStates ?? []).includes(state) || (family.reconcilingStates ?? []).includes(state);
}

/**
 * The conditions, recomputed from the state; a condition keeps its transition time while
 * unchanged. `refused`: this write is an adoption's refusal of the spec.
 *
 * Ready and Synced after Crossplane; Reconciling and Stalled after kstatus, which Flux and
 * Argo CD read: present while True only (their abnormal-true polarity). Ready is True in
 * the family's ready states and in any state at rest that is no failure (a stopped server,
 * a revoked key: what was asked for, nothing left to do), so kstatus, which reads a False
 * Ready as work in progress, calls such a resource Current.
 */
export function conditionsFor(family: AnyFamily, resource: Resource, status: BaseStatus, refused = false): Condition[] {
  const now = nowIso();
  const generation = resource.meta.generation;
  const previous = new Map((asStored(status).conditions ?? []).map((c) => [c.type, c]));
  const make = (type: Condition['type'], value: Condition['status'], reason: string, message: string): Condition => {
    const old = previous.get(type);
    // A condition written without a time (by an earlier version) gets one: the API server refuses it without.
    const lastTransitionTime = (old && old.status === value ? old.lastTransitionTime : undefined) ?? now;
    return { type, status: value, reason, message: conditionMessage(message), lastTransitionTime, observedGeneration: generation };
  };
  const state = status.status;
  const reason = stateReason(state);
  const failed = state === 'failed';
  const behind = status.observed_generation < generation;
  const reconciling = !failed && (behind || isReconcilingState(family, state));
  const ready = family.readyStates.includes(state) || (!failed && !reconciling) ? 'True' : 'False';
  const specRefused = failed && (refused || previous.get('Synced')?.reason === SPEC_REFUSED);
  // Passes that fail (controllers/reporting.ts) leave the state as it was, and say why here, as Crossplane's Synced does.
  const passError = failed ? null : (asStored(status).reconcile_error ?? null);
  const synced = failed || passError ? 'False' : status.observed_generation >= generation ? 'True' : 'Unknown';
  const message = status.status_reason ?? `The ${family.title} is ${state}.`;
  const failure = status.status_reason ?? 'Provisioning failed.';
  const syncReason = specRefused ? SPEC_REFUSED : failed || passError ? 'ReconcileError' : synced === 'True' ? 'ReconcileSuccess' : 'ReconcilePending';
  return [
    make('Ready', ready, reason, message),
    make('Synced', synced, syncReason, failed ? failure : (passError?.message ?? '')),
    ...(reconciling
      ? [make('Reconciling', 'True', behind ? 'LatestGenerationNotObserved' : reason, behind ? `Generation ${generation} is not applied yet.` : message)]
      : []),
    ...(failed ? [make('Stalled', 'True', syncReason, failure)] : []),
  ];
}

/**
 * A state as a condition or Event reason: CamelCase (`pending_dns` is PendingDns), which
 * metav1.Condition's reason pattern accepts whatever separators a state name uses.
 */
const stateReason = (state: string) =>
  state
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('') || 'Unknown';

/** A condition's message within metav1.Condition's limit; a provider's error text may be longer. */
const conditionMessage = (message: string) => (message.length > CONDITION_MESSAGE_MAX ? `${message.slice(0, CONDITION_MESSAGE_MAX - 3)}...` : message);

/** A Kubernetes Event about a resource (core/v1 Event: type, reason, message). */
export interface ObjectEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * The Kubernetes Events of a committed status change: each change of state (a Warning for
 * `failed`, with the reason the status gives), a configuration applied, and a refusal (a
 * spec adoption refused, an update the provider refused). Only what the status itself
 * holds goes into them, and the status never holds a secret.
 */
export function objectEventsForChange(family: AnyFamily, previous: Resource | undefined, next: Resource): ObjectEvent[] {
  const before = previous?.status.status;
  const after = next.status.status;
  const reasonText = next.status.status_reason;
  const events: ObjectEvent[] = [];
  const synced = (r: Resource | undefined) => (r && asStored(r.status).conditions)?.find((c) => c.type === 'Synced');
  const refusedNow =
    synced(next)?.reason === SPEC_REFUSED && (after !== before || synced(previous)?.reason !== SPEC_REFUSED || reasonText !== previous?.status.status_reason);
  // A family that reports none of its states (webhook deliveries, agent messages: records
  // made by the thousand) would double its writes with Events; it gets refusals only.
  const silent = family.eventStates !== undefined && family.eventStates.length === 0;
  if (refusedNow) {
    events.push({ type: 'Warning', reason: SPEC_REFUSED, message: `The spec was refused: ${reasonText ?? 'it breaks a create rule'}` });
  } else if (silent) {
    return events;
  } else if (after !== before) {
    const message =
      reasonText ?? (before === undefined ? `The ${family.title} was accepted; it is ${after}.` : `The ${family.title} went from ${before} to ${after}.`);
    events.push({ type: after === 'failed' ? 'Warning' : 'Normal', reason: stateReason(after), message });
  } else if (reasonText && reasonText !== previous?.status.status_reason) {
    // Same state, a new reason. A generation observed without its configuration applied is
    // an update the provider refused (the resource runs on as it was); else a degradation.
    const refusedUpdate =
      next.status.observed_generation > (previous?.status.observed_generation ?? 0) && next.status.observed_config === previous?.status.observed_config;
    events.push({ type: 'Warning', reason: refusedUpdate ? 'UpdateRefused' : 'Degraded', message: reasonText });
  }
  // Passes that began to fail, or fail otherwise now (controllers/reporting.ts).
  const passError = asStored(next.status).reconcile_error;
  if (passError && passError.message !== (previous && asStored(previous.status).reconcile_error)?.message) {
    events.push({ type: 'Warning', reason: 'ReconcileError', message: passError.message });
  }
  const configBefore = previous?.status.observed_config;
  if (before !== undefined && configBefore && next.status.observed_config && configBefore !== next.status.observed_config && after !== 'failed') {
    events.push({ type: 'Normal', reason: 'Updated', message: `Generation ${next.status.observed_generation} of the spec was applied.` });
  }
  return events;
}
