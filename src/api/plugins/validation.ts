/**
 * Request validation with ajv. Bodies are checked strictly (no type coercion, no removal
 * of unknown fields, every error collected; the answer names the first few, lib/errors.ts);
 * query strings and path parameters arrive as text, so they are coerced, integers only
 * from decimal digits. ajv has no way to stop collecting after a number of errors: its
 * work is bounded by each route's body limit (api/body-limits.ts) and the schemas' maxItems
 * and maxLength instead.
 */
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { fieldInvalid } from '../../lib/errors';
import { isTimestamp } from '../../lib/timestamps';
import type { SchemaCompilation, Validation } from './schema-compilation';

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes, removeAdditional: false, useDefaults: false, strict: false });
  addFormats(ajv);
  // ajv-formats' date-time takes a leap second and a space for the T, which Date.parse then
  // reads as NaN: every timestamp a request sends is read by the one strict parser instead.
  ajv.addFormat('date-time', { type: 'string', validate: isTimestamp });
  return ajv;
}

/** What a query string or path may spell an integer as: decimal digits, nothing else. */
const DECIMAL = /^[0-9]+$/;

/** The schema of a query string or of path parameters: an object of named properties. */
interface PartSchema {
  properties?: Record<string, { type?: unknown }>;
}

/** ajv's coercion takes anything Number() does (`0x10`, `1e2`, ` 5`, `5.0`): refuse those, beside ajv's own findings. */
function decimalIntegersOnly(schema: PartSchema, validate: ValidateFunction): Validation {
  const integers = Object.entries(schema.properties ?? {})
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name);
  if (integers.length === 0) return validate;
  const check: Validation = (data) => {
    const issues: ErrorObject[] = integers
      .filter((name) => data?.[name] !== undefined && [data[name]].flat().some((value) => typeof value !== 'string' || !DECIMAL.test(value)))
      .map((name) => ({
        instancePath: `/${name}`,
        schemaPath: '#/decimal',
        keyword: 'type',
        params: { type: 'integer' },
        message: 'must be an integer written in decimal digits',
      }));
    const valid = validate(data);
    const reported = new Set(issues.map((issue) => issue.instancePath));
    check.errors = [...issues, ...(validate.errors ?? []).filter((error) => !reported.has(error.instancePath))];
    return valid && issues.length === 0;
  };
  return check;
}

/**
 * Fastify's own formatter writes every issue into the error's message, which nothing reads
 * (api/plugins/errors.ts names the fields from `error.validation`): for a body of 100,000
 * bad items that was a string of megabytes per request.
 */
export const schemaErrorFormatter = (_errors: unknown[], dataVar: string): Error => new Error(`The ${dataVar} is invalid.`);

/** Each route's validators compile on their first request (plugins/schema-compilation.ts). */
export function registerValidation(app: FastifyInstance, compilation: SchemaCompilation): void {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  app.setValidatorCompiler<PartSchema>(({ schema, httpPart }) =>
    compilation.validator(() => (httpPart === 'body' ? strict.compile(schema) : decimalIntegersOnly(schema, coercing.compile(schema)))),
  );

  // The API speaks JSON only: Fastify's built-in text/plain parser would let a text body
  // through to validation (422) instead of answering 415.
  app.removeContentTypeParser('text/plain');
  // An empty body with a JSON content type is no body at all (POST .../cancel with curl -H).
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') {
      done(null, undefined);
      return;
    }
    // Called with a callback, the default parser answers through it; its type also allows a promise.
    void defaultJson(request, body, (err, parsed) => {
      if (err) {
        done(err, undefined);
        return;
      }
      const field = illFormedField(body, parsed);
      if (field !== null) {
        done(fieldInvalid(field || 'body', 'is not valid Unicode (a lone surrogate)'), undefined);
        return;
      }
      done(null, parsed);
    });
  });
}

/**
 * The first field (or key) holding a lone UTF-16 surrogate, which JSON's \u escapes allow:
 * the embedded store would keep it, the Kubernetes API server would turn it into U+FFFD,
 * so the same request would store different text. Refused on both instead.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A value still to look at, and how it was reached (kept as links, so depth costs no copies). */
interface Pending {
  value: unknown;
  parent: Pending | null;
  /** `.key` or `[i]`; empty for the body itself. */
  step: string;
}

/** Field names name at most this many levels: a path into a 10,000-deep body stays readable. */
const MAX_FIELD_DEPTH = 16;

function fieldOf(item: Pending): string {
  const steps: string[] = [];
  for (let at: Pending | null = item; at; at = at.parent) steps.push(at.step);
  return steps
    .reverse()
    .slice(0, MAX_FIELD_DEPTH + 1)
    .join('')
    .replace(/^\./, '');
}

/**
 * A lone surrogate can only come from a \u escape (the body is decoded from UTF-8, which
 * cannot carry one): a body without any escape of the range is not walked at all. The
 * pattern may also match an escaped backslash before `uD800`: that body is walked, no harm.
 */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * Walks the parsed body with a stack of its own, not recursion: any depth JSON.parse takes
 * is fine. Only containers are stacked; a number or a string costs no allocation.
 */
function illFormedField(text: string, body: unknown): string | null {
  if (!SURROGATE_ESCAPE.test(text)) return null;
  const root: Pending = { value: body, parent: null, step: '' };
  if (typeof body === 'string') return LONE_SURROGATE.test(body) ? fieldOf(root) : null;
  const stack: Pending[] = [root];
  const visit = (parent: Pending, value: unknown, step: string): string | null => {
    if (typeof value === 'string') return LONE_SURROGATE.test(value) ? fieldOf({ value, parent, step }) : null;
    if (value !== null && typeof value === 'object') stack.push({ value, parent, step });
    return null;
  };
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value } = item;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        const found = visit(item, value[i], `[${i}]`);
        if (found !== null) return found;
      }
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      if (entries.some(([key]) => LONE_SURROGATE.test(key))) return fieldOf(item);
      for (let i = entries.length - 1; i >= 0; i--) {
        const found = visit(item, entries[i][1], `.${entries[i][0]}`);
        if (found !== null) return found;
      }
    }
  }
  return null;
}
