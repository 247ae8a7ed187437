/** Outbound webhook subscriptions and their delivery records; `cloudplane listen` streams are subscriptions too. */
import { deliveryFamily, webhookFamily } from '../resources/webhook';
import { signingSecretFirst, WebhookSubscriptionReconciler } from '../webhooks/reconciler';
import { secretObjectName } from '../store/kubernetes/names';
import { registerWebhookRoutes } from '../api/routes/webhooks';
import { registerWebhookListenerRoutes } from '../api/routes/webhook-listeners';
import { registerWebhookDeliveryRoutes } from '../api/routes/webhook-deliveries';
import { familyModule } from './module';

export const webhookModule = familyModule({
  families: [webhookFamily, deliveryFamily],
  reconcilers: (deps) => [
    // A kubectl-made subscription gets its signing secret before adoption lets it deliver.
    signingSecretFirst(
      deps.adopt(webhookFamily, new WebhookSubscriptionReconciler(deps.store, deps.writer, deps.config.kubernetes ? secretObjectName : undefined)),
      deps.store,
    ),
  ],
  routes: (app, ctx) => {
    registerWebhookRoutes(app, ctx);
    registerWebhookListenerRoutes(app, ctx);
    registerWebhookDeliveryRoutes(app, ctx);
  },
});
