/**
 * Webhook subscriptions and their delivery history. Every write settles the subscription's
 * state and configuration hash in the same request (which emits `webhook.updated` with the
 * caller as actor); its reconciler (webhooks/reconciler.ts) does the same only for what
 * kubectl changed. The signing secret is shown by create and rotate-secret only.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { listPage, listQueryOf, listQuerySchema } from '../list';
import { assertChangeable, envelopeOf, ErrorEnvelope, findForChange, findResource, principalOf, VERSIONED_CHANGE } from './families';
import { isVisible } from '../visible';
import { tagAnswer } from '../entity-tags';
import {
  Delivery,
  deliveryFamily,
  deliveryIdFor,
  DeliveryWithAttempts,
  deliveryWithAttempts,
  Webhook,
  webhookFamily,
  WebhookSpec,
} from '../../resources/webhook';
import { invalidState, notFound } from '../../lib/errors';
import { sameJson } from '../../lib/canonical-json';
import { newId } from '../../lib/ids';
import { nowIso } from '../../lib/time';
import { createSecret, deleteSecret, rotateSecret } from '../../webhooks/secrets';
import { settle } from '../../webhooks/subscription';
import { withinQuota } from '../../resources/quota';
import { deleteLease, isListener } from '../../webhooks/listener';
import { assertWindow, deliveryFilterOf } from './webhook-deliveries';
import { listedArray } from '../../store/listed';
import type { ApiApp } from '../api-app';
import { ruleContextOf } from '../../events/catalog';
import { textOf } from '../../lib/unknown-values';
import { known } from '../../lib/known';
import { recordOf } from '../../resources/record-of';

const errors = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  404: ErrorEnvelope,
  409: ErrorEnvelope,
  415: ErrorEnvelope,
  422: ErrorEnvelope,
  429: ErrorEnvelope,
  503: ErrorEnvelope,
};
/** A change of a subscription answers 412 too, when If-Match no longer holds. */
const changeErrors = { ...errors, ...VERSIONED_CHANGE.preconditionFailed };
const tags = ['webhook'];
/** The test delivery's event type: sent by ping to one subscription, never published on the bus. */
export const PING = 'webhook.ping';
const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Subscription id.' }) });
const DeliveryParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'Subscription id.' }),
  delivery_id: Type.String({ maxLength: 64, description: 'Delivery id.' }),
});
const Record_ = webhookFamily.schemas.record;
const RecoverWindow = Type.Object(
  {
    since: Type.String({ format: 'date-time', description: 'Deliveries created at or after this time.' }),
    until: Type.String({ format: 'date-time', description: 'Deliveries created before this time.' }),
  },
  { additionalProperties: false },
);
const DeliveryRecord = deliveryFamily.schemas.record;
export const WithSecret = Type.Object({
  ...Record_.properties,
  secret: Type.String({ description: 'The signing secret (`whsec_...`). Shown in this response only; store it now.' }),
});

function assertChangeableAnd(webhook: Webhook): Webhook {
  assertChangeable(webhookFamily, webhook);
  return webhook;
}

/** A listener's URL and secret are its CLI's: changing them would make it another subscription. */
function assertNotListener(webhook: Webhook): void {
  if (isListener(webhook)) throw invalidState('A listener is not changed; start `cloudplane listen` again for another one.');
}

export async function findDelivery(ctx: ApiContext, team: string, webhookId: string, deliveryId: string): Promise<Delivery> {
  const delivery = await ctx.store.get<Delivery['spec'], Delivery['status']>(deliveryFamily.kind, team, deliveryId);
  if (!delivery || !isVisible(delivery) || delivery.spec.webhook_id !== webhookId) throw notFound('delivery', deliveryId);
  return delivery;
}

/** The subscription and its first secret; the secret is made first, so no delivery is ever made unsigned. */
export async function createSubscription(
  ctx: ApiContext,
  team: string,
  spec: WebhookSpec,
  actor: string,
  id: string,
): Promise<{ webhook: Webhook; secret: string }> {
  const secret = await createSecret(ctx.store, team, id);
  try {
    return { webhook: (await ctx.writer.create(webhookFamily, team, spec, actor, id)) as Webhook, secret };
  } catch (err) {
    await deleteSecret(ctx.store, team, id);
    throw err;
  }
}

