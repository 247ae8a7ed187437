/**
 * Reconcile now (docs/api.md, "Why a resource is not ready"): `POST /{path}/{id}/reconcile`
 * on every provider-backed family queues a pass of the resource at once, ahead of a
 * failure's backoff and of the periodic resync. The ask is a write of the resource's
 * metadata (the annotation `cloudplane.dev/reconcile-requested-at` in cluster mode), so it
 * reaches the reconciler on whichever replica leads, and a kubectl user asks the same way;
 * the pass records the ask it handled in `last_handled_reconcile_at`. One ask per
 * resource per RECONCILE_ASK_INTERVAL_MS: more would only queue passes that find the same.
 */
import { Type } from '@sinclair/typebox';
import type { AnyFamily, Resource } from '../../resources/family';
import type { ApiContext } from '../context';
import type { ApiApp } from '../api-app';
import { send } from '../envelope';
import { tagAnswer } from '../entity-tags';
import { ApiError } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { typeNameOf } from '../openapi-names';
import { envelopeOf, ErrorEnvelope, findForChange, principalOf, VERSIONED_CHANGE } from './families';
import { recordOf } from '../../resources/record-of';

/** The least time between two asks for a pass of one resource. */
export const RECONCILE_ASK_INTERVAL_MS = 10_000;

const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Resource id.' }) });

/** Refuses an ask that comes sooner than RECONCILE_ASK_INTERVAL_MS after the last (a kubectl user's token that is no time never refuses). */
function assertNotTooSoon(family: AnyFamily, resource: Resource, now: number): void {
  const last = Date.parse(resource.meta.reconcileRequestedAt ?? '');
  const waitMs = last + RECONCILE_ASK_INTERVAL_MS - now;
  if (!(waitMs > 0)) return;
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  throw new ApiError(
    429,
    'rate_limit_exceeded',
    `A reconcile of this ${family.title} was asked for less than ${RECONCILE_ASK_INTERVAL_MS / 1000} s ago; retry in ${seconds} s.`,
    undefined,
    { 'Retry-After': String(seconds) },
  );
}

export function registerReconcileRoute(app: ApiApp, ctx: ApiContext, family: AnyFamily): void {
  app.post(`/api/v1/${family.path}/:id/reconcile`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: `reconcile${typeNameOf(family.title)}`,
      summary: `Reconcile a ${family.title} now`,
      description:
        `Queues a reconcile pass of the ${family.title} at once, ahead of a failure's backoff and the periodic resync. ` +
        'The pass records the ask in `last_handled_reconcile_at` of the status; `conditions` and `reconcile_error` of the record say what it found. ' +
        `At most one ask per ${RECONCILE_ASK_INTERVAL_MS / 1000} s per resource (429 with Retry-After).`,
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      response: {
        202: envelopeOf(family.schemas.record),
        404: ErrorEnvelope,
        429: ErrorEnvelope,
        503: ErrorEnvelope,
        ...VERSIONED_CHANGE.preconditionFailed,
      },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      const { found, ifMatch } = await findForChange(ctx, family, request, id);
      const at = nowIso();
      assertNotTooSoon(family, found, Date.parse(at));
      const asked = await ctx.writer.requestReconcile(family, team, id, at, (latest) => {
        ifMatch?.(latest);
        assertNotTooSoon(family, latest, Date.parse(at));
      });
      tagAnswer(reply, asked);
      return send(ctx, request, reply, 202, recordOf(family, asked));
    },
  });
}
