/**
 * Nullable enums that list `null`. A route writes a nullable enum as a union,
 * `Type.Union([Type.String({ enum: [...] }), Type.Null()])`, and @fastify/swagger folds that
 * into OpenAPI 3.0's `{ type: 'string', enum: [...], nullable: true }`. But an `enum` restricts
 * the value whatever `nullable` says (OpenAPI 3.0.3 says `nullable` adds null to the *type*
 * only), so a strict validator, and a generator that reads the enum, refused the null the
 * service answers (a backup's `method` before it started, its `restore_status` before any
 * restore). This adds `null` to every such enum in the document, wherever it is.
 */
import { isRecord } from '../../lib/unknown-values';

function visit(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) visit(item);
    return;
  }
  if (!isRecord(node)) return;
  if (node.nullable === true && Array.isArray(node.enum) && !node.enum.includes(null)) node.enum = [...(node.enum as unknown[]), null];
  for (const value of Object.values(node)) visit(value);
}

/** Lists null in the `enum` of every nullable schema of the document; returns the document. */
export function listNullInNullableEnums<D>(document: D): D {
  visit(document);
  return document;
}
