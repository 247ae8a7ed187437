/**
 * Webhook subscriptions and their deliveries (docs/api.md "Webhook deliveries"). The API and
 * the dispatcher write them directly; a subscription's reconciler (webhooks/reconciler.ts)
 * only takes in what kubectl made and settles what a kubectl edit changed. The signing
 * secret lives in the store secret `webhook-secret-<id>` (in cluster mode a Kubernetes
 * Secret, named in status.signing_secret_name), never in the resource.
 */
import { createHash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { fieldInvalid, validationFailed, FieldError } from '../lib/errors';
import { HTTPS_ONLY, NOT_PRIVATE, urlProblem } from '../lib/target-guard';
import type { BaseStatus, CreateBody, FamilyDefinition, Resource, SubscriptionProblems } from './family';
import type { FamilyCommand } from './commands';
import { asStored } from './family';
import { baseStatusProperties, IdOf, NullableTimestamp, strictObject, Timestamp, recordTimes } from './schema-kit';
import type { Config } from '../config';
import { nowIso } from '../lib/time';
import { recordOf } from './record-of';

/** `failed`: only a kubectl-made subscription whose spec the create rules refused (adoption); it never delivers. */
const WEBHOOK_STATES = ['active', 'inactive', 'deleted', 'failed'] as const;
const DELIVERY_STATES = ['pending', 'succeeded', 'failed'] as const;
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 100;

/** `<category>.<field of data>` -> the value, or any of the values, it must have (webhooks/matching.ts). */
export type WebhookFilter = Record<string, string | string[]>;

export interface WebhookSpec {
  url: string;
  events: string[];
  filter: WebhookFilter | null;
  /** What the owner asked for; an auto-disabled subscription is inactive whatever this says. */
  active: boolean;
  rate_limit_per_minute: number;
}

export interface WebhookStatus extends BaseStatus {
  disabled_reason: string | null;
  consecutive_failures: number;
  /** The endpoint's health as its attempts tell it (webhooks/dispatcher.ts); absent on records written before it existed. */
  last_attempt_at?: string | null;
  last_error?: string | null;
  next_retry_at?: string | null;
  failures_before_disable?: number | null;
  /** Cluster mode: the Kubernetes Secret holding the signing secret (key `current`). */
  signing_secret_name?: string | null;
}

export type Webhook = Resource<WebhookSpec, WebhookStatus>;

export interface DeliverySpec {
  webhook_id: string;
  event_id: string;
  event_type: string;
  /** The event envelope exactly as sent on every attempt, fixed at creation. */
  body: string;
}

/** One attempt of a delivery, as its attempt log keeps it. */
export interface DeliveryAttempt {
  /** 1-based; the log keeps the latest MAX_KEPT_ATTEMPTS, so the first may be past 1. */
  attempt: number;
  at: string;
  response_status: number | null;
  latency_ms: number | null;
  /** The first KiB of the answer's body; null when no answer came. */
  response_body: string | null;
  error: string | null;
}

/** Attempts a delivery gets on its retry schedule (webhooks/schedule.ts; docs/api.md); its record counts them. */
export const MAX_ATTEMPTS = 15;

/**
 * Attempts a delivery's log keeps: the schedule's 15 and 5 manual retries; past that the
 * oldest go, so a record stays small (in cluster mode it is a custom resource).
 */
export const MAX_KEPT_ATTEMPTS = MAX_ATTEMPTS + 5;

export interface DeliveryStatus extends BaseStatus {
  /** Attempts made so far. */
  attempt: number;
  first_attempt_at: string | null;
  next_retry_at: string | null;
  response_status: number | null;
  error: string | null;
  /** Set by a manual retry of a finished delivery: one attempt, then no schedule. */
  single_attempt: boolean;
  /** The attempt log, oldest first; absent on records written before it existed. */
  attempts?: DeliveryAttempt[];
}

export type Delivery = Resource<DeliverySpec, DeliveryStatus>;

export const webhookSecretName = (id: string) => `webhook-secret-${id}`;

export const ENDPOINT_HEALTH_STATES = ['healthy', 'failing', 'disabled'] as const;

const EndpointHealth = strictObject(
  {
    status: Type.String({
      enum: [...ENDPOINT_HEALTH_STATES],
      description:
        'healthy: its last attempt succeeded (or none was made); failing: from its first failed attempt until one succeeds; disabled: the service disabled the subscription (disabled_reason).',
    }),
    recent_failures: Type.Integer({ minimum: 0, description: 'Failed attempts in a row across its deliveries (consecutive_failures).' }),
    failures_before_disable: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'Failed attempts in a row still allowed before the service disables the subscription; null while healthy.',
    }),
    last_attempt_at: NullableTimestamp('The last attempt: exact after a failure; while healthy, recorded at most once a minute.'),
    last_error: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed; null while healthy.' }),
    next_retry_at: NullableTimestamp('When the endpoint is tried again: the earliest retry of its failed deliveries; null while healthy.'),
  },
  'Whether the endpoint answers now, from its recent attempts (docs/api.md, Endpoint health).',
);

