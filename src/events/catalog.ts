/**
 * The event catalog: every event type the service can emit, with its category, a one-line
 * description and the JSON Schema of its `data`. It is read from where events come from,
 * not kept as a list of its own: every event today is a resource family's state change
 * (resources/transitions.ts buildEvents), so a family's types are its creation event, the
 * states it reports (eventStates) and its other verbs (eventVerbs), and its `data` is its
 * record. A family added to resources/registry.ts is in the catalog with nothing more to do.
 * An event published elsewhere than from a family's state change is declared in
 * STANDALONE_EVENTS below, next to the module that publishes it.
 *
 * Subscriptions may name only what is here (subscriptionProblems): a type or pattern that
 * nothing emits would be accepted and never fire.
 */
import { Type, type Static, type TObject } from '@sinclair/typebox';
import { LogicalDatabaseEventData } from '../resources/database';
import type { FieldError } from '../lib/errors';
import type { Config } from '../config';
import type { AnyFamily, RuleContext } from '../resources/family';
import { families } from '../resources/registry';
import { stateEmitsEvent } from '../resources/transitions';
import { categoryOf } from './types';

export interface EventTypeEntry {
  /** `<category>.<verb>`, e.g. `load_balancer.running`. */
  type: string;
  /** The part of the type before the dot; `filter` keys are `<category>.<field of data>`. */
  category: string;
  description: string;
  /** JSON Schema of the event's `data`. */
  data_schema: TObject;
}

/** The fields of a `data.*` event of an object of a bucket (drivers/s3/notifications.ts makes them). */
const ObjectEventFields = {
  bucket_id: Type.String({ description: 'The bucket (`bkt_…`) the object is in.' }),
  bucket_name: Type.String({ description: "The bucket's name in Cloudplane." }),
  key: Type.String({ description: "The object's key." }),
  size: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Bytes, as the endpoint reports them, on data.created; null otherwise.' }),
  etag: Type.Union([Type.String(), Type.Null()], { description: "The object's ETag, as the endpoint reports it; null where it gives none." }),
  source_event: Type.String({ description: "The endpoint's name for the change, e.g. `s3:ObjectCreated:Put`." }),
  sequencer: Type.Union([Type.String(), Type.Null()], { description: "The endpoint's ordering token for changes of one key, where it gives one." }),
};
export const ObjectEventData = Type.Object({ kind: Type.Literal('object'), ...ObjectEventFields });
export type ObjectEventData = Static<typeof ObjectEventData>;

/**
 * The `data` of every `data.*` event: an object of a bucket (`kind: object`, the object's
 * fields) or a logical database of a database (`kind: database`, resources/database.ts);
 * the fields of the other kind are absent.
 */
const DataEventData = Type.Object({
  kind: Type.Union([Type.Literal('object'), Type.Literal('database')], {
    description: 'What changed: `object`, an object of a bucket; `database`, a logical database of a database.',
  }),
  ...Type.Partial(Type.Object(ObjectEventFields)).properties,
  ...Type.Partial(Type.Object(LogicalDatabaseEventData)).properties,
});

const UsageNotice = Type.Object({
  metric: Type.String({ description: 'The metric: api_requests, webhook_deliveries, resource_hours or <family>_hours.' }),
  unit: Type.String({ description: 'requests, deliveries or hours.' }),
  quantity: Type.Number({ minimum: 0, description: "The period's usage when the threshold was seen crossed." }),
  threshold: Type.Number({ minimum: 0, description: 'The soft threshold reached, or the hard limit passed.' }),
  period_start: Type.String({ format: 'date-time', description: 'Start of the period: the calendar month (UTC).' }),
  period_end: Type.String({ format: 'date-time' }),
});

/**
 * Events that are no family's state change: `webhook.delivery_failed` (src/webhooks/outcome.ts),
 * `webhook.ping` (POST /webhooks/{id}/ping, src/api/routes/webhooks.ts), `data.*`
 * (src/api/s3-notifications.ts) and `usage.*` (src/usage/thresholds.ts), declared here
 * (events/ sits below the modules that publish them); test/api/event-catalog.test.ts
 * catches a type emitted but missing here.
 */
