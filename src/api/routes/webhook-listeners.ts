/**
 * Listeners of `cloudplane listen` (webhooks/listener.ts): made here with their secret
 * (shown once), their deliveries streamed as server-sent events to the CLI holding
 * GET /webhooks/{id}/stream, and each attempt's answer reported back by the CLI. Listing,
 * the delivery history, manual retry and DELETE are the subscriptions' own routes.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { assertChangeable, envelopeOf, ErrorEnvelope, findResource, principalOf } from './families';
import { createSubscription, findDelivery, WithSecret } from './webhooks';
import {
  DeliveryWithAttempts,
  deliveryWithAttempts,
  DEFAULT_RATE_LIMIT_PER_MINUTE,
  assertSubscription,
  Events,
  Filter,
  Webhook,
  webhookFamily,
  WebhookSpec,
} from '../../resources/webhook';
import { eventCategories, subscriptionProblems } from '../../events/catalog';
import { invalidState } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { holdsQuota, withinLimit, withinQuota } from '../../resources/quota';
import type { QuotaRule } from '../../resources/quota-ledger';
import { listedObjects } from '../../store/listed';
import { claimLease, isListener, listenerUrl } from '../../webhooks/listener';
import { ListenerHub, ListenerStream } from '../../webhooks/listener-hub';
import { EventStream } from '../event-stream';
import { recordAttempt } from '../../webhooks/outcome';
import type { AttemptResult } from '../../webhooks/sender';
import type { ApiApp } from '../api-app';
import { textOf } from '../../lib/unknown-values';
import { recordOf } from '../../resources/record-of';

const errors = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  404: ErrorEnvelope,
  409: ErrorEnvelope,
  415: ErrorEnvelope,
  422: ErrorEnvelope,
  429: ErrorEnvelope,
  503: ErrorEnvelope,
};
const tags = ['webhook'];
const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Listener (subscription) id.' }) });
const DeliveryParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'Listener (subscription) id.' }),
  delivery_id: Type.String({ maxLength: 64, description: 'Delivery id.' }),
});
const CreateListener = Type.Object(
  {
    events: Type.Optional(Events),
    filter: Type.Optional(Filter),
    forward_to: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        description: "Where the CLI forwards deliveries; shown in the listener's url as `listen:<forward_to>`, never called by the service.",
      }),
    ),
  },
  { additionalProperties: false },
);
const MAX_ERROR_LENGTH = 500;
const Answer = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1, description: 'The attempt number the stream gave with the delivery.' }),
    response_status: Type.Union([Type.Integer({ minimum: 100, maximum: 599 }), Type.Null()], {
      description: "The local receiver's HTTP status; null when it gave none.",
    }),
    error: Type.Optional(
      Type.Union([Type.String({ maxLength: MAX_ERROR_LENGTH }), Type.Null()], { description: 'Why no answer came (connection refused, timeout).' }),
    ),
    retry_after: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()], { description: "The receiver's Retry-After header, on 429 or 503." })),
  },
  { additionalProperties: false },
);
/** Small: an answer is a status and a short reason. */
const ANSWER_BODY_LIMIT = 4096;

/**
 * The listeners quota (`webhook_listener`): the listeners among the team's webhooks, which
 * count toward the webhook quota as well. Counted by walking the team's webhooks, which
 * the webhook quota bounds.
 */
const listenerQuota: QuotaRule<WebhookSpec> = {
  quota: 'webhook_listener',
  family: webhookFamily,
  title: 'webhook listener',
  holds: (object) => isListener(object) && holdsQuota(webhookFamily, object),
  held: async (store, team) => {
    let held = 0;
    for await (const webhook of listedObjects<WebhookSpec, Webhook['status']>(store, webhookFamily.kind, team, {})) if (listenerQuota.holds(webhook)) held++;
    return held;
  },
};

/** Every category of event: a listener without `events` gets them all, as `stripe listen` does. */
const allEvents = () => eventCategories().map((category) => `${category}.*`);

interface AnswerBody {
  attempt: number;
  response_status: number | null;
  error?: string | null;
  retry_after?: string | null;
}

/**
 * One event of the stream as a client's SSE parser sees it (OpenAPI 3.0/3.1 describe a
 * text/event-stream response by the schema of each event): its name, its JSON text, and
 * for deliveries the delivery id as the event id.
 */
const StreamEvent = Type.Object({
  event: Type.String({ enum: ['ready', 'delivery', 'closed'] }),
  data: Type.String({ description: 'JSON: {listener_id, lease_seconds} for ready, the attempt for delivery, {reason} for closed.' }),
  id: Type.Optional(Type.String({ description: 'The delivery id, on delivery events.' })),
});

/** Deliveries that may wait for a slow CLI, in bytes: a few of the largest bodies, then the stream is cut and the CLI reconnects. */
const LISTENER_STREAM_BUFFER_BYTES = 8 * 1024 * 1024;

