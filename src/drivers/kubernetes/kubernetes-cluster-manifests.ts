/**
 * The objects a hosted Kubernetes cluster is made of in its team's namespace (a control
 * plane as Pods, after Kamaji and vcluster), built from its desired state (pure), named
 * after the cluster's id (`k8s_abc` → `k8s-abc`), labelled and owned by its custom resource:
 * - Secret `<name>-pki`: the cluster's authority (made by the driver, kept for the cluster's
 *   life), the API server's serving certificate (the Service's DNS names and ClusterIP),
 *   etcd's certificate (its members' names, peers and clients alike), the API server's
 *   client certificate for etcd, the service-account key pair, and the operator's own
 *   client certificate (system:masters), which no Pod mounts;
 * - Secret `<name>-encryption`: kube-apiserver's encryption configuration (Secrets sealed
 *   with aesgcm in etcd);
 * - Secrets `<name>-controller-manager`, `<name>-scheduler`, `<name>-kwok`: each component's
 *   kubeconfig (a client certificate of the cluster's authority);
 * - Secret `<name>-kubeconfig`: the connection details (`kubeconfig`, `endpoint`,
 *   `certificate-authority`), the kubeconfig holding the bootstrap token, as Crossplane's
 *   connection Secrets hold a cluster's;
 * - ConfigMap `<name>-kwok`: the stages KWOK plays for the nodes (KWOK's own defaults);
 * - Service `<name>-etcd` (headless) and StatefulSet `<name>-etcd`: 1 member, 3 when `ha`,
 *   a claim each (`data-<name>-etcd-<n>`, deleted with the StatefulSet and when it scales down);
 * - Service `<name>` (ClusterIP, 6443): the API servers, the cluster's `endpoint`;
 * - Deployments `<name>-apiserver` (1 replica, 2 when `ha`), `<name>-controller-manager`,
 *   `<name>-scheduler` (leader-elected) and, for the `kwok` node provider, `<name>-kwok`.
 */
import type { V1ConfigMap, V1Container, V1Deployment, V1PodSpec, V1Secret, V1Service, V1StatefulSet, V1Volume } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { ID_LABEL } from '../../store/kubernetes/names';
import { KUBERNETES_VERSIONS, type KubernetesVersion } from '../../resources/kubernetes-cluster';
import { issueCertificate, newKey, privateKeyPem, publicKeyPem, type KeyPair } from '../../lib/x509';
import type { KubernetesClusterDesired } from '../kubernetes-cluster';
import { encryptionConfigOf, KWOK_ANNOTATION } from '../kubernetes-cluster-inside';
import type { Managed } from '../types';
import { managedLabels, ownerReferencesOf, Placement } from './objects';

export const API_PORT = 6443;
const ETCD_CLIENT_PORT = 2379;
const ETCD_PEER_PORT = 2380;
const ETCD_METRICS_PORT = 2381;
/** The hosted cluster's own Services and nodes' Pods: kube-apiserver's and KWOK's ranges. */
export const HOSTED_SERVICE_CIDR = '10.96.0.0/16';
const HOSTED_FIRST_SERVICE_IP = '10.96.0.1';
const KWOK_POD_CIDR = '10.245.0.0/16';
const PKI_DIR = '/etc/kubernetes/pki';
const ENCRYPTION_DIR = '/etc/kubernetes/encryption';
const KUBECONFIG_DIR = '/etc/kubernetes/kubeconfig';
const KWOK_DIR = '/etc/kwok';
const ETCD_DATA = '/var/lib/etcd';
const COMPONENT_LABEL = 'app.kubernetes.io/component';
/** The authority's name (the issuer of every certificate here). */
const CA_NAME = 'kubernetes';

/**
 * The release each minor runs (its images' tag): the newest patch of each at the time of
 * writing. 1.34.4 is also the release `make test` builds, which the driver's test runs.
 */
export const KUBERNETES_PATCHES: Record<KubernetesVersion, string> = { '1.31': '1.31.12', '1.32': '1.32.8', '1.33': '1.33.4', '1.34': '1.34.4' };

export const minorOf = (version: string | undefined): KubernetesVersion =>
  KUBERNETES_VERSIONS.find((v) => v === version) ?? KUBERNETES_VERSIONS[KUBERNETES_VERSIONS.length - 1];