const EVENT_PATTERN = '^[a-z][a-z0-9_]*\\.([a-z][a-z0-9_]*|\\*)$';
const FILTER_KEY = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;

const AttemptEntry = strictObject({
  attempt: Type.Integer({ minimum: 1, description: 'The attempt number, from 1.' }),
  at: Timestamp('When the attempt started.'),
  response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the answer; null if none came.' }),
  latency_ms: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: 'From the request to the end of the answer (or the failure), in ms; null for a listener, whose CLI makes the request.',
  }),
  response_body: Type.Union([Type.String(), Type.Null()], { description: "The first KiB of the answer's body (UTF-8); null if no answer came." }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why the attempt failed; null if it succeeded.' }),
});
const AttemptLog = Type.Array(AttemptEntry, {
  maxItems: MAX_KEPT_ATTEMPTS,
  description: `Each attempt, oldest first: the latest ${MAX_KEPT_ATTEMPTS} are kept (the schedule's ${MAX_ATTEMPTS} and 5 manual retries).`,
});

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'HTTPS address that receives deliveries.' });
// A set: each pattern once (the CRD makes it an x-kubernetes-list-type set, which the API server keeps free of duplicates).
export const Events = Type.Array(Type.String({ pattern: EVENT_PATTERN, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description: 'Event types (`server.running`) or category patterns (`server.*`).',
});
const FilterValue = Type.Union([Type.String({ maxLength: 256 }), Type.Array(Type.String({ maxLength: 256 }), { maxItems: 100 })]);
/**
 * Every event is matched against every key and value of each subscription's filter: 50
 * keys of at most 100 values bound that to 5,000 comparisons per event and subscription.
 */
export const MAX_FILTER_KEYS = 50;
export const Filter = Type.Union([Type.Record(Type.String(), FilterValue, { maxProperties: MAX_FILTER_KEYS }), Type.Null()], {
  description: `Keys \`<category>.<field>\` (e.g. \`server.region\`), at most ${MAX_FILTER_KEYS}, each a string or an array of at most 100 strings; a key applies to events of its category only.`,
});
const Active = Type.Boolean({ description: 'Whether the subscription delivers. PATCH true re-enables a disabled one.' });
/**
 * The highest rate a subscription may ask for: above what the delivery pipeline carries, so
 * the limit is never what holds back a subscription the service could serve. bench/webhooks'
 * dispatcher row (events straight onto the bus, 8 subscriptions, records and outcomes
 * durable) delivered 450-720 a second on a shared 2-CPU machine at load average 11-14, 20-48 %
 * of the bare POST loop of the same run, a loop that does ~9 800/s there unloaded. The token
 * bucket and queue cost O(1) per delivery at any rate.
 */
export const MAX_RATE_LIMIT_PER_MINUTE = 300_000;
const RateLimit = Type.Integer({
  minimum: 1,
  maximum: MAX_RATE_LIMIT_PER_MINUTE,
  description:
    'Deliveries per minute, 1-300000, default 100; more are queued, never dropped. Past what the service carries (docs/api.md) the pipeline, not the limit, paces deliveries.',
});

function filterKeyProblems(filter: WebhookFilter | null | undefined): FieldError[] {
  return Object.keys(filter ?? {})
    .filter((key) => !FILTER_KEY.test(key))
    .map((key) => ({ field: `filter.${key}`, message: 'must be a key of the form <category>.<field>' }));
}

/**
 * What a subscription's `events` and `filter` break, as the API refuses it: keys not of the
 * form <category>.<field>, and (events/catalog.ts) types, patterns, categories and fields
 * that no event the service emits has. `undefined` leaves that part unjudged (a PATCH
 * without it). The reconciler judges a kubectl-made subscription's spec by the same.
 */
export function subscriptionRuleProblems(
  events: readonly string[] | undefined,
  filter: WebhookFilter | null | undefined,
  subscriptionProblems: SubscriptionProblems,
): FieldError[] {
  const wellFormed = filter && Object.fromEntries(Object.entries(filter).filter(([key]) => FILTER_KEY.test(key)));
  return [...subscriptionProblems(events, wellFormed), ...filterKeyProblems(filter)];
}

export function assertSubscription(
  events: readonly string[] | undefined,
  filter: WebhookFilter | null | undefined,
  subscriptionProblems: SubscriptionProblems,
): void {
  const problems = subscriptionRuleProblems(events, filter, subscriptionProblems);
  if (problems.length) throw validationFailed(problems);
}

/** What a person who refused a local URL can do instead: the CLI's listener, or the operator's two settings. */
const LOCAL_RECEIVER_HINT =
  'To receive deliveries on your own machine, run `cloudplane listen --forward-to <local URL>` (docs/cli.md); an operator may allow such URLs with CLOUDPLANE_WEBHOOK_ALLOW_HTTP and CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS.';

function assertUrl(url: string, config: Config): void {
  const problem = urlProblem(url, config.webhooks);
  if (!problem) return;
  const refused = fieldInvalid('url', problem);
  if (problem === HTTPS_ONLY || problem === NOT_PRIVATE) refused.message = `${refused.message} ${LOCAL_RECEIVER_HINT}`;
  throw refused;
}

/** The signing secret's rotation, a test delivery, recovery, and a subscription's deliveries (api/routes/webhooks.ts). */
const WEBHOOK_COMMANDS: readonly FamilyCommand[] = [
  {
    words: ['rotate-secret'],
    summary: 'Rotate the signing secret (the new one is shown once)',
    method: 'POST',
    path: '/{id}/rotate-secret',
    versioned: true,
    columns: ['id', 'url', 'status', 'secret'],
  },
  { words: ['ping'], summary: 'Send a test delivery (webhook.ping) to one subscription', method: 'POST', path: '/{id}/ping', answers: 'delivery' },
  {
    words: ['recover'],
    summary: 'Re-queue the failed deliveries created in [since, until)',
    method: 'POST',
    path: '/{id}/recover',
    body: Type.Object({
      since: Type.String({ description: 'Deliveries created at or after this time (ISO 8601).' }),
      until: Type.String({ description: 'Deliveries created before this time (ISO 8601).' }),
    }),
    answers: 'delivery',
  },
  {
    words: ['deliveries', 'list'],
    summary: 'Delivery history of a subscription',
    method: 'GET',
    path: '/{webhook_id}/deliveries',
    query: { list: true },
    paged: true,
    answers: 'delivery',
  },
  { words: ['deliveries', 'get'], summary: 'Get a delivery', method: 'GET', path: '/{webhook_id}/deliveries/{delivery_id}', answers: 'delivery' },
  {
    words: ['deliveries', 'retry'],
    summary: 'Retry a delivery now',
    method: 'POST',
    path: '/{webhook_id}/deliveries/{delivery_id}/retry',
    answers: 'delivery',
  },
];

export const webhookFamily: FamilyDefinition<WebhookSpec, WebhookStatus> = {
  name: 'webhook',
  quota: { default: 100 },
  title: 'webhook',
  kind: 'WebhookSubscription',
  plural: 'webhooksubscriptions',
  shortNames: ['cpwh'],
  path: 'webhooks',
  idPrefix: 'wh',
  states: WEBHOOK_STATES,
  readyStates: ['active'],
  providerBacked: false,
  deletion: 'immediate',
  standardRoutes: 'reads',
  creationEvent: 'created',
  eventVerbs: {
    updated: 'had its configuration changed, or was re-enabled by its owner.',
    disabled: 'was disabled by the service after 50 failed attempts in a row (see disabled_reason).',
  },
  eventStates: ['deleted'],
  description: 'A webhook subscription: events of the team that match it are delivered, signed, to its URL.',
  schemas: {
    create: strictObject({
      url: Url,
      events: Events,
      filter: Type.Optional(Filter),
      active: Type.Optional(Active),
      rate_limit_per_minute: Type.Optional(RateLimit),
    }),
    update: strictObject({
      url: Type.Optional(Url),
      events: Type.Optional(Events),
      filter: Type.Optional(Filter),
      active: Type.Optional(Active),
      rate_limit_per_minute: Type.Optional(RateLimit),
    }),
    spec: strictObject({ url: Url, events: Events, filter: Filter, active: Active, rate_limit_per_minute: RateLimit }),
    status: strictObject({
      ...baseStatusProperties(WEBHOOK_STATES),
      disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why the service disabled the subscription.' }),
      consecutive_failures: Type.Integer({ minimum: 0, description: 'Failed attempts in a row, across deliveries.' }),
      last_attempt_at: Type.Optional(NullableTimestamp('The last attempt: exact after a failure, to the minute while the endpoint answers.')),
      last_error: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Why the last failed attempt failed; null after a success.' })),
      next_retry_at: Type.Optional(NullableTimestamp("The earliest retry of the endpoint's failed deliveries; null while it answers.")),
      failures_before_disable: Type.Optional(
        Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
          description: 'Failed attempts in a row left before the service disables it; null while it answers.',
        }),
      ),
      signing_secret_name: Type.Optional(
        Type.Union([Type.String(), Type.Null()], {
          description: 'The Secret in this namespace whose key `current` is the signing secret (and `previous` during a rotation overlap).',
        }),
      ),
    }),
    record: strictObject({
      id: IdOf('wh', 'Subscription id.'),
      url: Url,
      events: Events,
      filter: Filter,
      active: Type.Boolean({ description: 'Whether events are delivered now: false when paused by the owner or disabled by the service.' }),
      rate_limit_per_minute: RateLimit,
      disabled_reason: Type.Union([Type.String(), Type.Null()], {
        description: 'Why the service disabled the subscription, or refused a kubectl-made one (status failed); null otherwise.',
      }),
      consecutive_failures: Type.Integer({ minimum: 0, description: 'Failed attempts in a row across its deliveries; a success resets it.' }),
      endpoint_health: EndpointHealth,
      status: Type.String({
        enum: [...WEBHOOK_STATES],
        description: 'active, inactive or deleted; failed for a kubectl-made subscription whose spec was refused.',
      }),
      created_at: Timestamp('Creation time.'),
      updated_at: Timestamp('Last change.'),
      deleted_at: NullableTimestamp('Time of deletion; null unless deleted.'),
    }),
  },

  specFromCreate(body: CreateBody<WebhookSpec, 'filter' | 'active' | 'rate_limit_per_minute'>, { config, subscriptionProblems }) {
    assertUrl(body.url, config);
    assertSubscription(body.events, body.filter, subscriptionProblems);
    return {
      url: body.url,
      events: body.events,
      filter: body.filter ?? null,
      active: body.active ?? true,
      rate_limit_per_minute: body.rate_limit_per_minute ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
    };
  },

  applyUpdate(spec, patch: Partial<WebhookSpec>, { config, subscriptionProblems }) {
    if (patch.url !== undefined) assertUrl(patch.url, config);
    assertSubscription(patch.events, patch.filter, subscriptionProblems);
    return { ...spec, ...patch };
  },

  initialStatus: () => ({ disabled_reason: null, consecutive_failures: 0 }),

  /** `disabled` when the service trips it; `updated` when the owner re-enables it (the spec may not change). */
  extraEvents(previous, next) {
    if (!previous) return [];
    if (!previous.status.disabled_reason && next.status.disabled_reason) return ['disabled'];
    const reenabled = previous.status.status === 'inactive' && next.status.status === 'active';
    return reenabled && previous.status.observed_config === next.status.observed_config ? ['updated'] : [];
  },

  nameOf: (spec) => spec.url,
  commands: WEBHOOK_COMMANDS,

  toRecord({ meta, spec, status }) {
    const written = asStored(status);
    const given = asStored(spec);
    return {
      id: meta.id,
      url: spec.url,
      events: spec.events,
      filter: spec.filter ?? null,
      active: status.status === 'active',
      // A kubectl-made subscription whose spec was refused never got the defaults written in.
      rate_limit_per_minute: given.rate_limit_per_minute ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
      disabled_reason: status.status === 'failed' ? (status.status_reason ?? null) : (status.disabled_reason ?? null),
      consecutive_failures: written.consecutive_failures ?? 0,
      endpoint_health: endpointHealthOf(written),
      status: status.status,
      ...recordTimes(meta, status),
    };
  },
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'url', label: 'URL' },
      { key: 'status', label: 'Status' },
      { key: 'events', label: 'Events' },
      { key: 'endpoint_health', label: 'Endpoint' },
      { key: 'consecutive_failures', label: 'Consecutive failures' },
      { key: 'disabled_reason', label: 'Disabled reason' },
    ],
  },
};

