/**
 * One conflict model for REST and kubectl (docs/api.md, "Versions: ETag and If-Match"):
 * a single resource's answer carries an `ETag` made of the store's resourceVersion, the
 * `metadata.resourceVersion` a kubectl user sees of the same object; a change sent with
 * `If-Match` is made only while the resource is still at one of the versions it names,
 * and answered 412 `precondition_failed` otherwise. The check runs on the version each
 * write attempt reads (ResourceWriter's precondition), so a change that lands between the
 * check and the write makes the write fail rather than pass unseen.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { preconditionFailed } from '../lib/errors';

interface Versioned {
  meta: { resourceVersion: string };
}

/** The strong entity tag of a version: the resourceVersion, quoted (RFC 9110 §8.8.3). */
export const entityTagOf = (resource: Versioned) => `"${resource.meta.resourceVersion}"`;

/** Sets the answer's ETag to the version of `resource`, the one the answer shows. */
export function tagAnswer(reply: FastifyReply, resource: Versioned): void {
  reply.header('etag', entityTagOf(resource));
}

/** The request header schema of a change that takes If-Match (documented in the OpenAPI document). */
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      maxLength: 1024,
      description:
        'Make the change only if the resource is still at this version: the ETag of an answer (a quoted resourceVersion), several separated by commas, or * for any. Otherwise 412 precondition_failed.',
    }),
  ),
});

/** A check of the version a write attempt read, or undefined when the request sent no If-Match. */
export type VersionCheck = (current: Versioned) => void;

/**
 * The If-Match check of a request, or undefined without the header. Comparison is strong
 * (RFC 9110 §13.1.1): a weak tag (`W/"…"`) never matches; `*` matches any version.
 */
export function ifMatchOf(request: FastifyRequest, what: string): VersionCheck | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  const tags = header.split(',').map((tag) => tag.trim());
  if (tags.includes('*')) return undefined;
  return (current) => {
    if (!tags.includes(entityTagOf(current)))
      throw preconditionFailed(
        `The ${what} changed since the version If-Match names; it is now at ${entityTagOf(current)}. Read it again, and send the change with its new ETag.`,
      );
  };
}