export interface HostedClusterSettings {
  /** Where the control plane's images come from: `<registry>/kube-apiserver:v<patch>` (CLOUDPLANE_KUBERNETES_IMAGE_REGISTRY). */
  imageRegistry: string;
  /** etcd's image (CLOUDPLANE_KUBERNETES_ETCD_IMAGE). */
  etcdImage: string;
  /** KWOK's image, for the `kwok` node provider (CLOUDPLANE_KUBERNETES_KWOK_IMAGE). */
  kwokImage: string;
  /** The StorageClass of etcd's claims; null: the cluster's default (CLOUDPLANE_KUBERNETES_STORAGE_CLASS). */
  storageClass: string | null;
  /** Who plays the node pools' nodes (CLOUDPLANE_KUBERNETES_NODE_PROVIDER): KWOK, for now the only one. */
  nodeProvider: 'kwok';
}

export const DEFAULT_HOSTED_CLUSTER_SETTINGS: HostedClusterSettings = {
  imageRegistry: 'registry.k8s.io',
  etcdImage: 'registry.k8s.io/etcd:3.5.21-0',
  kwokImage: 'registry.k8s.io/kwok/kwok:v0.8.0',
  storageClass: null,
  nodeProvider: 'kwok',
};

/** Each etcd member's claim. */
export const ETCD_STORAGE = '4Gi';

/** The keys of the PKI Secret. */
export const PKI_KEYS = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  apiserverCert: 'apiserver.crt',
  apiserverKey: 'apiserver.key',
  etcdCert: 'etcd.crt',
  etcdKey: 'etcd.key',
  etcdClientCert: 'apiserver-etcd-client.crt',
  etcdClientKey: 'apiserver-etcd-client.key',
  serviceAccountKey: 'sa.key',
  serviceAccountPub: 'sa.pub',
  operatorCert: 'operator.crt',
  operatorKey: 'operator.key',
} as const;
export type Pki = Record<(typeof PKI_KEYS)[keyof typeof PKI_KEYS], string> & { component: Record<Component, { cert: string; key: string }> };
export const ENCRYPTION_KEY = 'encryption-config.yaml';
export const KUBECONFIG_KEY = 'kubeconfig';
export const STAGES_KEY = 'stages.yaml';
/** The connection Secret's keys. */
export const CONNECTION_KEYS = { kubeconfig: 'kubeconfig', endpoint: 'endpoint', certificateAuthority: 'certificate-authority' } as const;

export const COMPONENTS = ['controller-manager', 'scheduler', 'kwok'] as const;
export type Component = (typeof COMPONENTS)[number];
const CLIENT_CERT_KEY = 'client.crt';
const CLIENT_KEY_KEY = 'client.key';
/** Each component's client identity: the users Kubernetes' default RBAC binds, and KWOK as an administrator (it writes nodes' and Pods' status). */
const COMPONENT_USERS: Record<Component, { commonName: string; organizations?: string[] }> = {
  'controller-manager': { commonName: 'system:kube-controller-manager' },
  scheduler: { commonName: 'system:kube-scheduler' },
  kwok: { commonName: 'cloudplane:kwok', organizations: ['system:masters'] },
};

export const etcdName = ({ name }: Placement) => `${name}-etcd`;
export const deploymentName = ({ name }: Placement, component: 'apiserver' | Component) => `${name}-${component}`;
export const secretName = ({ name }: Placement, what: 'pki' | 'encryption' | 'kubeconfig' | Component) => `${name}-${what}`;
/** `<svc>.<namespace>.svc`: how the components reach the API servers. */
export const serviceHost = ({ name, namespace }: Placement) => `${name}.${namespace}.svc`;
/** The DNS name of etcd member `n`, through the headless Service. */
export const etcdMemberHost = (placement: Placement, n: number) => `${etcdName(placement)}-${n}.${etcdName(placement)}.${placement.namespace}.svc`;
export const etcdMembers = (ha: boolean) => (ha ? 3 : 1);
export const apiServerReplicas = (ha: boolean) => (ha ? 2 : 1);
export const endpointOf = (clusterIp: string) => `https://${clusterIp}:${API_PORT}`;

/** What each component's Pods are selected by: the cluster's id and the component. */
export function podSelector(id: string, component: string): Record<string, string> {
  return { [ID_LABEL]: id, [COMPONENT_LABEL]: component };
}

