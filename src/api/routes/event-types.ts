/**
 * GET /api/v1/event-types: the event catalog (events/catalog.ts), what a webhook
 * subscription may name. Like the region catalog it is one short page, not paged.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope } from './families';
import { eventCatalog, eventCategories } from '../../events/catalog';
import type { ApiApp } from '../api-app';

const EventTypeRecord = Type.Object({
  type: Type.String({ description: 'The event type, `<category>.<verb>`, as in `events` of a subscription and `type` of an event.' }),
  category: Type.String({
    description: 'The part before the dot: `<category>.*` subscribes to every type of it, and `filter` keys are `<category>.<field of data>`.',
  }),
  description: Type.String({ description: 'What happened.' }),
  data_schema: Type.Object({}, { additionalProperties: true, description: "JSON Schema of the event's `data`." }),
});

export function registerEventTypeRoutes(app: ApiApp, ctx: ApiContext): void {
  app.get('/api/v1/event-types', {
    schema: {
      tags: ['events'],
      operationId: 'listEventTypes',
      summary: 'List the event types the service emits',
      description: 'Every event type a webhook subscription can name, with the JSON Schema of its `data`.',
      querystring: Type.Object(
        { category: Type.Optional(Type.String({ enum: eventCategories(), description: 'Only the types of this category.' })) },
        { additionalProperties: false },
      ),
      response: { 200: envelopeOf(Type.Array(EventTypeRecord)), 422: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { category } = request.query;
      return send(
        ctx,
        request,
        reply,
        200,
        eventCatalog().filter((entry) => !category || entry.category === category),
      );
    },
  });
}
