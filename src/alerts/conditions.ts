/**
 * What each type of alert condition reads: the resources it holds for now, from the store
 * (the state the reconcilers observed), so that evaluation is level-triggered like every
 * reconciler: a missed change or a restart is caught up by the next evaluation.
 */
import type { Store } from '../store/types';
import type { Resource } from '../resources/family';
import type { AlertCondition, AlertPolicy, ConditionType } from '../resources/alert';
import { WATCHED_FAMILIES } from '../resources/alert';
import { familyByName } from '../resources/registry';
import type { Job } from '../resources/job';
import type { LoadBalancer } from '../resources/load-balancer';
import type { VpnGateway } from '../resources/vpn-gateway';
import type { Webhook } from '../resources/webhook';
import { asStored } from '../resources/family';

/** One resource a condition holds for. */
export interface Holding {
  resource_id: string;
  detail: string;
  /** A job failure: the failed run's finish time, which identifies the failure. */
  failed_at?: string;
}

interface ConditionReader {
  /** Kinds whose changes can change what the condition holds for. */
  kinds: string[];
  holding(store: Store, policy: AlertPolicy): Promise<Holding[]>;
  /**
   * A condition that is an occurrence rather than a state (a job's failure stays in its
   * record forever): resolving its incident by hand resolves its alert, and the same
   * occurrence does not fire again.
   */
  occurrence?: boolean;
}

const live = (r: Resource) => !['deleted', 'destroyed', 'deleting'].includes(r.status.status) && !r.meta.deletionTimestamp;

/** `R`: the family's resource type, which the store's objects of `kind` have. */
async function resourcesOf<R extends Resource>(
  store: Store,
  kind: string,
  team: string,
  condition: AlertCondition,
): Promise<Resource<R['spec'], R['status']>[]> {
  if (condition.resource_id) {
    const one = await store.get<R['spec'], R['status']>(kind, team, condition.resource_id);
    return one?.status.status ? [one] : [];
  }
  return (await store.list<R['spec'], R['status']>(kind, team)).filter((r) => r.status.status);
}

const kindOf = (name: string) => familyByName(name).kind;
const watchedFamilies = (condition: AlertCondition) => (condition.family ? [condition.family] : [...WATCHED_FAMILIES]);

const READERS: Record<ConditionType, ConditionReader> = {
  backend_unhealthy: {
    kinds: [kindOf('load_balancer')],
    async holding(store, { meta, spec }) {
      const lbs = await resourcesOf<LoadBalancer>(store, kindOf('load_balancer'), meta.team, spec.condition);
      return lbs.filter(live).flatMap((lb) => {
        const unhealthy = (asStored(lb.status).backends ?? []).filter((b) => b.status === 'unhealthy').map((b) => b.server_id);
        return unhealthy.length > 0 ? [{ resource_id: lb.meta.id, detail: `backend${unhealthy.length > 1 ? 's' : ''} ${unhealthy.join(', ')} unhealthy` }] : [];
      });
    },
  },
  tunnel_down: {
    kinds: [kindOf('vpn_gateway')],
    async holding(store, { meta, spec }) {
      const gateways = await resourcesOf<VpnGateway>(store, kindOf('vpn_gateway'), meta.team, spec.condition);
      return gateways
        .filter((g) => g.status.status === 'active' && g.status.tunnel_status === 'down')
        .map((g) => ({ resource_id: g.meta.id, detail: 'tunnel down' }));
    },
  },
  resource_failed: {
    kinds: WATCHED_FAMILIES.map(kindOf),
    async holding(store, { meta, spec }) {
      const found = await Promise.all(watchedFamilies(spec.condition).map((name) => resourcesOf(store, kindOf(name), meta.team, spec.condition)));
      return found
        .flat()
        .filter((r) => live(r) && r.status.status === 'failed')
        .map((r) => ({ resource_id: r.meta.id, detail: `failed${r.status.status_reason ? `: ${r.status.status_reason}` : ''}` }));
    },
  },
  job_failed: {
    kinds: [kindOf('job')],
    occurrence: true,
    async holding(store, policy) {
      const { meta, spec, status } = policy;
      const wanted = spec.condition.resource_id;
      const jobs = (await store.list<Job['spec'], Job['status']>(kindOf('job'), meta.team)).filter(
        (j) => j.status.finished_at && ['failed', 'completed'].includes(j.status.status),
      );
      // A run counts as its scheduled job: the alert is about the job, a later run that completes clears it.
      const latest = new Map<string, { job: Job; finishedAt: string }>();
      for (const job of jobs) {
        const target = job.spec.scheduled_job_id ?? job.meta.id;
        if (wanted && target !== wanted) continue;
        // The list holds finished jobs only; history from before the policy is not news.
        const finishedAt = job.status.finished_at;
        if (!finishedAt || finishedAt < meta.createdAt) continue;
        const seen = latest.get(target);
        if (!seen || seen.finishedAt < finishedAt) latest.set(target, { job, finishedAt });
      }
      return [...latest]
        .filter(([target, { job, finishedAt }]) => job.status.status === 'failed' && (asStored(status).handled?.[target] ?? '') < finishedAt)
        .map(([target, { job, finishedAt }]) => ({
          resource_id: target,
          failed_at: finishedAt,
          detail: `${job.meta.id === target ? 'failed' : `run ${job.meta.id} failed`}${job.status.exit_code !== null ? ` with exit code ${job.status.exit_code}` : ''}`,
        }));
    },
  },
  webhook_disabled: {
    kinds: [kindOf('webhook')],
    async holding(store, { meta, spec }) {
      const hooks = await resourcesOf<Webhook>(store, kindOf('webhook'), meta.team, spec.condition);
      return hooks
        .filter((h) => h.status.status === 'inactive' && h.status.disabled_reason)
        .map((h) => ({ resource_id: h.meta.id, detail: `disabled: ${h.status.disabled_reason}` }));
    },
  },
};

export const readerOf = (condition: AlertCondition): ConditionReader => READERS[condition.type];

/** Every kind some condition reads. */
export const WATCHED_KINDS = [...new Set(Object.values(READERS).flatMap((r) => r.kinds))];
