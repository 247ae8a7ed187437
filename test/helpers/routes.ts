/** Method and full URL of every route in Fastify's printRoutes({commonPrefix: false}) tree. */
export function routesOf(tree: string): Array<{ method: string; url: string }> {
  const routes: Array<{ method: string; url: string }> = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+) \(([A-Z, ]+)\)/.exec(line);
    if (!match) continue;
    const depth = match[1].length / 4;
    stack.length = depth;
    stack.push(match[2]);
    for (const method of match[3].split(', ')) routes.push({ method, url: stack.join('') });
  }
  return routes;
}

/** The routes that take a body: every method but GET, HEAD and OPTIONS. */
export const isWrite = ({ method }: { method: string }) => !['GET', 'HEAD', 'OPTIONS'].includes(method);

/** A route's URL with each `:param` filled in, for requests refused before any lookup. */
export const concretePath = (url: string) => url.replace(/:[a-z_]+/g, 'x_0000000000000000');