/**
 * A new PKI for the cluster whose API Service has `clusterIp`: the authority, and every
 * certificate it signs, each with a key of its own (ECDSA P-256).
 */
export async function newPki(placement: Placement, clusterIp: string): Promise<Pki> {
  const ca = await issueCertificate({ commonName: CA_NAME, ca: true });
  const issuer = { commonName: CA_NAME, key: ca.key };
  const svc = serviceHost(placement);
  const apiserver = await issueCertificate(
    {
      commonName: 'kube-apiserver',
      usages: ['server'],
      altNames: [
        placement.name,
        `${placement.name}.${placement.namespace}`,
        svc,
        `${svc}.cluster.local`,
        clusterIp,
        // What the cluster's own workloads call it (its `kubernetes` Service in `default`), and the Pods' probes.
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
        HOSTED_FIRST_SERVICE_IP,
        'localhost',
        '127.0.0.1',
      ],
    },
    issuer,
  );
  const etcdHeadless = `${etcdName(placement)}.${placement.namespace}.svc`;
  const etcd = await issueCertificate({ commonName: 'etcd', altNames: [`*.${etcdHeadless}`, etcdHeadless, 'localhost', '127.0.0.1'] }, issuer);
  const etcdClient = await issueCertificate({ commonName: 'kube-apiserver-etcd-client', usages: ['client'] }, issuer);
  const operator = await issueCertificate({ commonName: 'cloudplane-operator', organizations: ['system:masters'], usages: ['client'] }, issuer);
  const sa = newKey();
  const component = await componentIdentities((c) => issueComponentIdentity(c, ca.key));
  return {
    [PKI_KEYS.caCert]: ca.cert,
    [PKI_KEYS.caKey]: ca.key,
    [PKI_KEYS.apiserverCert]: apiserver.cert,
    [PKI_KEYS.apiserverKey]: apiserver.key,
    [PKI_KEYS.etcdCert]: etcd.cert,
    [PKI_KEYS.etcdKey]: etcd.key,
    [PKI_KEYS.etcdClientCert]: etcdClient.cert,
    [PKI_KEYS.etcdClientKey]: etcdClient.key,
    [PKI_KEYS.serviceAccountKey]: privateKeyPem(sa.privateKey),
    [PKI_KEYS.serviceAccountPub]: publicKeyPem(sa.publicKey),
    [PKI_KEYS.operatorCert]: operator.cert,
    [PKI_KEYS.operatorKey]: operator.key,
    component,
  };
}

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const decode = (data: Record<string, string> | undefined, key: string) => (data?.[key] ? Buffer.from(data[key], 'base64').toString('utf8') : null);

/** The PKI Secret's certificates and keys, or null where any is missing. */
export function pkiBaseOf(secret: V1Secret | null): Omit<Pki, 'component'> | null {
  const fields = Object.fromEntries(Object.values(PKI_KEYS).map((key) => [key, decode(secret?.data, key)]));
  return Object.values(fields).every((v) => v !== null) ? (fields as Omit<Pki, 'component'>) : null;
}

/** A component's client certificate and key, kept in its kubeconfig's Secret, or null. */
export function componentIdentityOf(secret: V1Secret | null): { cert: string; key: string } | null {
  const cert = decode(secret?.data, CLIENT_CERT_KEY);
  const key = decode(secret?.data, CLIENT_KEY_KEY);
  return cert && key ? { cert, key } : null;
}

/** A new client identity of `component`, signed by the cluster's authority. */
export function issueComponentIdentity(component: Component, caKey: string): Promise<KeyPair> {
  return issueCertificate({ ...COMPONENT_USERS[component], usages: ['client'] }, { commonName: CA_NAME, key: caKey });
}

/** Every component's identity, as `identity` gives it. */
export async function componentIdentities(identity: (component: Component) => Promise<KeyPair>): Promise<Pki['component']> {
  const pairs = await Promise.all(COMPONENTS.map(async (c) => [c, await identity(c)] as const));
  return Object.fromEntries(pairs) as Pki['component'];
}

