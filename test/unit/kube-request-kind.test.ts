/**
 * The verb and resource of a request to the Kubernetes API server, named as the API
 * server's audit log and RBAC name them (src/store/kubernetes/request-kind.ts).
 */
import { requestKindOf } from '../../src/store/kubernetes/request-kind';

const SERVER = 'https://127.0.0.1:6443';

it.each([
  ['POST', '/apis/cloudplane.dev/v1/namespaces/cp-team/loadbalancers', 'create', 'loadbalancers.cloudplane.dev'],
  ['PUT', '/apis/cloudplane.dev/v1/namespaces/cp-team/loadbalancers/lb-1/status', 'update', 'loadbalancers.cloudplane.dev/status'],
  ['PUT', '/apis/cloudplane.dev/v1/namespaces/cp-team/loadbalancers/lb-1', 'update', 'loadbalancers.cloudplane.dev'],
  ['GET', '/apis/cloudplane.dev/v1/namespaces/cp-team/loadbalancers/lb-1', 'get', 'loadbalancers.cloudplane.dev'],
  ['GET', '/apis/cloudplane.dev/v1/loadbalancers', 'list', 'loadbalancers.cloudplane.dev'],
  ['GET', '/apis/cloudplane.dev/v1/loadbalancers?watch=true&resourceVersion=5', 'watch', 'loadbalancers.cloudplane.dev'],
  ['DELETE', '/apis/cloudplane.dev/v1/namespaces/cp-team/loadbalancers/lb-1', 'delete', 'loadbalancers.cloudplane.dev'],
  ['DELETE', '/apis/cloudplane.dev/v1/namespaces/cp-team/loadbalancers', 'deletecollection', 'loadbalancers.cloudplane.dev'],
  ['POST', '/api/v1/namespaces/cp-team/events', 'create', 'events'],
  ['GET', '/api/v1/secrets?labelSelector=app.kubernetes.io%2Fmanaged-by', 'list', 'secrets'],
  ['GET', '/api/v1/namespaces/cp-team/pods/p-1/log', 'get', 'pods/log'],
  ['PATCH', '/apis/apps/v1/namespaces/cp-team/deployments/lb-1?fieldManager=cloudplane', 'patch', 'deployments.apps'],
  ['POST', '/api/v1/namespaces', 'create', 'namespaces'],
  ['GET', '/api/v1/namespaces/cp-team', 'get', 'namespaces'],
  ['PUT', '/api/v1/namespaces/cp-team/finalize', 'update', 'namespaces/finalize'],
  ['PUT', '/apis/coordination.k8s.io/v1/namespaces/cloudplane-system/leases/cloudplane-leader', 'update', 'leases.coordination.k8s.io'],
])('%s %s is %s of %s', (method, path, verb, resource) => {
  expect(requestKindOf(method, `${SERVER}${path}`)).toEqual({ verb, resource });
});

it('names a request to no resource as such', () => {
  expect(requestKindOf('GET', `${SERVER}/version`)).toEqual({ verb: 'get', resource: 'non-resource' });
});
