/**
 * Errors are values with a docs/api.md code; src/api/plugins/errors.ts maps them to HTTP
 * in one place.
 */
import { pluralOf } from './plural';

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: FieldError[],
    readonly headers?: Record<string, string>,
    /** Problems beyond `details`, counted only (validationFailed). */
    readonly moreDetails = 0,
  ) {
    // An answer, not a fault: no stack to capture. A key refused hundreds of times a second
    // (429) otherwise spends a stack walk on each refusal.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ApiError';
  }
}

export const notFound = (resource: string, id?: string) =>
  new ApiError(404, `${resource}_not_found`, id ? `No ${resource.replace(/_/g, ' ')} with id ${id}.` : `The ${resource.replace(/_/g, ' ')} was not found.`);

/**
 * An answer names at most this many problems (error.details) and counts the rest
 * (error.more_details): a body of 100,000 bad items made a 10 MB answer otherwise.
 */
export const MAX_ERROR_DETAILS = 20;

/** `details` names problems (only the first MAX_ERROR_DETAILS are answered); `unnamed` counts more that were not written out. */
export const validationFailed = (details: FieldError[], unnamed = 0) => {
  const named = details.slice(0, MAX_ERROR_DETAILS);
  const more = details.length - named.length + unnamed;
  const listed = named.map((d) => `${d.field} ${d.message}`).join('; ');
  return new ApiError(422, 'validation_failed', `The request is invalid: ${listed}${more > 0 ? `; and ${more} more` : ''}.`, named, undefined, more);
};

export const fieldInvalid = (field: string, message: string) => validationFailed([{ field, message }]);

export const domainError = (code: string, message: string, field?: string) => new ApiError(422, code, message, field ? [{ field, message }] : undefined);

export const quotaExceeded = (title: string, limit: number) =>
  new ApiError(422, 'quota_exceeded', `The team's quota of ${limit} ${pluralOf(title)} is used up; delete one, or ask the operator for a higher quota.`);

export const forbidden = (message: string) => new ApiError(403, 'forbidden', message);

export const conflict = (code: string, message: string) => new ApiError(409, code, message);

export const invalidState = (message: string) => conflict('invalid_state', message);

/** A change sent with If-Match whose version no longer holds (api/entity-tags.ts). */
export const preconditionFailed = (message: string) => new ApiError(412, 'precondition_failed', message);

export const idempotencyKeyReused = () =>
  new ApiError(
    422,
    'idempotency_key_reused',
    'This Idempotency-Key was already used for another request (another body or another operation); use a new key for a new request.',
    [{ field: 'Idempotency-Key', message: 'was used for another request' }],
  );

export const resourceBusy = (message: string) => conflict('resource_busy', message);

export const providerUnavailable = (title: string, cause: string) =>
  new ApiError(503, 'provider_unavailable', `The ${title} cannot be checked: its provider does not answer (${cause}). Nothing was changed; retry later.`);

export const persistenceUnavailable = () =>
  new ApiError(503, 'persistence_unavailable', 'The store of record cannot be reached; the write was not made. Retry later.');

/** A read of what the service keeps in its data directory failed (EIO, a short file): that request fails, not the process. */
export const persistenceUnreadable = (cause: string) =>
  new ApiError(503, 'persistence_unavailable', `Stored history cannot be read from the data directory (${cause}); retry later.`);
