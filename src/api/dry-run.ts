/**
 * `?dry_run=true` on the create, update and delete of every family the generic routes
 * serve, and on the actions that change a resource's spec (docs/api.md, "Trying a change
 * first: dry_run"): the request is judged as for real (its schema, the family's rules,
 * quotas, unique names, If-Match, the state the action needs, what a deletion would
 * destroy) and answered with the resource as the change would leave it, marked
 * `meta.dry_run: true`, while nothing is stored, claimed or sent.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { fieldOf } from '../lib/unknown-values';
import { sameJson } from '../lib/canonical-json';
import type { BaseStatus, FamilyDefinition, Resource } from '../resources/family';
import { recordOf } from '../resources/record-of';
import type { ApiContext } from './context';
import { send } from './envelope';

export const DRY_RUN_PROPERTIES = {
  dry_run: Type.Optional(
    Type.Boolean({
      description: 'Judge the change as for real and answer the resource as it would be, with `meta.dry_run: true`; nothing is changed.',
    }),
  ),
};

/** The query of a change that takes dry_run and nothing else. */
export const DryRunQuery = Type.Object(DRY_RUN_PROPERTIES);

/** Whether the request asks for a dry run (its query validated by a schema with DRY_RUN_PROPERTIES). */
export const isDryRun = (request: FastifyRequest): boolean => fieldOf(request.query, 'dry_run') === true;

/** The meta of a dry run's answer. */
export const DRY_RUN_META = { dry_run: true } as const;

/** Answers a dry run: the resource as the change would leave it, as its family's record, marked `meta.dry_run`. */
export function sendDryRun<Spec, Status extends BaseStatus>(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  family: FamilyDefinition<Spec, Status>,
  resource: Resource<Spec, Status>,
  statusCode = 200,
) {
  return send(ctx, request, reply, statusCode, recordOf(family, resource), DRY_RUN_META);
}

/**
 * The resource as a change of its spec would leave it, judged on the version found: the
 * spec `change` makes of it (null: none, as the writer's mutateSpec takes it), its
 * generation moved on when the spec differs. The status stays as it is: what the
 * reconciler would make of the change is for the caller to show. Nothing is written.
 */
export function previewSpecChange<R extends Resource>(found: R, change: (current: R) => R['spec'] | null): R {
  const spec = change(found);
  if (spec === null || sameJson(spec, found.spec)) return found;
  return { ...found, meta: { ...found.meta, generation: found.meta.generation + 1 }, spec };
}
