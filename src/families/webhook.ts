/** Outbound webhook subscriptions and their delivery records; `cloudplane listen` streams are subscriptions too. */
import { deliveryFamily, webhookFamily, webhookSecretName } from '../resources/webhook';
import { LISTENER_RECORD_PREFIX } from '../webhooks/listener';
import { ownedByName } from '../store/record-kinds';
import { signingSecretFirst, WebhookSubscriptionReconciler } from '../webhooks/reconciler';
import { entryObjectName } from '../store/kubernetes/names';
import { registerWebhookRoutes } from '../api/routes/webhooks';
import { registerWebhookListenerRoutes } from '../api/routes/webhook-listeners';
import { registerWebhookDeliveryRoutes } from '../api/routes/webhook-deliveries';
import { familyModule } from './module';

export const webhookModule = familyModule({
  families: [webhookFamily, deliveryFamily],
  reconcilers: (deps) => [
    // A kubectl-made subscription gets its signing secret before adoption lets it deliver.
    signingSecretFirst(
      deps.adopt(webhookFamily, new WebhookSubscriptionReconciler(deps.store, deps.writer, deps.config.kubernetes ? entryObjectName : undefined)),
      deps.store,
    ),
  ],
  records: [
    // A subscription's signing secrets; a deleted subscription signs nothing.
    {
      prefix: webhookSecretName(''),
      sealed: true,
      owner: ownedByName(webhookFamily.kind, webhookSecretName('')),
      needs: (hook) => hook.status.status !== 'deleted',
    },
    // A listener's lease (`cloudplane listen`); a deleted listener has none.
    {
      prefix: LISTENER_RECORD_PREFIX,
      sealed: false,
      owner: ownedByName(webhookFamily.kind, LISTENER_RECORD_PREFIX),
      needs: (hook) => hook.status.status !== 'deleted',
    },
  ],
  routes: (app, ctx) => {
    registerWebhookRoutes(app, ctx);
    registerWebhookListenerRoutes(app, ctx);
    registerWebhookDeliveryRoutes(app, ctx);
  },
});