/** The PKI the cluster's Secrets hold, or null where any part is missing. */
export function pkiOf(pki: V1Secret | null, components: Record<Component, V1Secret | null>): Pki | null {
  const base = pkiBaseOf(pki);
  if (!base) return null;
  const component: Partial<Pki['component']> = {};
  for (const c of COMPONENTS) {
    const identity = componentIdentityOf(components[c]);
    if (!identity) return null;
    component[c] = identity;
  }
  return { ...base, component: component as Pki['component'] };
}

/** The encryption key the cluster's Secret holds, or null. */
export function encryptionKeyOf(secret: V1Secret | null): string | null {
  const config = decode(secret?.data, ENCRYPTION_KEY);
  return config ? (/secret: (\S+)/.exec(config)?.[1] ?? null) : null;
}

/** A kubeconfig of the cluster: `server`, its authority, and a user by token or by client certificate. */
export function kubeconfigOf(
  clusterName: string,
  server: string,
  caCert: string,
  user: { name: string; token: string } | { name: string; cert: string; key: string },
): string {
  const credential = 'token' in user ? { token: user.token } : { 'client-certificate-data': base64(user.cert), 'client-key-data': base64(user.key) };
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: clusterName, cluster: { server, 'certificate-authority-data': base64(caCert) } }],
    users: [{ name: user.name, user: credential }],
    contexts: [{ name: clusterName, context: { cluster: clusterName, user: user.name } }],
    'current-context': clusterName,
  });
}

type Named = { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };
type Made<T> = T & Named;

export interface HostedClusterObjects {
  pki: Made<V1Secret>;
  encryption: Made<V1Secret>;
  controllerManagerConfig: Made<V1Secret>;
  schedulerConfig: Made<V1Secret>;
  kwokConfig: Made<V1Secret>;
  connection: Made<V1Secret>;
  kwokStages: Made<V1ConfigMap>;
  etcdService: Made<V1Service>;
  etcd: Made<V1StatefulSet>;
  apiService: Made<V1Service>;
  apiserver: Made<V1Deployment>;
  controllerManager: Made<V1Deployment>;
  scheduler: Made<V1Deployment>;
  kwok: Made<V1Deployment>;
}

/** What the driver fixed when it made the cluster, and what it runs. */
export interface HostedShape {
  /** The minor the control plane's images are of. */
  version: KubernetesVersion;
  /** etcd's members (a member count is fixed once etcd formed its cluster). */
  etcd_members: number;
  storage_class: string | null;
}

/** The API Service alone: applied first, as the serving certificate names its ClusterIP. */
export function apiServiceOf(resource: Managed<KubernetesClusterDesired>, placement: Placement): Made<V1Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadataOf(resource, placement, placement.name, 'kube-apiserver'),
    spec: {
      type: 'ClusterIP',
      selector: podSelector(resource.id, 'kube-apiserver'),
      ports: [{ name: 'https', port: API_PORT, targetPort: 'https', protocol: 'TCP' }],
    },
  };
}

function metadataOf(resource: Managed<KubernetesClusterDesired>, placement: Placement, name: string, component: string) {
  return {
    name,
    namespace: placement.namespace,
    labels: { ...managedLabels(resource.id), [COMPONENT_LABEL]: component, 'app.kubernetes.io/part-of': 'kubernetes-control-plane' },
    ownerReferences: ownerReferencesOf(resource.owner),
  };
}

/**
 * Every object of the cluster: `pki` and `encryptionKey` made once and kept, `clusterIp`
 * the API Service's, `token` the kubeconfig's (a bootstrap token).
 */
