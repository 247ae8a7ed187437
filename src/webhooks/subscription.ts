/**
 * A subscription's state follows its spec and the service's own verdict (an auto-disable).
 * Settled by the API in the request that changes the spec, and by the subscription
 * reconciler for a change made with kubectl; whichever comes second finds nothing to do.
 */
import type { ResourceWriter } from '../resources/writer';
import { configHash } from '../resources/transitions';
import { Webhook, webhookFamily } from '../resources/webhook';

/** The state the spec and the service's own verdict call for. */
export function stateOf(webhook: Webhook): 'active' | 'inactive' | 'deleted' | 'failed' {
  if (webhook.status.status === 'deleted' || webhook.status.status === 'failed') return webhook.status.status;
  return webhook.spec.active && !webhook.status.disabled_reason ? 'active' : 'inactive';
}

/**
 * Brings status in line with the spec just written: state, and the hash whose change is
 * `webhook.updated`. `judgedGeneration` (the reconciler's): only that generation of the
 * spec is settled; a newer one written meanwhile waits for its own judgement.
 */
export function settle(
  writer: ResourceWriter,
  team: string,
  id: string,
  actor: string,
  reenable = false,
  extra: Record<string, unknown> = {},
  judgedGeneration?: number,
): Promise<Webhook> {
  return writer.mutateStatus<Webhook>(
    webhookFamily,
    team,
    id,
    (current) => {
      if (judgedGeneration !== undefined && current.meta.generation !== judgedGeneration) return null;
      const reset =
        reenable && current.status.status !== 'deleted'
          ? { disabled_reason: null, consecutive_failures: 0, last_error: null, next_retry_at: null, failures_before_disable: null }
          : {};
      const next: Webhook = { ...current, status: { ...current.status, ...reset } };
      const changes = {
        ...reset,
        ...extra,
        status: stateOf(next),
        observed_config: configHash(webhookFamily, { ...current.spec }),
        observed_generation: current.meta.generation,
      };
      const recorded: Record<string, unknown> = { ...current.status };
      const same = Object.entries(changes).every(([k, v]) => recorded[k] === v);
      return same ? null : changes;
    },
    actor,
  );
}
