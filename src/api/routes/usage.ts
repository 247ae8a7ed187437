/**
 * GET /api/v1/usage: the team's metered usage over a window; GET/PUT /api/v1/usage/limits:
 * its thresholds (src/usage; docs/api.md, Usage). Any member reads both; changing limits
 * is managing the team, so it needs an admin, like the team's settings.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope, principalOf } from './families';
import { fieldInvalid, FieldError, validationFailed } from '../../lib/errors';
import { METRICS, unitOf } from '../../usage/metering';
import { periodOf, readLimits, UsageLimits, writeLimits } from '../../usage/thresholds';
import type { ApiApp } from '../api-app';

const errors = { 401: ErrorEnvelope, 403: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope };
const DateTime = (description: string) => Type.String({ format: 'date-time', description });
const Quantity = <U extends string>(unit: U, description: string) =>
  Type.Object({ quantity: Type.Number({ minimum: 0, description }), unit: Type.Literal(unit) }, { additionalProperties: false });

const UsageQuery = Type.Object(
  {
    since: Type.Optional(DateTime('Start of the window (RFC 3339), inclusive; default the start of the calendar month (UTC) of `until`.')),
    until: Type.Optional(DateTime('End of the window (RFC 3339), exclusive; default now.')),
  },
  { additionalProperties: false },
);

const UsageRecord = Type.Object(
  {
    since: Type.String({ format: 'date-time', description: 'Start of the window.' }),
    until: Type.String({ format: 'date-time', description: 'End of the window.' }),
    resources: Type.Array(
      Type.Object(
        {
          family: Type.String({ description: 'The resource family, e.g. server.' }),
          plan: Type.String({
            description:
              "The plan or size the hours ran at: a server's or job's plan, a file share's size (`100gb`), a VPN gateway's tunnel type, `standard` for load balancers and buckets.",
          }),
          quantity: Type.Number({ minimum: 0, description: 'Resource-hours within the window, to six decimals.' }),
          unit: Type.Literal('hours'),
          resources: Type.Integer({ minimum: 0, description: 'How many resources contributed.' }),
        },
        { additionalProperties: false },
      ),
      { description: 'Resource-hours per family and plan; only rows with usage in the window.' },
    ),
    resource_hours: Quantity('hours', 'All resource-hours of the window.'),
    webhook_deliveries: Quantity(
      'deliveries',
      'Webhook deliveries made (one per event and subscription, whatever its attempts), in the hours the window overlaps.',
    ),
    api_requests: Quantity('requests', 'Authenticated API requests of the team, in the hours the window overlaps.'),
  },
  { additionalProperties: false },
);

const Threshold = (description: string) => Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description });
const MetricLimit = Type.Object(
  {
    soft: Type.Optional(Threshold("Emits usage.threshold_reached once the period's usage reaches it; null for none.")),
    hard: Type.Optional(Threshold("Emits usage.overage once the period's usage passes it; null for none. Refuses nothing.")),
  },
  { additionalProperties: false },
);
const LimitsBody = Type.Object(
  {
    limits: Type.Object(Object.fromEntries(METRICS.map((metric) => [metric, Type.Optional(MetricLimit)])), {
      additionalProperties: false,
      description: `Per metric (${METRICS.join(', ')}), its thresholds over the calendar month (UTC). Replaces every limit set before.`,
    }),
  },
  { additionalProperties: false },
);
const LimitsRecord = Type.Object(
  {
    limits: Type.Object(
      Object.fromEntries(
        METRICS.map((metric) => [
          metric,
          Type.Optional(
            Type.Object(
              { soft: Threshold('Soft threshold, or null.'), hard: Threshold('Hard limit, or null.'), unit: Type.String() },
              { additionalProperties: false },
            ),
          ),
        ]),
      ),
      { additionalProperties: false, description: 'The thresholds set, per metric, with the unit of each.' },
    ),
    period: Type.Object(
      { start: Type.String({ format: 'date-time' }), end: Type.String({ format: 'date-time' }) },
      { additionalProperties: false, description: 'The current period: the calendar month (UTC).' },
    ),
  },
  { additionalProperties: false },
);

function limitsRecord(limits: UsageLimits) {
  const period = periodOf(new Date());
  return {
    limits: Object.fromEntries(Object.entries(limits).map(([metric, limit]) => [metric, { ...limit, unit: unitOf(metric) }])),
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
  };
}

export function registerUsageRoutes(app: ApiApp, ctx: ApiContext): void {
  const tags = ['usage'];
  app.get('/api/v1/usage', {
    schema: {
      tags,
      operationId: 'getUsage',
      summary: "Get the team's usage",
      description:
        'Resource-hours per family and plan, webhook deliveries and API requests within [since, until). Without parameters, the current calendar month (UTC) up to now.',
      querystring: UsageQuery,
      response: { 200: envelopeOf(UsageRecord), ...errors },
    },
    handler: async (request, reply) => {
      const query = request.query;
      const until = query.until ? new Date(query.until) : new Date();
      const since = query.since ? new Date(query.since) : periodOf(new Date(until.getTime() - 1)).start;
      if (since.getTime() >= until.getTime()) throw fieldInvalid('until', 'must be later than since');
      const days = ctx.config.usage.maxWindowMs / 86_400_000;
      if (until.getTime() - since.getTime() > ctx.config.usage.maxWindowMs) throw fieldInvalid('since', `the window may be at most ${days} days long`);
      return send(ctx, request, reply, 200, await ctx.usage.report(principalOf(request).team, since, until));
    },
  });

  app.get('/api/v1/usage/limits', {
    schema: { tags, operationId: 'getUsageLimits', summary: "Get the team's usage limits", response: { 200: envelopeOf(LimitsRecord), ...errors } },
    handler: async (request, reply) => send(ctx, request, reply, 200, limitsRecord(await readLimits(ctx.store, principalOf(request).team))),
  });

  app.put('/api/v1/usage/limits', {
    config: { requires: 'admin' },
    schema: {
      tags,
      operationId: 'updateUsageLimits',
      summary: "Set the team's usage limits",
      description: 'Replaces the soft thresholds and hard limits of every metric. A hard limit emits usage.overage; it refuses no request.',
      body: LimitsBody,
      response: { 200: envelopeOf(LimitsRecord), ...errors },
    },
    handler: async (request, reply) => {
      const body = request.body;
      const problems: FieldError[] = [];
      const limits: UsageLimits = {};
      for (const [metric, limit] of Object.entries(body.limits)) {
        if (!limit) continue;
        const soft = limit.soft ?? null;
        const hard = limit.hard ?? null;
        if (soft !== null && hard !== null && soft > hard) problems.push({ field: `limits.${metric}.soft`, message: 'must not be above hard' });
        if (soft !== null || hard !== null) limits[metric] = { soft, hard };
      }
      if (problems.length > 0) throw validationFailed(problems);
      const team = principalOf(request).team;
      await writeLimits(ctx.store, team, limits);
      return send(ctx, request, reply, 200, limitsRecord(limits));
    },
  });
}
