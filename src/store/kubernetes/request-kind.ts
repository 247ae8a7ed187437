/**
 * What a request to the Kubernetes API server is, by its method and URL, as the API
 * server's own RequestInfo tells it (and its audit log and RBAC name it): a verb and a
 * resource. Counted per request (cloudplane_kube_api_requests_total) so that the calls a
 * resource costs on its way to `running` can be read off a running operator.
 */

export interface RequestKind {
  verb: string;
  /** `plural` (core group), `plural.group`, with `/subresource` where one is called. */
  resource: string;
}

/** Path segments of a namespace that are its own subresources, not a namespaced collection. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

export function requestKindOf(method: string, url: string): RequestKind {
  const { pathname, searchParams } = new URL(url, 'https://kubernetes.invalid');
  const parts = pathname.split('/').filter(Boolean);
  // /api/v1/... (core) or /apis/<group>/<version>/...
  let group: string;
  let rest: string[];
  if (parts[0] === 'api') [group, rest] = ['', parts.slice(2)];
  else if (parts[0] === 'apis') [group, rest] = [parts[1] ?? '', parts.slice(3)];
  else return { verb: method.toLowerCase(), resource: 'non-resource' };
  if (rest[0] === 'namespaces' && rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2])) rest = rest.slice(2);
  // Any of them may be missing, so each is read with at().
  const [plural, name, subresource] = [rest.at(0) ?? '', rest.at(1), rest.at(2)];
  const resource = `${plural}${group ? `.${group}` : ''}${subresource ? `/${subresource}` : ''}`;
  return { verb: verbOf(method.toUpperCase(), name !== undefined, searchParams.get('watch') === 'true'), resource };
}

function verbOf(method: string, named: boolean, watch: boolean): string {
  switch (method) {
    case 'GET':
      return watch ? 'watch' : named ? 'get' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      return method.toLowerCase();
  }
}
