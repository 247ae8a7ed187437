/**
 * GET /api/v1/webhook-deliveries: every delivery of the team across its subscriptions,
 * filtered and paged like every list (the cursor is bound to the filters), for a receiver
 * that looks for what failed during an outage without walking each subscription.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { ListFilter, listPage, listQueryOf, listQuerySchema } from '../list';
import { envelopeOf, ErrorEnvelope, principalOf } from './families';
import { deliveryFamily } from '../../resources/webhook';
import { fieldInvalid } from '../../lib/errors';
import type { ApiApp } from '../api-app';
import { recordOf } from '../../resources/record-of';

const DateTime = (description: string) => Type.String({ format: 'date-time', description });

const Filters = {
  event_type: Type.Optional(Type.String({ maxLength: 100, description: 'Only deliveries of this event type (exact).' })),
  subscription_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only deliveries of this subscription (wh_...).' })),
  since: Type.Optional(DateTime('Only deliveries created at or after this time.')),
  until: Type.Optional(DateTime('Only deliveries created before this time.')),
};

interface FilterQuery {
  event_type?: string;
  subscription_id?: string;
  since?: string;
  until?: string;
}

/** The filters of `query` as the store's ordered indexes take them: equality on spec fields, the window a range of created_at. */
export function deliveryFilterOf(query: FilterQuery): ListFilter {
  const where: Record<string, string> = {};
  if (query.event_type) where.event_type = query.event_type;
  if (query.subscription_id) where.webhook_id = query.subscription_id;
  const iso = (time: string | undefined) => (time ? new Date(Date.parse(time)).toISOString() : undefined);
  return { where, created: { from: iso(query.since), before: iso(query.until) } };
}

export function assertWindow(since: string | undefined, until: string | undefined): void {
  if (since && until && Date.parse(since) >= Date.parse(until)) throw fieldInvalid('until', 'must be later than since');
}

export function registerWebhookDeliveryRoutes(app: ApiApp, ctx: ApiContext): void {
  app.get('/api/v1/webhook-deliveries', {
    schema: {
      tags: ['webhook'],
      operationId: 'listTeamWebhookDeliveries',
      summary: "Every delivery of the team's subscriptions",
      description:
        'Filtered by `status`, `event_type`, `subscription_id` and a creation window (`since` inclusive, `until` exclusive); all filters given must match. Without the attempt log (GET one delivery for it).',
      querystring: listQuerySchema(deliveryFamily.states, Filters),
      response: { 200: envelopeOf(Type.Array(deliveryFamily.schemas.record)), 400: ErrorEnvelope, 401: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const filters = request.query;
      assertWindow(filters.since, filters.until);
      const query = listQueryOf(request);
      const { page, nextCursor } = await listPage(ctx.store, deliveryFamily, principalOf(request).team, query, ctx.cursorKey, deliveryFilterOf(filters));
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
}