export function hostedClusterObjects(
  resource: Managed<KubernetesClusterDesired>,
  placement: Placement,
  settings: HostedClusterSettings,
  shape: HostedShape,
  pki: Pki,
  encryptionKey: string,
  clusterIp: string,
  token: string,
): HostedClusterObjects {
  const { id, desired } = resource;
  const { namespace } = placement;
  const meta = (name: string, component: string) => metadataOf(resource, placement, name, component);
  const patch = KUBERNETES_PATCHES[shape.version];
  const image = (component: string) => `${settings.imageRegistry}/${component}:v${patch}`;
  const inside = `https://${serviceHost(placement)}:${API_PORT}`;
  const componentConfig = (component: Component): Made<V1Secret> => ({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: meta(secretName(placement, component), component === 'kwok' ? 'kwok' : `kube-${component}`),
    data: {
      [KUBECONFIG_KEY]: base64(
        kubeconfigOf(placement.name, inside, pki[PKI_KEYS.caCert], { name: COMPONENT_USERS[component].commonName, ...pki.component[component] }),
      ),
      // Kept beside the kubeconfig, so the driver reads the component's identity back on later passes.
      [CLIENT_CERT_KEY]: base64(pki.component[component].cert),
      [CLIENT_KEY_KEY]: base64(pki.component[component].key),
    },
  });
  const endpoint = endpointOf(clusterIp);
  const members = Array.from({ length: shape.etcd_members }, (_, n) => n);
  const etcd = etcdName(placement);

  return {
    pki: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: meta(secretName(placement, 'pki'), 'pki'),
      data: Object.fromEntries(Object.values(PKI_KEYS).map((key) => [key, base64(pki[key])])),
    },
    encryption: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: meta(secretName(placement, 'encryption'), 'kube-apiserver'),
      data: { [ENCRYPTION_KEY]: base64(encryptionConfigOf(encryptionKey)) },
    },
    controllerManagerConfig: componentConfig('controller-manager'),
    schedulerConfig: componentConfig('scheduler'),
    kwokConfig: componentConfig('kwok'),
    connection: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: meta(secretName(placement, 'kubeconfig'), 'connection'),
      data: {
        [CONNECTION_KEYS.kubeconfig]: base64(kubeconfigOf(desired.name, endpoint, pki[PKI_KEYS.caCert], { name: `${desired.name}-admin`, token })),
        [CONNECTION_KEYS.endpoint]: base64(endpoint),
        [CONNECTION_KEYS.certificateAuthority]: base64(pki[PKI_KEYS.caCert]),
      },
    },
    kwokStages: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(deploymentName(placement, 'kwok'), 'kwok'),
      data: { [STAGES_KEY]: KWOK_NODE_STAGES },
    },
    etcdService: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(etcd, 'etcd'),
      spec: {
        clusterIP: 'None',
        // Members find each other before any is Ready (a quorum is needed for that).
        publishNotReadyAddresses: true,
        selector: podSelector(id, 'etcd'),
        ports: [
          { name: 'client', port: ETCD_CLIENT_PORT, targetPort: 'client', protocol: 'TCP' },
          { name: 'peer', port: ETCD_PEER_PORT, targetPort: 'peer', protocol: 'TCP' },
        ],
      },
    },
    etcd: {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: meta(etcd, 'etcd'),
      spec: {
        serviceName: etcd,
        replicas: shape.etcd_members,
        // Every member at once: none is Ready before a quorum of them runs.
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: podSelector(id, 'etcd') },
        persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
        template: {
          metadata: { labels: meta(etcd, 'etcd').labels },
          spec: podSpec(
            [
              {
                name: 'etcd',
                image: settings.etcdImage,
                command: ['etcd'],
                args: [
                  '--name=$(POD_NAME)',
                  `--data-dir=${ETCD_DATA}/data`,
                  `--listen-client-urls=https://0.0.0.0:${ETCD_CLIENT_PORT}`,
                  `--advertise-client-urls=https://$(POD_NAME).${etcd}.${namespace}.svc:${ETCD_CLIENT_PORT}`,
                  `--listen-peer-urls=https://0.0.0.0:${ETCD_PEER_PORT}`,
                  `--initial-advertise-peer-urls=https://$(POD_NAME).${etcd}.${namespace}.svc:${ETCD_PEER_PORT}`,
                  `--initial-cluster=${members.map((n) => `${etcd}-${n}=https://${etcdMemberHost(placement, n)}:${ETCD_PEER_PORT}`).join(',')}`,
                  '--initial-cluster-state=new',
                  `--initial-cluster-token=${placement.name}`,
                  `--listen-metrics-urls=http://0.0.0.0:${ETCD_METRICS_PORT}`,
                  '--client-cert-auth=true',
                  `--trusted-ca-file=${PKI_DIR}/${PKI_KEYS.caCert}`,
                  `--cert-file=${PKI_DIR}/${PKI_KEYS.etcdCert}`,
                  `--key-file=${PKI_DIR}/${PKI_KEYS.etcdKey}`,
                  '--peer-client-cert-auth=true',
                  `--peer-trusted-ca-file=${PKI_DIR}/${PKI_KEYS.caCert}`,
                  `--peer-cert-file=${PKI_DIR}/${PKI_KEYS.etcdCert}`,
                  `--peer-key-file=${PKI_DIR}/${PKI_KEYS.etcdKey}`,
                ],
                env: [fieldEnv('POD_NAME', 'metadata.name'), fieldEnv('POD_IP', 'status.podIP')],
                ports: [
                  { name: 'client', containerPort: ETCD_CLIENT_PORT, protocol: 'TCP' },
                  { name: 'peer', containerPort: ETCD_PEER_PORT, protocol: 'TCP' },
                  { name: 'metrics', containerPort: ETCD_METRICS_PORT, protocol: 'TCP' },
                ],
                readinessProbe: { httpGet: { path: '/health', port: 'metrics', scheme: 'HTTP' }, periodSeconds: 5, failureThreshold: 3 },
                resources: { requests: { cpu: '100m', memory: '256Mi' } },
                volumeMounts: [
                  { name: 'data', mountPath: ETCD_DATA },
                  { name: 'pki', mountPath: PKI_DIR, readOnly: true },
                ],
              },
            ],
            [pkiVolume(placement, [PKI_KEYS.caCert, PKI_KEYS.etcdCert, PKI_KEYS.etcdKey])],
          ),
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data', labels: meta(etcd, 'etcd').labels },
            spec: {
              accessModes: ['ReadWriteOnce'],
              ...(shape.storage_class ? { storageClassName: shape.storage_class } : {}),
              resources: { requests: { storage: ETCD_STORAGE } },
            },
          },
        ],
      },
    },
    apiService: apiServiceOf(resource, placement),
    apiserver: deployment(
      resource,
      placement,
      'apiserver',
      'kube-apiserver',
      apiServerReplicas(desired.ha),
      {
        name: 'kube-apiserver',
        image: image('kube-apiserver'),
        command: ['kube-apiserver'],
        args: [
          '--advertise-address=$(POD_IP)',
          `--secure-port=${API_PORT}`,
          `--etcd-servers=${members.map((n) => `https://${etcdMemberHost(placement, n)}:${ETCD_CLIENT_PORT}`).join(',')}`,
          `--etcd-cafile=${PKI_DIR}/${PKI_KEYS.caCert}`,
          `--etcd-certfile=${PKI_DIR}/${PKI_KEYS.etcdClientCert}`,
          `--etcd-keyfile=${PKI_DIR}/${PKI_KEYS.etcdClientKey}`,
          `--client-ca-file=${PKI_DIR}/${PKI_KEYS.caCert}`,
          `--tls-cert-file=${PKI_DIR}/${PKI_KEYS.apiserverCert}`,
          `--tls-private-key-file=${PKI_DIR}/${PKI_KEYS.apiserverKey}`,
          '--service-account-issuer=https://kubernetes.default.svc',
          `--service-account-key-file=${PKI_DIR}/${PKI_KEYS.serviceAccountPub}`,
          `--service-account-signing-key-file=${PKI_DIR}/${PKI_KEYS.serviceAccountKey}`,
          `--service-cluster-ip-range=${HOSTED_SERVICE_CIDR}`,
          // The kubeconfig's token: a bootstrap token, its Secret in the cluster's kube-system.
          '--enable-bootstrap-token-auth=true',
          `--encryption-provider-config=${ENCRYPTION_DIR}/${ENCRYPTION_KEY}`,
          '--authorization-mode=Node,RBAC',
          '--enable-admission-plugins=NodeRestriction',
          '--allow-privileged=true',
          // No streaming lists: an etcd before 3.4.31 (CLOUDPLANE_KUBERNETES_ETCD_IMAGE may name one) sends none of the progress notifications they wait for.
          '--feature-gates=WatchList=false',
        ],
        env: [fieldEnv('POD_IP', 'status.podIP')],
        ports: [{ name: 'https', containerPort: API_PORT, protocol: 'TCP' }],
        readinessProbe: { httpGet: { path: '/readyz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 5, failureThreshold: 3 },
        resources: { requests: { cpu: '250m', memory: '512Mi' } },
        volumeMounts: [
          { name: 'pki', mountPath: PKI_DIR, readOnly: true },
          { name: 'encryption', mountPath: ENCRYPTION_DIR, readOnly: true },
        ],
      },
      [
        pkiVolume(placement, [
          PKI_KEYS.caCert,
          PKI_KEYS.apiserverCert,
          PKI_KEYS.apiserverKey,
          PKI_KEYS.etcdClientCert,
          PKI_KEYS.etcdClientKey,
          PKI_KEYS.serviceAccountKey,
          PKI_KEYS.serviceAccountPub,
        ]),
        { name: 'encryption', secret: { secretName: secretName(placement, 'encryption'), defaultMode: 0o400 } },
      ],
    ),
    controllerManager: deployment(
      resource,
      placement,
      'controller-manager',
      'kube-controller-manager',
      apiServerReplicas(desired.ha),
      {
        name: 'kube-controller-manager',
        image: image('kube-controller-manager'),
        command: ['kube-controller-manager'],
        args: [
          ...componentKubeconfigArgs(),
          '--leader-elect=true',
          '--use-service-account-credentials=true',
          '--controllers=*,bootstrapsigner,tokencleaner',
          `--service-account-private-key-file=${PKI_DIR}/${PKI_KEYS.serviceAccountKey}`,
          `--root-ca-file=${PKI_DIR}/${PKI_KEYS.caCert}`,
          `--cluster-signing-cert-file=${PKI_DIR}/${PKI_KEYS.caCert}`,
          `--cluster-signing-key-file=${PKI_DIR}/${PKI_KEYS.caKey}`,
          `--service-cluster-ip-range=${HOSTED_SERVICE_CIDR}`,
        ],
        readinessProbe: { httpGet: { path: '/healthz', port: 10257, scheme: 'HTTPS' }, periodSeconds: 10, failureThreshold: 3 },
        resources: { requests: { cpu: '100m', memory: '128Mi' } },
        volumeMounts: [
          { name: 'kubeconfig', mountPath: KUBECONFIG_DIR, readOnly: true },
          { name: 'pki', mountPath: PKI_DIR, readOnly: true },
        ],
      },
      [kubeconfigVolume(placement, 'controller-manager'), pkiVolume(placement, [PKI_KEYS.caCert, PKI_KEYS.caKey, PKI_KEYS.serviceAccountKey])],
    ),
    scheduler: deployment(
      resource,
      placement,
      'scheduler',
      'kube-scheduler',
      apiServerReplicas(desired.ha),
      {
        name: 'kube-scheduler',
        image: image('kube-scheduler'),
        command: ['kube-scheduler'],
        args: [...componentKubeconfigArgs(), '--leader-elect=true'],
        readinessProbe: { httpGet: { path: '/healthz', port: 10259, scheme: 'HTTPS' }, periodSeconds: 10, failureThreshold: 3 },
        resources: { requests: { cpu: '50m', memory: '64Mi' } },
        volumeMounts: [{ name: 'kubeconfig', mountPath: KUBECONFIG_DIR, readOnly: true }],
      },
      [kubeconfigVolume(placement, 'scheduler')],
    ),
    kwok: deployment(
      resource,
      placement,
      'kwok',
      'kwok',
      1,
      {
        name: 'kwok',
        image: settings.kwokImage,
        command: ['kwok'],
        args: [
          `--kubeconfig=${KUBECONFIG_DIR}/${KUBECONFIG_KEY}`,
          `--config=${KWOK_DIR}/${STAGES_KEY}`,
          // Only the nodes the driver registers for the pools.
          '--manage-all-nodes=false',
          `--manage-nodes-with-annotation-selector=${KWOK_ANNOTATION}=fake`,
          '--node-lease-duration-seconds=40',
          `--cidr=${KWOK_POD_CIDR}`,
        ],
        resources: { requests: { cpu: '50m', memory: '64Mi' } },
        volumeMounts: [
          { name: 'kubeconfig', mountPath: KUBECONFIG_DIR, readOnly: true },
          { name: 'stages', mountPath: KWOK_DIR, readOnly: true },
        ],
      },
      [kubeconfigVolume(placement, 'kwok'), { name: 'stages', configMap: { name: deploymentName(placement, 'kwok') } }],
    ),
  };
}

