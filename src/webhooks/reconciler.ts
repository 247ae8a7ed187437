/**
 * WebhookSubscription custom resources made with kubectl (cluster mode), taken in like
 * every other family's: adoption (controllers/adoption.ts) judges the spec by the create
 * rules (an address the target guard refuses ends `failed`), and this reconciler settles
 * the state that a kubectl edit of the spec calls for (an edit naming events or filter
 * fields the event catalog lacks ends `failed` too), and finishes a kubectl delete as
 * the API's DELETE does. The signing secret is made before adoption writes the first
 * status, so no delivery is ever made unsigned (as the API makes it before the resource);
 * it lives in the store secret, a Kubernetes Secret whose name the status gives, never in
 * the custom resource, a log line or an event. The API's own subscriptions pass through
 * here too and find nothing to do: their secret exists and their state is settled.
 */
import type { Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { decorating, ReconcileResult, Reconciler } from '../controllers/controller';
import { subscriptionRuleProblems, Webhook, webhookFamily, webhookSecretName } from '../resources/webhook';
import { validationFailed } from '../lib/errors';
import { nowIso } from '../lib/time';
import { deleteSecret, ensureSecret } from './secrets';
import { settle } from './subscription';
import { apiSettleWait } from '../controllers/api-settle-grace';
import { deleteLease, isListener, leaseExpiry } from './listener';
import { subscriptionProblems } from '../events/catalog';

const ACTOR = 'system';
/** A renewal on its way as the lease is read is not taken for a lapse. */
const LEASE_SLACK_MS = 250;

export class WebhookSubscriptionReconciler implements Reconciler {
  readonly kind = webhookFamily.kind;

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
    /** Cluster mode: the Kubernetes Secret name of a store secret, shown in the status. */
    private readonly secretObjectName?: (storeName: string) => string,
  ) {}

  async reconcile(team: string, id: string): Promise<ReconcileResult | undefined> {
    const webhook = await this.store.get<Webhook['spec'], Webhook['status']>(this.kind, team, id);
    if (!webhook?.status.status) return;
    if (webhook.meta.deletionTimestamp) {
      await this.finishDeletion(webhook);
      return;
    }
    if (webhook.status.status === 'deleted' || webhook.status.status === 'failed') return;
    // A change written moments ago is the API request's to settle, with the caller as actor.
    const wait = apiSettleWait(webhook);
    if (wait > 0) return { requeueAfterMs: wait };
    if (webhook.meta.generation > webhook.status.observed_generation && (await this.refusedEdit(webhook))) return;
    const named = this.secretObjectName ? { signing_secret_name: this.secretObjectName(webhookSecretName(id)) } : {};
    await settle(this.writer, team, id, ACTOR, false, named, webhook.meta.generation);
    if (isListener(webhook)) return this.reapLapsed(webhook);
  }

  /**
   * A kubectl edit is judged by the rules the API's create applies to `events` and `filter`
   * (types and fields the event catalog has), since no admission webhook refused it: one
   * they break ends the subscription `failed` with the reason, as adoption does a refused
   * manifest, and a fixed manifest is adopted again. Answers whether it was refused.
   */
  private async refusedEdit(webhook: Webhook): Promise<boolean> {
    const problems = subscriptionRuleProblems(webhook.spec.events, webhook.spec.filter, subscriptionProblems);
    if (problems.length === 0) return false;
    await this.writer.initialize(webhookFamily, webhook, ACTOR, validationFailed(problems).message);
    return true;
  }

  /** A listener lives while its lease is renewed (a CLI holds its stream); once it lapses, it is deleted. */
  private async reapLapsed(webhook: Webhook): Promise<ReconcileResult | undefined> {
    const { team, id } = webhook.meta;
    const left = (await leaseExpiry(this.store, team, id)) - Date.now();
    if (left > 0) return { requeueAfterMs: left + LEASE_SLACK_MS };
    await this.writer.mutateStatus<Webhook>(
      webhookFamily,
      team,
      id,
      (current) => (current.status.status === 'deleted' ? null : { status: 'deleted', deleted_at: nowIso() }),
      ACTOR,
    );
    await deleteSecret(this.store, team, id);
    await deleteLease(this.store, team, id);
  }

  /** A kubectl delete: deliveries stop and the secret goes, as with DELETE; the retention sweep removes the record later. */
  private async finishDeletion(webhook: Webhook): Promise<void> {
    const { team, id } = webhook.meta;
    if (isListener(webhook)) await deleteLease(this.store, team, id);
    if (webhook.status.status !== 'deleted') {
      await this.writer.mutateStatus<Webhook>(
        webhookFamily,
        team,
        id,
        (current) => (current.status.status === 'deleted' ? null : { status: 'deleted', deleted_at: nowIso() }),
        ACTOR,
      );
    }
    await deleteSecret(this.store, team, id);
  }
}

/**
 * Makes the signing secret of a live subscription that has none before `inner` (adoption)
 * sees it. Never writes over one: the API's secret, made first, is found and kept.
 */
export function signingSecretFirst(inner: Reconciler, store: Store): Reconciler {
  return decorating(inner, async (team: string, id: string): Promise<ReconcileResult | undefined> => {
    const webhook = await store.get<Webhook['spec'], Webhook['status']>(webhookFamily.kind, team, id);
    const live = webhook && !webhook.meta.deletionTimestamp && !['deleted', 'failed'].includes(webhook.status.status);
    if (live) await ensureSecret(store, team, id);
    return inner.reconcile(team, id);
  });
}
