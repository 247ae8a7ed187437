/**
 * The event envelope of docs/api.md: what a committed change of a resource produces
 * (transitions.ts buildEvents, into the record's outbox) and what the event bus carries
 * (events/types.ts).
 */
export interface CloudEvent {
  /** `evt_...`; the bus drops a second publish of the same id. */
  id: string;
  /** `<family>.<state or verb>`, e.g. `load_balancer.running`. */
  type: string;
  created_at: string;
  team_id: string;
  /** Who caused it: an API key id, a user id, or `system` for the reconcilers. */
  actor: string;
  /** The resource as the API shows it at that moment, without secrets. */
  data: Record<string, unknown>;
}