/**
 * Whether the endpoint answers now: failing from the first failed attempt until one
 * succeeds, disabled once the service disabled the subscription. Read from what the
 * dispatcher records on the subscription, so a list costs no look at the deliveries.
 */
function endpointHealthOf(status: Partial<WebhookStatus>): Static<typeof EndpointHealth> {
  const failures = status.consecutive_failures ?? 0;
  return {
    status: status.disabled_reason ? 'disabled' : failures > 0 ? 'failing' : 'healthy',
    recent_failures: failures,
    failures_before_disable: failures > 0 ? (status.failures_before_disable ?? null) : null,
    last_attempt_at: status.last_attempt_at ?? null,
    last_error: failures > 0 ? (status.last_error ?? null) : null,
    next_retry_at: failures > 0 ? (status.next_retry_at ?? null) : null,
  };
}

/** The same delivery id whenever (subscription, event) is processed again, e.g. after a crash. */
export function deliveryIdFor(webhookId: string, eventId: string): string {
  const digest = createHash('sha256').update(`${webhookId}/${eventId}`).digest('hex');
  return `del_${BigInt(`0x${digest}`).toString(36).padStart(20, '0').slice(0, 20)}`;
}

/** Every delivery of a team's subscriptions, filtered (api/routes/webhook-deliveries.ts). */
const DELIVERY_COMMANDS: readonly FamilyCommand[] = [
  {
    words: ['list'],
    summary: "Every delivery of the team's subscriptions, filtered",
    method: 'GET',
    path: '',
    base: { path: '/webhook-deliveries', group: ['webhook-deliveries'] },
    query: {
      list: true,
      filters: {
        event_type: Type.Optional(Type.String({ description: 'Only deliveries of this event type.' })),
        subscription_id: Type.Optional(Type.String({ description: 'Only deliveries of this subscription (wh_...).' })),
        since: Type.Optional(Type.String({ description: 'Only deliveries created at or after this time (ISO 8601).' })),
        until: Type.Optional(Type.String({ description: 'Only deliveries created before this time (ISO 8601).' })),
      },
    },
    paged: true,
  },
];

