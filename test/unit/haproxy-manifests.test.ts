/**
 * The objects a load balancer is made of, as the driver builds them (pure), and the
 * comparison observe uses to tell whether the live objects still hold them. The workload
 * cluster test (test/integration/load-balancer-haproxy.test.ts) applies them for real.
 */
import type { LoadBalancerDesired } from '../../src/drivers/load-balancer';
import type { Managed } from '../../src/drivers/types';
import {
  CERTIFICATE_VERSION_ANNOTATION,
  CONFIG_HASH_ANNOTATION,
  CONFIG_KEY,
  DEFAULT_HAPROXY_SETTINGS,
  haproxyObjects,
  podSelector,
} from '../../src/drivers/kubernetes/haproxy-manifests';
import { holdsDesired } from '../../src/drivers/kubernetes/applied';
import { desiredLoadBalancer } from '../helpers/load-balancer-desired';

const owner = { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'LoadBalancer', name: 'lb-aaaaaaaaaaaaaaaaaaaa', uid: '0b6c1f0e-1111-2222-3333-444444444444' };

function resource(overrides: Partial<LoadBalancerDesired> = {}): Managed<LoadBalancerDesired> {
  return {
    id: 'lb_aaaaaaaaaaaaaaaaaaaa',
    team: 'team_bbbbbbbbbbbbbbbbbbbb',
    generation: 1,
    external: null,
    owner,
    desired: desiredLoadBalancer({
      backends: [{ server_id: 'svr_cccccccccccccccccccc', port: 8080, address: '10.244.1.7', draining: false, drain_until: null }],
      ...overrides,
    }),
  };
}

const NS = 'team-bbbbbbbbbbbbbbbbbbbb';
const AT = { namespace: NS, name: 'lb-aaaaaaaaaaaaaaaaaaaa' };

describe('HAProxy objects for Kubernetes', () => {
  it('names, labels and owns all three after the load balancer', () => {
    const objects = haproxyObjects(resource(), AT, DEFAULT_HAPROXY_SETTINGS, null);
    for (const object of [objects.configMap, objects.deployment!, objects.service]) {
      expect(object.metadata).toMatchObject({
        name: 'lb-aaaaaaaaaaaaaaaaaaaa',
        namespace: NS,
        labels: { 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': 'lb_aaaaaaaaaaaaaaaaaaaa' },
        ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }],
      });
    }
    expect(haproxyObjects({ ...resource(), owner: null }, AT, DEFAULT_HAPROXY_SETTINGS, null).configMap.metadata).not.toHaveProperty(
      'ownerReferences',
      expect.anything(),
    );
  });

  it('runs the rendered configuration, exposed on the spec port through an unprivileged container port', () => {
    const objects = haproxyObjects(resource({ port: 80 }), AT, DEFAULT_HAPROXY_SETTINGS, null);
    expect(objects.configMap.data![CONFIG_KEY]).toBe(objects.config);
    expect(objects.config).toContain('bind *:8080');
    expect(objects.config).toContain('server svr_cccccccccccccccccccc-8080 10.244.1.7:8080 check');
    const pod = objects.deployment!.spec!.template;
    expect(pod.metadata!.annotations).toEqual({ [CONFIG_HASH_ANNOTATION]: objects.configHash });
    const container = pod.spec!.containers[0];
    expect(container.image).toBe(DEFAULT_HAPROXY_SETTINGS.image);
    expect(container.command).toEqual(['haproxy', '-W', '-db', '-f', '/usr/local/etc/haproxy/haproxy.cfg']);
    expect(container.readinessProbe!.httpGet).toEqual({ path: '/healthz', port: 'stats' });
    expect(objects.deployment!.spec!.selector.matchLabels).toEqual(podSelector('lb_aaaaaaaaaaaaaaaaaaaa'));
    expect(objects.service.spec).toMatchObject({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      selector: podSelector('lb_aaaaaaaaaaaaaaaaaaaa'),
      ports: [{ name: 'frontend', port: 80, targetPort: 'frontend', protocol: 'TCP' }],
    });
    // The grace period outlasts the drain HAProxy is given.
    expect(pod.spec!.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(DEFAULT_HAPROXY_SETTINGS.drainTimeoutMs);
    expect(objects.config).toContain(`hard-stop-after ${DEFAULT_HAPROXY_SETTINGS.drainTimeoutMs / 1000}s`);
  });

  it('changes the Pod template hash exactly when the configuration changes', () => {
    const one = haproxyObjects(resource(), AT, DEFAULT_HAPROXY_SETTINGS, null);
    expect(haproxyObjects(resource(), AT, DEFAULT_HAPROXY_SETTINGS, null).configHash).toBe(one.configHash);
    const drained = resource();
    drained.desired.backends[0] = { ...drained.desired.backends[0], draining: true, drain_until: '2030-01-01T00:00:00.000Z' };
    expect(haproxyObjects(drained, AT, DEFAULT_HAPROXY_SETTINGS, null).configHash).not.toBe(one.configHash);
    // The frontend port is the Service's: the configuration, and so the Pods, stay.
    expect(haproxyObjects(resource({ port: 8000 }), AT, DEFAULT_HAPROXY_SETTINGS, null).configHash).toBe(one.configHash);
  });

  it('mounts the certificate Secret for https, and makes no Deployment without one', () => {
    const https = resource({ protocol: 'https', port: 443, ssl_certificate_id: 'web-tls' });
    expect(haproxyObjects(https, AT, DEFAULT_HAPROXY_SETTINGS, null).deployment).toBeNull();
    const objects = haproxyObjects(https, AT, DEFAULT_HAPROXY_SETTINGS, { secretName: 'web-tls', version: '42' });
    const pod = objects.deployment!.spec!.template;
    expect(pod.metadata!.annotations![CERTIFICATE_VERSION_ANNOTATION]).toBe('42');
    expect(pod.spec!.volumes).toContainEqual({
      name: 'tls',
      secret: {
        secretName: 'web-tls',
        items: [
          { key: 'tls.crt', path: 'tls.pem' },
          { key: 'tls.key', path: 'tls.pem.key' },
        ],
      },
    });
    expect(pod.spec!.containers[0].volumeMounts).toContainEqual({ name: 'tls', mountPath: '/etc/haproxy/tls', readOnly: true });
    expect(objects.config).toContain('bind *:8080 ssl crt "/etc/haproxy/tls/tls.pem"');
  });

  it('holdsDesired: extra members are defaults, a missing or changed field or list element is a difference', () => {
    const desired = { spec: { ports: [{ port: 80, targetPort: 'frontend' }], type: 'LoadBalancer' } };
    expect(
      holdsDesired({ spec: { ports: [{ port: 80, targetPort: 'frontend', nodePort: 31000 }], type: 'LoadBalancer', clusterIP: '10.0.0.5' } }, desired),
    ).toBe(true);
    expect(holdsDesired({ spec: { ports: [{ port: 81, targetPort: 'frontend' }], type: 'LoadBalancer' } }, desired)).toBe(false);
    expect(holdsDesired({ spec: { ports: [{ port: 80, targetPort: 'frontend' }, { port: 443 }], type: 'LoadBalancer' } }, desired)).toBe(false);
    expect(holdsDesired({ spec: { ports: [] } }, desired)).toBe(false);
    expect(holdsDesired(null, desired)).toBe(false);
    expect(holdsDesired({ a: 1 }, { a: undefined })).toBe(true);
  });
});
