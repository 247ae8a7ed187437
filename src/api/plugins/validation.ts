/**
 * Request validation with ajv. Bodies are checked strictly (no type coercion, no removal
 * of unknown fields, every error reported); query strings and path parameters arrive
 * as text, so they are coerced.
 */
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes, removeAdditional: false, useDefaults: false, strict: false });
  addFormats(ajv);
  return ajv;
}

export function registerValidation(app: FastifyInstance): void {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema));

  // The API speaks JSON only: Fastify's built-in text/plain parser would let a text body
  // through to validation (422) instead of answering 415.
  app.removeContentTypeParser('text/plain');
  // An empty body with a JSON content type is no body at all (POST .../cancel with curl -H).
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    defaultJson(request, body as string, done);
  });
}