function componentKubeconfigArgs(): string[] {
  const file = `${KUBECONFIG_DIR}/${KUBECONFIG_KEY}`;
  return [`--kubeconfig=${file}`, `--authentication-kubeconfig=${file}`, `--authorization-kubeconfig=${file}`];
}

const fieldEnv = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });

function pkiVolume(placement: Placement, keys: string[]): V1Volume {
  return { name: 'pki', secret: { secretName: secretName(placement, 'pki'), defaultMode: 0o400, items: keys.map((key) => ({ key, path: key })) } };
}

function kubeconfigVolume(placement: Placement, component: Component): V1Volume {
  return {
    name: 'kubeconfig',
    secret: { secretName: secretName(placement, component), defaultMode: 0o400, items: [{ key: KUBECONFIG_KEY, path: KUBECONFIG_KEY }] },
  };
}

function podSpec(containers: V1Container[], volumes: V1Volume[]): V1PodSpec {
  return { automountServiceAccountToken: false, enableServiceLinks: false, containers, volumes };
}

function deployment(
  resource: Managed<KubernetesClusterDesired>,
  placement: Placement,
  name: 'apiserver' | Component,
  component: string,
  replicas: number,
  container: V1Container,
  volumes: V1Volume[],
): Made<V1Deployment> {
  const metadata = metadataOf(resource, placement, deploymentName(placement, name), component);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas,
      selector: { matchLabels: podSelector(resource.id, component) },
      template: { metadata: { labels: metadata.labels }, spec: podSpec([container], volumes) },
    },
  };
}

