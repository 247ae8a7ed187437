/** GET /api/v1/audit-log: the caller's team's events, searchable and paged like every list. */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { decodeCursor, encodeCursor, listQueryOf, pagingParameters } from '../list';
import { envelopeOf, ErrorEnvelope, principalOf } from './families';
import { fieldInvalid } from '../../lib/errors';
import type { ApiApp } from '../api-app';
import type { Store } from '../../store/types';
import type { CloudEvent } from '../../resources/cloud-event';
import { apiKeyFamily, userFamily, type ApiKey, type User } from '../../resources/accounts';
import { fieldOf } from '../../lib/unknown-values';

const EventRecord = Type.Object(
  {
    id: Type.String({ description: 'Event id, prefix evt.' }),
    type: Type.String({ description: '`<family>.<state or verb>`, e.g. load_balancer.running.' }),
    created_at: Type.String({ format: 'date-time', description: 'When the change happened.' }),
    team_id: Type.String({ description: 'The team the event belongs to.' }),
    actor: Type.String({
      description: 'Who caused it: an API key id (`key_…`), a user id (`usr_…`, a console session), or `system` (the service on its own).',
    }),
    actor_name: Type.String({
      description:
        'Who caused it, as people read it: a key as `<its name> (<its owner>)`, a user by name; `system`; the id itself when the key or user is gone.',
    }),
    resource_id: Type.Union([Type.String(), Type.Null()], { description: "The resource the event is about (its data's `id`); null for none." }),
    resource_name: Type.Union([Type.String(), Type.Null()], { description: "That resource's name (its data's `name`); null for none." }),
    data: Type.Object({}, { additionalProperties: true, description: 'The resource as the API showed it at that moment, without secrets.' }),
  },
  { additionalProperties: false },
);

/**
 * How many of the team's events one page may look at. A text search reads each event's
 * text back (from the disk, once its slab is written out: about 5 µs an event of 1 KB);
 * one that matches rarely goes on page by page, so no request holds the event loop for
 * a whole history.
 */
const PAGE_SCAN_LIMIT = 2_000;

const DateTime = (description: string) => Type.String({ format: 'date-time', description });

const AuditQuery = Type.Object(
  {
    type: Type.Optional(Type.String({ maxLength: 100, pattern: '^[a-z_]+\\.([a-z_]+|\\*)$', description: 'An exact event type, or `category.*`.' })),
    resource_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only events about this resource.' })),
    actor: Type.Optional(Type.String({ maxLength: 64, description: 'Only events caused by this API key id, or `system`.' })),
    since: Type.Optional(DateTime('Only events at or after this time.')),
    until: Type.Optional(DateTime('Only events before this time.')),
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Case-insensitive text anywhere in the event.' })),
    cursor: pagingParameters.cursor(),
    limit: pagingParameters.limit(),
    order: pagingParameters.order('By time; default desc (newest first).'),
  },
  { additionalProperties: false },
);

const stringField = (data: unknown, key: string): string | null => {
  const value = fieldOf(data, key);
  return typeof value === 'string' ? value : null;
};

/**
 * The page's actors as people read them: a key by its name and its owner's, a user by
 * name. Read when asked, so a renamed key reads by its new name; one that is gone stays an id.
 */
async function actorNames(store: Store, team: string, events: readonly CloudEvent[]): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const userName = async (id: string) => (await store.get<User['spec'], User['status']>(userFamily.kind, team, id))?.spec.name;
  for (const actor of new Set(events.map((event) => event.actor))) {
    if (actor.startsWith(`${userFamily.idPrefix}_`)) {
      const name = await userName(actor);
      if (name) names.set(actor, name);
    } else if (actor.startsWith(`${apiKeyFamily.idPrefix}_`)) {
      const key = await store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, team, actor);
      if (!key) continue;
      const owner = await userName(key.spec.user_id);
      names.set(actor, owner ? `${key.spec.name} (${owner})` : key.spec.name);
    }
  }
  return names;
}

export function registerAuditLogRoutes(app: ApiApp, ctx: ApiContext): void {
  app.get('/api/v1/audit-log', {
    schema: {
      tags: ['audit log'],
      operationId: 'listAuditEvents',
      summary: 'Search the events of the team',
      description: 'Every event of the team within the retention period (CLOUDPLANE_EVENT_RETENTION_DAYS), newest first. All filters given must match.',
      querystring: AuditQuery,
      response: { 200: envelopeOf(Type.Array(EventRecord)), 401: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const query = request.query;
      const { since, until } = query;
      if (since && until && Date.parse(since) >= Date.parse(until)) throw fieldInvalid('until', 'must be later than since');
      const paging = listQueryOf(request);
      const after = paging.cursor === undefined ? undefined : decodeCursor(ctx.cursorKey, paging.cursor, paging);
      const { events, next } = ctx.audit.page(
        principalOf(request).team,
        {
          type: query.type,
          resource_id: query.resource_id,
          actor: query.actor,
          since: since && new Date(since).toISOString(),
          until: until && new Date(until).toISOString(),
          q: query.q,
        },
        { order: paging.order, after: after && { created_at: after.v, id: after.i }, limit: paging.limit, scanLimit: PAGE_SCAN_LIMIT },
      );
      const nextCursor = next && encodeCursor(ctx.cursorKey, { l: paging.scope, v: next.created_at, i: next.id });
      const names = await actorNames(ctx.store, principalOf(request).team, events);
      const shown = events.map((event) => ({
        ...event,
        actor_name: names.get(event.actor) ?? event.actor,
        resource_id: stringField(event.data, 'id'),
        resource_name: stringField(event.data, 'name'),
      }));
      return send(ctx, request, reply, 200, shown, { next_cursor: nextCursor });
    },
  });
}