const STANDALONE_EVENTS: readonly EventTypeEntry[] = [
  {
    type: 'webhook.delivery_failed',
    category: 'webhook',
    description: 'A delivery used up its scheduled attempts (never told of a delivery_failed event itself).',
    data_schema: Type.Object({
      subscription_id: Type.String({ description: 'The subscription whose delivery failed.' }),
      delivery_id: Type.String(),
      event_id: Type.String({ description: 'The event that was not delivered.' }),
      event_type: Type.String(),
      attempts: Type.Integer({ minimum: 1 }),
      last_error: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  {
    type: 'webhook.ping',
    category: 'webhook',
    description: 'A test delivery, sent by POST /webhooks/{id}/ping to that subscription only, whatever its events; never published.',
    data_schema: Type.Object({ subscription_id: Type.String(), url: Type.String() }),
  },
  // data.*: the S3 endpoint's bucket notifications (src/api/s3-notifications.ts), and a
  // database's logical databases (resources/database.ts dataEvents). Nothing observes the
  // objects of simulated buckets or the files of file shares: no data.* for them.
  {
    type: 'data.created',
    category: 'data',
    description:
      "An object was written to a bucket of the bucket driver `s3` (PUT, POST, copy, completed multipart upload; an overwrite too), told by its endpoint's bucket notifications; or a logical database was made in a database. Never for simulated buckets or file shares.",
    data_schema: DataEventData,
  },
  {
    type: 'data.updated',
    category: 'data',
    description:
      'An object of a bucket of the bucket driver `s3` had its tags or ACL changed, its content kept (a new content is data.created). Never for simulated buckets or file shares.',
    data_schema: DataEventData,
  },
  {
    type: 'data.destroyed',
    category: 'data',
    description:
      'An object was deleted from a bucket of the bucket driver `s3` (DELETE, DeleteObjects, and the objects a forced bucket deletion removes); or a logical database was dropped from a database, with everything in it. Never for simulated buckets or file shares.',
    data_schema: DataEventData,
  },
  // Usage thresholds (src/usage/thresholds.ts): each once per period and threshold.
  {
    type: 'usage.threshold_reached',
    category: 'usage',
    description: "The team's usage of a metric this month reached a soft threshold of its usage limits.",
    data_schema: UsageNotice,
  },
  {
    type: 'usage.overage',
    category: 'usage',
    description: "The team's usage of a metric this month passed the hard limit of its usage limits (nothing is refused).",
    data_schema: UsageNotice,
  },
];

const article = (title: string) => (/^[aeiou]/i.test(title) ? 'An' : 'A');

/** A family's event types, in the order of its lifecycle. */
export function familyEventTypes(family: AnyFamily): EventTypeEntry[] {
  const subject = `${article(family.title)} ${family.title}`;
  const entry = (verb: string, description: string): EventTypeEntry => ({
    type: `${family.name}.${verb}`,
    category: family.name,
    description,
    data_schema: family.schemas.record,
  });
  const entries: EventTypeEntry[] = [];
  if (family.creationEvent) entries.push(entry(family.creationEvent, `${subject} was created.`));
  for (const state of family.states) {
    if (stateEmitsEvent(family, state)) entries.push(entry(state, `${subject} is now ${state}.`));
  }
  for (const [verb, predicate] of Object.entries(family.eventVerbs ?? {})) entries.push(entry(verb, `${subject} ${predicate}`));
  return entries;
}

let catalog: readonly EventTypeEntry[] | undefined;

/** Built on first use. */
export function eventCatalog(): readonly EventTypeEntry[] {
  if (!catalog) {
    catalog = [...families.flatMap(familyEventTypes), ...STANDALONE_EVENTS];
  }
  return catalog;
}

export function eventTypeEntry(type: string): EventTypeEntry | undefined {
  return eventCatalog().find((entry) => entry.type === type);
}

/** Every category with at least one type. */
export function eventCategories(): string[] {
  return [...new Set(eventCatalog().map((entry) => entry.category))];
}

/** Fields of the `data` of a category's events: what its `filter` keys may name. */
export function dataFieldsOf(category: string): Set<string> {
  const fields = new Set<string>();
  for (const entry of eventCatalog()) if (entry.category === category) for (const field of Object.keys(entry.data_schema.properties)) fields.add(field);
  return fields;
}

const CATALOG_HINT = 'GET /api/v1/event-types lists them';

/**
 * Why a subscription's `events` and `filter` cannot be served: each entry naming a type the
 * service never emits or a pattern matching none, each filter key naming a category without
 * events or a field their data lacks. Empty when all is well. Shared by the API (create,
 * update, listeners) and the reconciler's judgement of kubectl-made subscriptions.
 */
export function subscriptionProblems(events: readonly string[] | undefined, filter: Readonly<Record<string, unknown>> | null | undefined): FieldError[] {
  const problems: FieldError[] = [];
  const categories = new Set(eventCategories());
  (events ?? []).forEach((pattern, index) => {
    const field = `events[${index}]`;
    if (pattern.endsWith('.*')) {
      const category = pattern.slice(0, -2);
      if (!categories.has(category)) problems.push({ field, message: `\`${pattern}\` matches no event type the service emits (${CATALOG_HINT})` });
    } else if (!eventTypeEntry(pattern)) {
      problems.push({ field, message: `\`${pattern}\` is not an event type the service emits (${CATALOG_HINT})` });
    }
  });
  // A key without a dot is no <category>.<field>; resources/webhook.ts refuses its form.
  for (const key of Object.keys(filter ?? {}).filter((k) => k.includes('.'))) {
    const category = categoryOf(key);
    const name = key.slice(category.length + 1);
    if (!categories.has(category)) problems.push({ field: `filter.${key}`, message: `names \`${category}\`, which is no category of event (${CATALOG_HINT})` });
    else if (!dataFieldsOf(category).has(name))
      problems.push({ field: `filter.${key}`, message: `names \`${name}\`, which is no field of the data of \`${category}\` events` });
  }
  return problems;
}

/** What the families' rules consult (resources/family.ts RuleContext): the configuration, and subscriptions judged by this catalog. */
export const ruleContextOf = (config: Config): RuleContext => ({ config, subscriptionProblems });