export function registerWebhookRoutes(app: ApiApp, ctx: ApiContext): void {
  const base = `/api/v1/${webhookFamily.path}`;
  const rules = ruleContextOf(ctx.config);

  // Its list and get are the generic ones (FamilyDefinition.standardRoutes 'reads'), with their watches.

  app.post(base, {
    schema: {
      tags,
      operationId: 'createWebhook',
      summary: 'Create a webhook subscription',
      description: 'The response holds the signing secret in `secret`, once.',
      body: webhookFamily.schemas.create,
      response: { 201: envelopeOf(WithSecret), ...errors },
    },
    handler: async (request, reply) => {
      const { team, key } = principalOf(request);
      const spec = webhookFamily.specFromCreate(request.body, rules);
      const id = newId(webhookFamily.idPrefix);
      const created = await withinQuota(ctx.quota, webhookFamily, team, id, () => createSubscription(ctx, team, spec, key, id));
      let webhook = created.webhook;
      if (!spec.active) webhook = await settle(ctx.writer, team, id, key);
      reply.header('Location', `${base}/${id}`);
      tagAnswer(reply, webhook);
      return send(ctx, request, reply, 201, { ...recordOf(webhookFamily, webhook), secret: created.secret });
    },
  });

  app.patch(`${base}/:id`, {
    schema: {
      tags,
      operationId: 'updateWebhook',
      summary: 'Update a webhook subscription',
      description: '`active: true` re-enables a subscription the service disabled and resets consecutive_failures.',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      body: known(webhookFamily.schemas.update, 'the update schema of a webhook'),
      response: { 200: envelopeOf(Record_), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const patch = request.body;
      const { found, ifMatch } = await findForChange<Webhook>(ctx, webhookFamily, request, id);
      assertNotListener(assertChangeableAnd(found));
      await ctx.writer.mutateSpec<Webhook>(
        webhookFamily,
        team,
        id,
        (current) => {
          assertChangeable(webhookFamily, current);
          if (!webhookFamily.applyUpdate) throw new Error('internal error: the update of a webhook is missing');
          const spec = webhookFamily.applyUpdate(current.spec, patch, rules);
          return sameJson(spec, current.spec) ? null : { ...spec };
        },
        key,
        ifMatch,
      );
      const updated = await settle(ctx.writer, team, id, key, patch.active === true);
      tagAnswer(reply, updated);
      return send(ctx, request, reply, 200, recordOf(webhookFamily, updated));
    },
  });

  app.delete(`${base}/:id`, {
    schema: {
      tags,
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook subscription',
      description: 'Deliveries stop at once; pending ones end as failed.',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(Record_), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const { ifMatch } = await findForChange(ctx, webhookFamily, request, id);
      const deleted = await ctx.writer.mutateStatus<Webhook>(
        webhookFamily,
        team,
        id,
        (current) => {
          ifMatch?.(current);
          return current.status.status === 'deleted' ? null : { status: 'deleted', deleted_at: nowIso() };
        },
        key,
      );
      // Nothing signs for a deleted subscription any more, and a deleted listener has no lease.
      await deleteSecret(ctx.store, team, id);
      if (isListener(deleted)) await deleteLease(ctx.store, team, id);
      tagAnswer(reply, deleted);
      return send(ctx, request, reply, 200, recordOf(webhookFamily, deleted));
    },
  });

  app.post(`${base}/:id/rotate-secret`, {
    schema: {
      tags,
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate the signing secret',
      description:
        'Returns the new secret in `secret`, once. The previous one keeps signing too for CLOUDPLANE_WEBHOOK_SECRET_OVERLAP_SECONDS (default 24 hours).',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(WithSecret), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      // The secret is kept beside the subscription, whose version it leaves as it is: If-Match is judged on the version found.
      const { found: webhook } = await findForChange<Webhook>(ctx, webhookFamily, request, id);
      assertNotListener(assertChangeableAnd(webhook));
      const secret = await rotateSecret(ctx.store, team, id, ctx.config.webhooks.secretOverlapMs);
      tagAnswer(reply, webhook);
      return send(ctx, request, reply, 200, { ...recordOf(webhookFamily, webhook), secret });
    },
  });

  app.get(`${base}/:id/deliveries`, {
    schema: {
      tags,
      operationId: 'listWebhookDeliveries',
      summary: 'Delivery history of a subscription',
      querystring: listQuerySchema(deliveryFamily.states),
      params: IdParams,
      response: { 200: envelopeOf(Type.Array(DeliveryRecord)), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      await findResource(ctx, webhookFamily, team, id);
      const query = listQueryOf(request);
      const { page, nextCursor } = await listPage(ctx.store, deliveryFamily, team, query, ctx.cursorKey, { where: { webhook_id: id } });
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((d) => recordOf(deliveryFamily, d)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`${base}/:id/deliveries/:delivery_id`, {
    schema: {
      tags,
      operationId: 'getWebhookDelivery',
      summary: 'Get a delivery',
      description: "With `attempts`: each attempt's time, status code, latency, the first KiB of the answer and the error (the latest 20 attempts).",
      params: DeliveryParams,
      response: { 200: envelopeOf(DeliveryWithAttempts), ...errors },
    },
    handler: async (request, reply) => {
      const { id, delivery_id } = request.params;
      const { team } = principalOf(request);
      await findResource(ctx, webhookFamily, team, id);
      return send(ctx, request, reply, 200, deliveryWithAttempts(await findDelivery(ctx, team, id, delivery_id)));
    },
  });

  app.post(`${base}/:id/deliveries/:delivery_id/retry`, {
    schema: {
      tags,
      operationId: 'retryWebhookDelivery',
      summary: 'Retry a delivery now',
      description:
        'Makes one more attempt at once (202; the delivery is pending until it is made). A pending delivery keeps its schedule afterwards; a finished one gets this one attempt only.',
      params: DeliveryParams,
      response: { 202: envelopeOf(DeliveryWithAttempts), ...errors },
    },
    handler: async (request, reply) => {
      const { id, delivery_id } = request.params;
      const { team, key } = principalOf(request);
      await findResource(ctx, webhookFamily, team, id);
      await findDelivery(ctx, team, id, delivery_id);
      // The dispatcher watches the store: a pending delivery due now is sent now.
      const delivery = await ctx.writer.mutateStatus<Delivery>(
        deliveryFamily,
        team,
        delivery_id,
        (current) => ({ status: 'pending', next_retry_at: nowIso(), single_attempt: current.status.status !== 'pending' }),
        key,
      );
      return send(ctx, request, reply, 202, deliveryWithAttempts(delivery));
    },
  });

  app.post(`${base}/:id/ping`, {
    schema: {
      tags,
      operationId: 'pingWebhook',
      summary: 'Send a test delivery',
      description:
        'Sends a `webhook.ping` event to this subscription only (202 with the delivery; its id is `data.id`), signed and retried like any other and kept in its delivery history. The event is not published: no other subscription and not the audit log get it. 409 `invalid_state` unless the subscription is active.',
      params: IdParams,
      response: { 202: envelopeOf(DeliveryWithAttempts), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const webhook = await findResource<Webhook>(ctx, webhookFamily, team, id);
      if (webhook.status.status !== 'active') throw invalidState(`The subscription is ${webhook.status.status}; a ping is sent to an active one only.`);
      const event = { id: newId('evt'), type: PING, created_at: nowIso(), team_id: team, actor: key, data: { subscription_id: id, url: webhook.spec.url } };
      // The dispatcher watches the store: a new pending delivery is sent at once.
      const spec = { webhook_id: id, event_id: event.id, event_type: PING, body: JSON.stringify(event) };
      const delivery = (await ctx.writer.create(deliveryFamily, team, spec, key, deliveryIdFor(id, event.id))) as Delivery;
      reply.header('Location', `${base}/${id}/deliveries/${delivery.meta.id}`);
      return send(ctx, request, reply, 202, deliveryWithAttempts(delivery));
    },
  });

  app.post(`${base}/:id/recover`, {
    schema: {
      tags,
      operationId: 'recoverWebhook',
      summary: 'Re-queue the failed deliveries of a time window',
      description:
        "Every delivery of this subscription created in [since, until) that is `failed` gets one more attempt, as a background task: 202 answers the deliveries found (as found, `failed`); each turns `pending` as the task reaches it and is sent at the subscription's rate limit. Safe to call twice: a delivery already re-queued is `pending`, not `failed`, and is not queued again. Progress: `GET /api/v1/webhook-deliveries?subscription_id=<id>&status=failed&since=...&until=...` empties as deliveries are re-queued and stays empty unless one fails again.",
      params: IdParams,
      body: RecoverWindow,
      response: { 202: envelopeOf(Type.Array(DeliveryRecord)), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const { since, until } = request.body;
      assertWindow(since, until);
      assertChangeableAnd(await findResource<Webhook>(ctx, webhookFamily, team, id));
      // The subscription's failed deliveries of the window, oldest first, from the indexes.
      const failed = await listedArray<Delivery['spec'], Delivery['status']>(ctx.store, deliveryFamily.kind, team, {
        status: 'failed',
        ...deliveryFilterOf({ subscription_id: id, since, until }),
      });
      void requeue(ctx, team, failed, key);
      return send(
        ctx,
        request,
        reply,
        202,
        failed.map((d) => recordOf(deliveryFamily, d)),
        { next_cursor: null },
      );
    },
  });
}

/**
 * The recover task: each failed delivery, oldest first, gets one more attempt (as a manual
 * retry of a finished one does). A delivery found pending (re-queued by a call before) is
 * left alone, so two calls queue it once. The dispatcher watches the store and sends them.
 */
async function requeue(ctx: ApiContext, team: string, deliveries: Delivery[], actor: string): Promise<void> {
  for (const delivery of deliveries) {
    try {
      await ctx.writer.mutateStatus<Delivery>(
        deliveryFamily,
        team,
        delivery.meta.id,
        (current) => (current.status.status === 'failed' ? { status: 'pending', next_retry_at: nowIso(), single_attempt: true } : null),
        actor,
      );
    } catch (err) {
      // Gone (retention) or the store failed: calling recover again picks up what is still failed.
      ctx.logger.warn({ delivery_id: delivery.meta.id, err: textOf(err) }, 'webhook recover: a delivery could not be re-queued');
    }
  }
}
