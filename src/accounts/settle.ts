/**
 * Settling a change of an account record's spec (team, user, API key): the status takes
 * the new generation and configuration hash, which emits `<family>.updated`. The API's
 * update settles its own change in the same request, naming the caller; the account
 * reconciler (accounts/reconciler.ts) settles what kubectl changed, naming `system`.
 */
import type { AnyFamily, Resource } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import { configHash } from '../resources/transitions';

/** A judgement of one generation of the spec: `refusal` is the rule it breaks, or null. */
export interface Judgement {
  generation: number;
  refusal: string | null;
}

/**
 * Settles the latest spec. With a `judgement` (the reconciler's) only the generation that
 * was judged: a refused one is observed without its configuration, so no `.updated` is
 * emitted and status_reason says why; a newer one waits for its own judgement.
 */
export function settleAccount<R extends Resource = Resource>(
  writer: ResourceWriter,
  family: AnyFamily,
  team: string,
  id: string,
  actor: string,
  judgement?: Judgement,
): Promise<Resource<R['spec'], R['status']>> {
  return writer.mutateStatus<R>(
    family,
    team,
    id,
    (current) => {
      if (judgement && judgement.generation !== current.meta.generation) return null;
      const refusal = judgement?.refusal ?? null;
      const { status } = current;
      const observedConfig = refusal ? status.observed_config : configHash(family, current.spec);
      const same =
        unchanged(status.observed_generation, current.meta.generation) &&
        unchanged(status.observed_config, observedConfig) &&
        // The API judged its patch, not the whole record: a reconciler's report stays until a judgement clears it.
        (!judgement || unchanged(status.status_reason, refusal));
      if (same) return null;
      return { observed_generation: current.meta.generation, observed_config: observedConfig, ...(judgement ? { status_reason: refusal } : {}) };
    },
    actor,
  );
}

/** A status field that already holds the value to write (a missing one holds null). */
const unchanged = (held: unknown, value: unknown) => (held ?? null) === value;
