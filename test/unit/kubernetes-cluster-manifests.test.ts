/**
 * The hosted control plane's objects as the kubernetes Kubernetes cluster driver builds them
 * (pure): each minor's release in the images, `ha`'s replicas, the settings' images and
 * StorageClass, and the token in the connection Secret alone.
 */
import { X509Certificate } from 'node:crypto';
import {
  DEFAULT_HOSTED_CLUSTER_SETTINGS,
  hostedClusterObjects,
  KUBERNETES_PATCHES,
  newPki,
  type Pki,
  PKI_KEYS,
} from '../../src/drivers/kubernetes/kubernetes-cluster-manifests';
import { KUBERNETES_VERSIONS, type KubernetesVersion } from '../../src/resources/kubernetes-cluster';
import type { KubernetesClusterDesired } from '../../src/drivers/kubernetes-cluster';

const placement = { namespace: 'team-a', name: 'k8s-abc' };
let pki: Pki;
beforeAll(async () => {
  pki = await newPki(placement, '10.0.0.12');
});
const TOKEN = 'abcdef.0123456789abcdef';

function objects(version: KubernetesVersion, ha: boolean) {
  const desired: KubernetesClusterDesired = {
    name: 'dev',
    region: 'fra1',
    version,
    ha,
    token_version: 0,
    node_pools: [{ name: 'workers', size: 's-1vcpu-2gb', count: 2, labels: {}, taints: [] }],
    token: TOKEN,
  };
  return hostedClusterObjects(
    { id: 'k8s_abc', team: 'a', generation: 1, desired, external: null, owner: null },
    placement,
    { ...DEFAULT_HOSTED_CLUSTER_SETTINGS, imageRegistry: 'mirror.example/k8s', storageClass: 'fast' },
    { version, etcd_members: ha ? 3 : 1, storage_class: 'fast' },
    pki,
    Buffer.alloc(32).toString('base64'),
    '10.0.0.12',
    TOKEN,
  );
}

describe('the hosted control plane’s objects', () => {
  it.each(KUBERNETES_VERSIONS.map((v) => [v]))('runs %s’s release from the configured registry', (version) => {
    const made = objects(version, false);
    const image = (d: typeof made.apiserver) => d.spec!.template.spec!.containers[0].image;
    expect(image(made.apiserver)).toBe(`mirror.example/k8s/kube-apiserver:v${KUBERNETES_PATCHES[version]}`);
    expect(image(made.controllerManager)).toBe(`mirror.example/k8s/kube-controller-manager:v${KUBERNETES_PATCHES[version]}`);
    expect(image(made.scheduler)).toBe(`mirror.example/k8s/kube-scheduler:v${KUBERNETES_PATCHES[version]}`);
    expect(KUBERNETES_PATCHES[version].startsWith(`${version}.`)).toBe(true);
  });

  it('gives ha three etcd members and two of each control-plane Deployment, all named in the API server’s etcd servers', () => {
    const ha = objects('1.34', true);
    expect(ha.etcd.spec!.replicas).toBe(3);
    expect(ha.apiserver.spec!.replicas).toBe(2);
    expect(ha.kwok.spec!.replicas).toBe(1);
    const args = ha.apiserver.spec!.template.spec!.containers[0].args!;
    expect(args.find((a) => a.startsWith('--etcd-servers='))!.split(',')).toHaveLength(3);
    expect(ha.etcd.spec!.template.spec!.containers[0].args).toContain(
      '--initial-cluster=k8s-abc-etcd-0=https://k8s-abc-etcd-0.k8s-abc-etcd.team-a.svc:2380,k8s-abc-etcd-1=https://k8s-abc-etcd-1.k8s-abc-etcd.team-a.svc:2380,k8s-abc-etcd-2=https://k8s-abc-etcd-2.k8s-abc-etcd.team-a.svc:2380',
    );
    const single = objects('1.34', false);
    expect(single.etcd.spec!.replicas).toBe(1);
    expect(single.apiserver.spec!.replicas).toBe(1);
    expect(single.etcd.spec!.volumeClaimTemplates![0].spec!.storageClassName).toBe('fast');
  });

  it('holds the token in the connection Secret alone, and gives no Pod the operator’s key', () => {
    const made = objects('1.34', false);
    const b64 = Buffer.from(TOKEN).toString('base64');
    for (const [key, object] of Object.entries(made)) {
      const text = JSON.stringify(object);
      if (key === 'connection') expect(Buffer.from(made.connection.data!.kubeconfig, 'base64').toString()).toContain(TOKEN);
      else expect(text.includes(TOKEN) || text.includes(b64)).toBe(false);
    }
    const mounted = [made.etcd.spec!.template, made.apiserver.spec!.template, made.controllerManager.spec!.template]
      .flatMap((template) => template.spec!.volumes ?? [])
      .flatMap((volume) => volume.secret?.items?.map((item) => item.key) ?? []);
    expect(mounted).not.toContain(PKI_KEYS.operatorKey);
  });

  it('makes a serving certificate for the Service’s names and ClusterIP', () => {
    const cert = new X509Certificate(pki[PKI_KEYS.apiserverCert]);
    expect(cert.checkIP('10.0.0.12')).toBe('10.0.0.12');
    expect(cert.checkHost('k8s-abc.team-a.svc')).toBe('k8s-abc.team-a.svc');
    expect(cert.verify(new X509Certificate(pki[PKI_KEYS.caCert]).publicKey)).toBe(true);
  });
});
