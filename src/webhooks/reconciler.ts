/**
 * WebhookSubscription custom resources made with kubectl (cluster mode), taken in like
 * every other family's: adoption (controllers/adoption.ts) judges the spec by the create
 * rules (an address the target guard refuses ends `failed`), and this reconciler settles
 * the state that a kubectl edit of the spec calls for, and finishes a kubectl delete as
 * the API's DELETE does. The signing secret is made before adoption writes the first
 * status, so no delivery is ever made unsigned (as the API makes it before the resource);
 * it lives in the store secret, a Kubernetes Secret whose name the status gives, never in
 * the custom resource, a log line or an event. The API's own subscriptions pass through
 * here too and find nothing to do: their secret exists and their state is settled.
 */
import type { Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import type { ReconcileResult, Reconciler } from '../controllers/controller';
import { Webhook, webhookFamily, webhookSecretName } from '../resources/webhook';
import { nowIso } from '../lib/time';
import { deleteSecret, ensureSecret } from './secrets';
import { settle } from './subscription';

const ACTOR = 'system';
/**
 * How long a spec change written moments ago is left to the API request that wrote it:
 * that request settles it itself, and its event then names the caller, not `system`. A
 * kubectl edit leaves the store's updated-at as it was, so it is settled at once.
 */
const API_SETTLE_GRACE_MS = 2_000;

export class WebhookSubscriptionReconciler implements Reconciler {
  readonly kind = webhookFamily.kind;

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
    /** Cluster mode: the Kubernetes Secret name of a store secret, shown in the status. */
    private readonly secretObjectName?: (storeName: string) => string,
  ) {}

  async reconcile(team: string, id: string): Promise<ReconcileResult | void> {
    const webhook = (await this.store.get(this.kind, team, id)) as Webhook | undefined;
    if (!webhook?.status?.status) return;
    if (webhook.meta.deletionTimestamp) return this.finishDeletion(webhook);
    if (webhook.status.status === 'deleted' || webhook.status.status === 'failed') return;
    const sinceWrite = Date.now() - Date.parse(webhook.meta.updatedAt);
    const unsettled = webhook.meta.generation !== webhook.status.observed_generation;
    if (unsettled && sinceWrite >= 0 && sinceWrite < API_SETTLE_GRACE_MS) return { requeueAfterMs: API_SETTLE_GRACE_MS - sinceWrite };
    const named = this.secretObjectName ? { signing_secret_name: this.secretObjectName(webhookSecretName(id)) } : {};
    await settle(this.writer, team, id, ACTOR, false, named);
  }

  /** A kubectl delete: deliveries stop and the secret goes, as with DELETE; the retention sweep removes the record later. */
  private async finishDeletion(webhook: Webhook): Promise<void> {
    const { team, id } = webhook.meta;
    if (webhook.status.status !== 'deleted') {
      await this.writer.mutateStatus<Webhook>(webhookFamily, team, id, (current) => (current.status.status === 'deleted' ? null : { status: 'deleted', deleted_at: nowIso() }), ACTOR);
    }
    await deleteSecret(this.store, team, id);
  }
}

/**
 * Makes the signing secret of a live subscription that has none before `inner` (adoption)
 * sees it. Never writes over one: the API's secret, made first, is found and kept.
 */
export function signingSecretFirst(inner: Reconciler, store: Store): Reconciler {
  return {
    kind: inner.kind,
    async reconcile(team: string, id: string): Promise<ReconcileResult | void> {
      const webhook = (await store.get(webhookFamily.kind, team, id)) as Webhook | undefined;
      const live = webhook && !webhook.meta.deletionTimestamp && !['deleted', 'failed'].includes(webhook.status?.status);
      if (live) await ensureSecret(store, team, id);
      return inner.reconcile(team, id);
    },
  };
}