export const deliveryFamily: FamilyDefinition<DeliverySpec, DeliveryStatus> = {
  name: 'delivery',
  title: 'delivery',
  kind: 'WebhookDelivery',
  plural: 'webhookdeliveries',
  shortNames: ['cpdel'],
  path: 'webhooks/deliveries',
  idPrefix: 'del',
  states: DELIVERY_STATES,
  readyStates: ['succeeded'],
  providerBacked: false,
  deletion: 'immediate',
  standardRoutes: false,
  deletable: false,
  // Deliveries are the consequence of events; events about them would feed back into webhooks.
  creationEvent: null,
  eventStates: [],
  description: 'One event on its way to one webhook subscription, with its attempts.',
  schemas: {
    create: strictObject({}),
    spec: strictObject({
      webhook_id: IdOf('wh', 'The subscription.'),
      event_id: IdOf('evt', 'The event delivered.'),
      event_type: Type.String({ description: 'Type of the event.' }),
      body: Type.String({ description: 'The event envelope as sent, byte for byte.' }),
    }),
    status: strictObject({
      ...baseStatusProperties(DELIVERY_STATES),
      // No maximum: a manual retry of a finished delivery is one attempt past the schedule's.
      attempt: Type.Integer({ minimum: 0, description: `Attempts made so far: up to ${MAX_ATTEMPTS} on the schedule, one more for each manual retry.` }),
      first_attempt_at: NullableTimestamp('Time of the first attempt.'),
      next_retry_at: NullableTimestamp('When the next attempt is due; null when none is left.'),
      response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the last answer.' }),
      error: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed.' }),
      single_attempt: Type.Boolean({ description: 'A manual retry of a finished delivery: one attempt, no further schedule.' }),
      attempts: Type.Optional(AttemptLog),
    }),
    record: strictObject({
      id: IdOf('del', 'Delivery id; the same on every attempt (the webhook-id header).'),
      webhook_id: IdOf('wh', 'The subscription.'),
      event_id: IdOf('evt', 'The event delivered.'),
      event_type: Type.String({ description: 'Type of the event.' }),
      status: Type.String({ enum: [...DELIVERY_STATES], description: 'pending, succeeded or failed.' }),
      attempt: Type.String({ pattern: '^\\d+/\\d+$', description: `Attempts made, as <n>/${MAX_ATTEMPTS}.` }),
      next_retry_at: NullableTimestamp('When the next attempt is due; null once no retry is left.'),
      response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the last answer; null if none came.' }),
      error: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed; null after a success.' }),
      created_at: Timestamp('Creation time.'),
      updated_at: Timestamp('Last change.'),
    }),
  },
  // Never a POST body (no route creates one): a whole spec.
  specFromCreate: (body: DeliverySpec) => body,
  // Due at once: the first attempt is immediate.
  initialStatus: () => ({
    attempt: 0,
    first_attempt_at: null,
    next_retry_at: nowIso(),
    response_status: null,
    error: null,
    single_attempt: false,
    attempts: [],
  }),
  nameOf: (spec) => spec.event_type,
  commands: DELIVERY_COMMANDS,
  listing: { hiddenStates: [], filterFields: ['webhook_id', 'event_type'] },
  toRecord: ({ meta, spec, status }) => {
    const written = asStored(status);
    return {
      id: meta.id,
      webhook_id: spec.webhook_id,
      event_id: spec.event_id,
      event_type: spec.event_type,
      status: status.status,
      attempt: `${written.attempt ?? 0}/${MAX_ATTEMPTS}`,
      next_retry_at: status.next_retry_at ?? null,
      response_status: status.response_status ?? null,
      error: status.error ?? null,
      created_at: meta.createdAt,
      updated_at: meta.updatedAt,
    };
  },
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'event_type', label: 'Event type' },
      { key: 'status', label: 'Status' },
      { key: 'attempt', label: 'Attempt' },
      { key: 'response_status', label: 'Response status' },
      { key: 'next_retry_at', label: 'Next retry at' },
      { key: 'error', label: 'Error' },
    ],
  },
};

/** A delivery with its attempt log: what GET of one delivery shows (a list leaves the log out, it is up to 20 KiB each). */
export const DeliveryWithAttempts = strictObject({
  ...deliveryFamily.schemas.record.properties,
  attempts: AttemptLog,
});

export const deliveryWithAttempts = (delivery: Delivery) => ({ ...recordOf(deliveryFamily, delivery), attempts: delivery.status.attempts ?? [] });
