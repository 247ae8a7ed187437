/**
 * Route schemas compile on their first use, not at start-up. Compiling every route's
 * validators (ajv) and answer serializers (fast-json-stringify) up front was most of a
 * start's CPU (bench/results/service-start-latest.md): a replica that restarts, or a test that
 * starts a service to call three routes, paid for all 140-odd operations. Now a route that
 * is never called costs nothing, and the first call of each compiles what it needs, once.
 *
 * What is still waiting can be compiled at once (compileWaitingSchemas): a test does, so a
 * schema that cannot compile fails the suite, as it failed the start before.
 */
import type { FastifyInstance, FastifySchemaValidationError } from 'fastify';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Serializer = (data: unknown) => string;

/** What Fastify needs of a validator: a check of the part, and the issues of the last one. */
export interface Validation {
  (data: Record<string, unknown> | null): boolean;
  errors?: FastifySchemaValidationError[] | null;
}

/** The compilations an app has deferred, and the one way to run them. */
export class SchemaCompilation {
  /** The compilations not run yet, each taken out as it runs. */
  private readonly waiting = new Set<() => unknown>();

  /** A validator that compiles on its first check and forwards the compiled one's issues. */
  validator(compile: () => Validation): Validation {
    const compiled = this.defer(compile);
    const check: Validation = (data) => {
      const validate = compiled();
      const valid = validate(data);
      check.errors = validate.errors;
      return valid;
    };
    return check;
  }

  /** A serializer that compiles on its first answer. */
  serializer(compile: () => Serializer): Serializer {
    const compiled = this.defer(compile);
    return (data) => compiled()(data);
  }

  /**
   * Fastify's own serializer factory (the one it uses when given none), each compilation
   * deferred: for the `schemaController.compilersFactory.buildSerializer` option.
   */
  serializerFactory(): ReturnType<typeof SerializerSelector> {
    const build = SerializerSelector();
    return (externalSchemas, options) => {
      const compiler = build(externalSchemas, options);
      return (route) => this.serializer(() => compiler(route));
    };
  }

  /** Compiles every schema still waiting; returns how many there were. */
  compileAll(): number {
    const waiting = [...this.waiting];
    for (const compiled of waiting) compiled();
    return waiting.length;
  }

  /** The result of `compile`, made on the first call and kept: after that, a call is a read. */
  private defer<T>(compile: () => T): () => T {
    let result: T | undefined;
    const compiled = (): T => {
      if (result === undefined) {
        result = compile();
        this.waiting.delete(compiled);
      }
      return result;
    };
    this.waiting.add(compiled);
    return compiled;
  }
}

const compilations = new WeakMap<FastifyInstance, SchemaCompilation>();

export function keepSchemaCompilation(app: FastifyInstance, compilation: SchemaCompilation): void {
  compilations.set(app, compilation);
}

/** Compiles every route schema of the app not used yet (throwing on one that cannot compile); returns how many. */
export function compileWaitingSchemas(app: FastifyInstance): number {
  return compilations.get(app)?.compileAll() ?? 0;
}
