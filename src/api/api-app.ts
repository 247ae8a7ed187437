/**
 * The Fastify instance every route and plugin of the API is given: with the TypeBox type
 * provider, a route's `request.params`, `query` and `body` have the types of the schemas
 * that validate them, so no handler casts its input.
 */
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

export type { TypeBoxTypeProvider };
export type ApiApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;
