/**
 * A tiny hash router: `/#/load-balancers/lb_123?x=1`. The service serves one index.html at
 * `/`, so no path ever needs a server-side fallback; routes.ts maps patterns to pages.
 */
import type { Route } from '../routes';

export interface Location {
  path: string;
  query: URLSearchParams;
}

function parse(): Location {
  const hash = window.location.hash.replace(/^#/, '') || '/';
  const [path, search = ''] = hash.split('?', 2);
  return { path: path.startsWith('/') ? path : `/${path}`, query: new URLSearchParams(search) };
}

export const location: Location = $state(parse());

window.addEventListener('hashchange', () => Object.assign(location, parse()));

export function navigate(path: string): void {
  window.location.hash = path;
}

/** The href of a console path, for links: `#/servers`. */
export const href = (path: string) => `#${path}`;

export interface Match {
  route: Route;
  params: Record<string, string>;
}

export function match(routes: Route[], path: string): Match | null {
  const segments = path.split('/').filter(Boolean);
  for (const route of routes) {
    const pattern = route.pattern.split('/').filter(Boolean);
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const fits = pattern.every((part, i) => {
      if (part.startsWith(':')) {
        params[part.slice(1)] = decodeURIComponent(segments[i]);
        return true;
      }
      return part === segments[i];
    });
    if (fits) return { route, params };
  }
  return null;
}