export function registerWebhookListenerRoutes(app: ApiApp, ctx: ApiContext): void {
  const base = `/api/v1/${webhookFamily.path}`;
  const hub = new ListenerHub({ store: ctx.store, writer: ctx.writer, config: ctx.config.webhooks, logger: ctx.logger });
  // Before the server waits for its connections to end: a stream never would by itself.
  app.addHook('preClose', () => {
    hub.close();
  });

  app.post(`${base}/listeners`, {
    schema: {
      tags,
      operationId: 'createWebhookListener',
      summary: 'Create a listener (cloudplane listen)',
      description:
        'A temporary subscription whose deliveries go to the CLI holding its stream instead of an HTTP POST. The response holds the signing secret in `secret`, once. It lives while a stream renews its lease (CLOUDPLANE_WEBHOOK_LISTENER_LEASE_SECONDS) and is deleted once the lease lapses.',
      body: CreateListener,
      response: { 201: envelopeOf(WithSecret), ...errors },
    },
    handler: async (request, reply) => {
      const { team, key } = principalOf(request);
      const body = request.body;
      assertSubscription(body.events, body.filter, subscriptionProblems);
      const spec: WebhookSpec = {
        url: listenerUrl(body.forward_to),
        events: body.events ?? allEvents(),
        filter: body.filter ?? null,
        active: true,
        rate_limit_per_minute: DEFAULT_RATE_LIMIT_PER_MINUTE,
      };
      const id = newId(webhookFamily.idPrefix);
      // The lease first: the reaper never finds a listener without one, and a CLI has a lease's time to attach.
      await claimLease(ctx.store, team, id, '', ctx.config.webhooks.listenerLeaseMs);
      const created = await withinQuota(ctx.quota, webhookFamily, team, id, () =>
        withinLimit(ctx.quota, listenerQuota, team, id, () => createSubscription(ctx, team, spec, key, id)),
      );
      reply.header('Location', `${base}/${id}`);
      return send(ctx, request, reply, 201, { ...recordOf(webhookFamily, created.webhook), secret: created.secret });
    },
  });

  app.get(`${base}/:id/stream`, {
    // Attaching takes the listener over from its holder and receives deliveries signed with
    // its secret: as much as making the listener, so a read_only key or a viewer may not.
    config: { actsAsWrite: true },
    schema: {
      tags,
      operationId: 'streamWebhookListener',
      summary: "A listener's deliveries, as server-sent events",
      description:
        "text/event-stream: `ready` once, then one `delivery` event per attempt ({delivery_id, attempt, event_type, timeout_ms, headers, body}: the exact headers and body an HTTP attempt would carry, signed with the listener's secret), comments as keep-alives, and `closed` ({reason}) before the service ends it. Holding it renews the lease; a newer stream of the same listener takes over.",
      params: IdParams,
      response: { 200: { description: 'The event stream.', content: { 'text/event-stream': { schema: StreamEvent } } }, ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const listener = await findListener(ctx, principalOf(request).team, id);
      // The hub sends keep-alives itself, every third of the lease.
      const sink = new EventStream(request, reply, { keepAliveMs: 0, bufferBytes: LISTENER_STREAM_BUFFER_BYTES, logLevel: ctx.config.requestLogLevel });
      let stream: ListenerStream | null = null;
      // Registered first: a client gone while the stream starts must not leave it renewing the lease.
      sink.onClose(() => stream?.end('the client went away'));
      try {
        stream = await hub.attach(listener, sink);
      } catch (err) {
        ctx.logger.error({ webhook_id: id, err: textOf(err) }, 'a listener stream could not start');
        sink.end('the stream could not start; reconnect');
        return;
      }
      if (sink.closed) stream.end('the client went away');
    },
  });

  app.post(`${base}/:id/deliveries/:delivery_id/answer`, {
    bodyLimit: ANSWER_BODY_LIMIT,
    schema: {
      tags,
      operationId: 'answerWebhookListenerDelivery',
      summary: "Report a listener delivery's answer",
      description:
        "The CLI reports what its local receiver answered to the attempt the stream gave it; the delivery is recorded like an HTTP attempt (2xx succeeded; otherwise retried on the schedule). 409 invalid_state when that attempt's outcome is already recorded (e.g. it timed out).",
      params: DeliveryParams,
      body: Answer,
      response: { 200: envelopeOf(DeliveryWithAttempts), ...errors },
    },
    handler: async (request, reply) => {
      const { id, delivery_id } = request.params;
      const { team } = principalOf(request);
      await findListener(ctx, team, id);
      const delivery = await findDelivery(ctx, team, id, delivery_id);
      const answer = request.body;
      if (delivery.status.status !== 'pending' || delivery.status.attempt + 1 !== answer.attempt) throw answered();
      if (!(await recordAttempt(ctx.writer, ctx.config.webhooks, delivery, resultOf(answer), Date.now()))) throw answered();
      return send(ctx, request, reply, 200, deliveryWithAttempts(await findDelivery(ctx, team, id, delivery_id)));
    },
  });
}

const answered = () => invalidState("This attempt's outcome is already recorded.");

async function findListener(ctx: ApiContext, team: string, id: string): Promise<Webhook> {
  const webhook = await findResource<Webhook>(ctx, webhookFamily, team, id);
  assertChangeable(webhookFamily, webhook);
  if (!isListener(webhook)) throw invalidState('This subscription is not a listener; its deliveries are POSTed to its URL.');
  return webhook;
}

/** The receiver's answer as the record of an HTTP attempt would read. */
function resultOf(answer: AnswerBody): AttemptResult {
  const status = answer.response_status;
  if (status !== null && status >= 200 && status < 300) return { ok: true, status, error: null };
  const retryAfter = answer.retry_after ?? undefined;
  if (status !== null) return { ok: false, status, error: `receiver answered status ${status}`, retryAfter };
  return { ok: false, status: null, error: `listener: ${answer.error || 'no answer from the receiver'}` };
}