/**
 * The stages KWOK plays for the nodes: KWOK v0.8.0's own defaults for nodes
 * (kustomize/stage/node/fast/node-initialize.yaml and
 * kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml of its
 * release), as kwokctl hands them to kwok, which plays no stage it is not given.
 */
const KWOK_NODE_STAGES = `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type  | Quote}}
      {{ end }}

      {{ $hasInternalIP := false }}
      {{ $hasHostname := false }}
      {{ range .status.addresses }}
        {{ if eq .type "InternalIP" }}
          {{ $hasInternalIP = true }}
        {{ end }}
        {{ if eq .type "Hostname" }}
          {{ $hasHostname = true }}
        {{ end }}
      {{ end }}
      {{ if or (not $hasInternalIP) (not $hasHostname) }}
      addresses:
      {{ end }}
      {{ if not $hasInternalIP }}
      {{ with NodeIP }}
      - address: {{ . | Quote }}
        type: InternalIP
      {{ end }}
      {{ end }}
      {{ if not $hasHostname }}
      {{ with NodeName }}
      - address: {{ . | Quote }}
        type: Hostname
      {{ end }}
      {{ end }}

      {{ with NodePort }}
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ . }}
      {{ end }}

      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: 1k
        memory: 1Ti
        pods: 1M
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: 1k
        memory: 1Ti
        pods: 1M
      {{ end }}

      {{ $nodeInfo := .status.nodeInfo }}
      {{ $kwokVersion := printf "kwok-%s" Version }}
      nodeInfo:
        architecture: {{ or $nodeInfo.architecture "amd64" }}
        bootID: {{ or $nodeInfo.bootID \`""\` }}
        containerRuntimeVersion: {{ or $nodeInfo.containerRuntimeVersion $kwokVersion }}
        kernelVersion: {{ or $nodeInfo.kernelVersion $kwokVersion }}
        kubeProxyVersion: {{ or $nodeInfo.kubeProxyVersion $kwokVersion }}
        kubeletVersion: {{ or $nodeInfo.kubeletVersion $kwokVersion }}
        machineID: {{ or $nodeInfo.machineID \`""\` }}
        operatingSystem: {{ or $nodeInfo.operatingSystem "linux" }}
        osImage: {{ or $nodeInfo.osImage \`""\` }}
        systemUUID: {{ or $nodeInfo.systemUUID \`""\` }}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-heartbeat-with-lease
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values:
      - 'True'
  delay:
    durationMilliseconds: 600000
    jitterDurationMilliseconds: 610000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}

      addresses:
      {{ with .status.addresses }}
      {{ YAML . 1 }}
      {{ else }}
      {{ with NodeIP }}
      - address: {{ . | Quote }}
        type: InternalIP
      {{ end }}
      {{ with NodeName }}
      - address: {{ . | Quote }}
        type: Hostname
      {{ end }}
      {{ end }}

      {{ with NodePort }}
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ . }}
      {{ end }}
`;
