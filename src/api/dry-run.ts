/**
 * `?dry_run=true` on the create, update and delete of every family the generic routes
 * serve (docs/api.md, "Trying a change first: dry_run"): the request is judged as for real
 * (its schema, the family's rules, quotas, unique names, If-Match, what a deletion would
 * destroy) and answered with the resource as the change would leave it, marked
 * `meta.dry_run: true`, while nothing is stored, claimed or sent.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { fieldOf } from '../lib/unknown-values';

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
