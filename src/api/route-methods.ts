/**
 * The methods each route answers, so that a request the router did not match can be told
 * apart: a path that exists under other methods answers 405 with `Allow`, not 404.
 * Fastify's own lookups (hasRoute, findRoute) take a route pattern, not a request path.
 */
export class RouteMethods {
  private readonly routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();

  add(url: string, methods: string | string[]): void {
    const entry = this.routes.get(url) ?? { pattern: patternOf(url), methods: new Set<string>() };
    for (const method of [methods].flat()) entry.methods.add(method.toUpperCase());
    this.routes.set(url, entry);
  }

  /** The methods some route answers on this path, sorted; empty when no route has it. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const { pattern, methods: answered } of this.routes.values()) {
      if (pattern.test(path)) for (const method of answered) methods.add(method);
    }
    return [...methods].sort();
  }
}

/** `/api/v1/servers/:id/stop` -> a RegExp matching one path segment per parameter. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}
