/**
 * Which subscriptions an event goes to (docs/api.md "Events"): `events` holds exact types
 * or `category.*`; `filter` keys are `<category>.<field>` and apply only to events of
 * their category; every key that applies must match; a value matches when it equals the
 * string, or is one of the array's strings.
 */
import type { CloudEvent } from '../resources/cloud-event';
import type { WebhookFilter } from '../resources/webhook';
import { categoryOf } from '../events/types';
import { fieldOf, scalarText } from '../lib/unknown-values';

export function typeMatches(patterns: string[], type: string): boolean {
  const category = categoryOf(type);
  return patterns.some((p) => p === type || p === '*' || (p.endsWith('.*') && p.slice(0, -2) === category));
}

export function filterMatches(filter: WebhookFilter | null | undefined, event: CloudEvent): boolean {
  if (!filter) return true;
  const category = categoryOf(event.type);
  for (const [key, expected] of Object.entries(filter)) {
    const dot = key.indexOf('.');
    if (key.slice(0, dot) !== category) continue;
    // An event from the bus was written by another process: its data may be missing.
    const value = scalarText(fieldOf(event.data, key.slice(dot + 1)));
    const allowed = Array.isArray(expected) ? expected : [expected];
    if (value === undefined || !allowed.includes(value)) return false;
  }
  return true;
}

export function subscriptionMatches(subscription: { events: string[]; filter: WebhookFilter | null }, event: CloudEvent): boolean {
  return typeMatches(subscription.events, event.type) && filterMatches(subscription.filter, event);
}
