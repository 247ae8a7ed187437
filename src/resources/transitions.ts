/**
 * The events of a committed change, derived from the change itself (previous and next
 * object), so that API writes, reconciler writes and kubectl edits emit alike.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json';
import { newId } from '../lib/ids';
import { nowIso } from '../lib/time';
import type { CloudEvent } from '../events/types';
import type { AnyFamily, BaseStatus, Condition, Resource } from './family';

/** Hash of the spec fields whose change is a `<family>.updated`. */
export function configHash(family: AnyFamily, spec: Record<string, unknown>): string {
  const relevant = Object.fromEntries(Object.entries(spec).filter(([k]) => !(family.actionFields ?? []).includes(k)));
  return createHash('sha256').update(canonicalJson(relevant)).digest('hex').slice(0, 16);
}

export function stateEmitsEvent(family: AnyFamily, state: string): boolean {
  if (family.eventStates) return family.eventStates.includes(state);
  return state !== family.states[0] || family.creationEvent === null;
}

export function eventTypesForChange(family: AnyFamily, previous: Resource | undefined, next: Resource): string[] {
  const types: string[] = [];
  const before = previous?.status?.status as string | undefined;
  const after = next.status.status;
  if (before === undefined && family.creationEvent) types.push(`${family.name}.${family.creationEvent}`);
  if (after !== before && stateEmitsEvent(family, after)) types.push(`${family.name}.${after}`);
  const configBefore = previous?.status?.observed_config;
  if (configBefore && next.status.observed_config && configBefore !== next.status.observed_config) types.push(`${family.name}.updated`);
  for (const verb of family.extraEvents?.(previous, next) ?? []) types.push(`${family.name}.${verb}`);
  return types;
}

export function buildEvents(family: AnyFamily, previous: Resource | undefined, next: Resource, actor: string): CloudEvent[] {
  const types = eventTypesForChange(family, previous, next);
  if (types.length === 0) return [];
  const data = family.toRecord(next);
  const created_at = nowIso();
  return types.map((type) => ({ id: newId('evt'), type, created_at, team_id: next.meta.team, actor, data }));
}

/**
 * Reason of the Synced condition of a resource whose spec the create rules refused when it
 * was adopted (a provider failure says ReconcileError): what marks it for a new judgement
 * once its spec changes. It stays while the resource stays failed, whatever else is written.
 */
export const SPEC_REFUSED = 'SpecRefused';

/**
 * Ready and Synced, recomputed from the state; a condition keeps its transition time while
 * unchanged. `refused`: this write is an adoption's refusal of the spec.
 */
export function conditionsFor(family: AnyFamily, resource: Resource, status: BaseStatus, refused = false): Condition[] {
  const now = nowIso();
  const generation = resource.meta.generation;
  const previous = new Map((status.conditions ?? []).map((c) => [c.type, c]));
  const make = (type: Condition['type'], value: Condition['status'], reason: string, message: string): Condition => {
    const old = previous.get(type);
    const lastTransitionTime = old && old.status === value ? old.lastTransitionTime : now;
    return { type, status: value, reason, message, lastTransitionTime, observedGeneration: generation };
  };
  const state = status.status;
  const reason = state.charAt(0).toUpperCase() + state.slice(1);
  const ready = family.readyStates.includes(state) ? 'True' : 'False';
  const failed = state === 'failed';
  const specRefused = failed && (refused || previous.get('Synced')?.reason === SPEC_REFUSED);
  const synced = failed ? 'False' : status.observed_generation >= generation ? 'True' : 'Unknown';
  return [
    make('Ready', ready, reason, status.status_reason ?? `The ${family.title} is ${state}.`),
    make('Synced', synced, specRefused ? SPEC_REFUSED : failed ? 'ReconcileError' : synced === 'True' ? 'ReconcileSuccess' : 'ReconcilePending', failed ? status.status_reason ?? 'Provisioning failed.' : ''),
  ];
}
