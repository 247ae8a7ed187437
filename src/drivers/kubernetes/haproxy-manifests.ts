/**
 * The three objects a load balancer is made of in its team's namespace, built from its
 * desired state (pure): a ConfigMap with the rendered haproxy.cfg, a Deployment running
 * HAProxy on it, and a Service of type LoadBalancer in front. All three are named after
 * the load balancer's id, labelled and owned by its custom resource.
 *
 * Rolling out without dropping connections:
 * - the Pod template carries the configuration's hash, so a new configuration is a new
 *   ReplicaSet, rolled with maxSurge 1 and maxUnavailable 0 (a new Pod is ready before an
 *   old one stops);
 * - readiness is HAProxy's own /healthz on the stats port;
 * - a stopping Pod first waits for the Service's endpoints to drop it, then soft-stops
 *   HAProxy (SIGUSR1: listeners close, open connections finish, bounded by hard-stop-after),
 *   within a grace period longer than that.
 *
 * The Service keeps the client's address (externalTrafficPolicy Local): `ip_hash` hashes
 * it and X-Forwarded-For reports it, where a node's SNAT would show the node's instead.
 */
import { createHash } from 'node:crypto';
import type { V1ConfigMap, V1Deployment, V1ResourceRequirements, V1Service, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { ID_LABEL } from '../../store/kubernetes/names';
import { READY_PATH, renderHaproxyConfig } from '../haproxy/render';
import type { LoadBalancerDesired } from '../load-balancer';
import type { Managed } from '../types';
import { managedLabels, ownerReferencesOf, Placement } from './objects';

export const CONTAINER_NAME = 'haproxy';
export const CONFIG_KEY = 'haproxy.cfg';
export const CONFIG_HASH_ANNOTATION = 'cloudplane.dev/config-hash';
export const CERTIFICATE_VERSION_ANNOTATION = 'cloudplane.dev/certificate-version';
const COMPONENT_LABEL = 'app.kubernetes.io/component';
const COMPONENT = 'load-balancer';
const CONFIG_DIR = '/usr/local/etc/haproxy';
const TLS_DIR = '/etc/haproxy/tls';
/** HAProxy reads the key beside the certificate as `<file>.key`. */
const CERTIFICATE_FILE = `${TLS_DIR}/tls.pem`;
/** Unprivileged ports inside the Pod; the Service maps the spec's port onto the frontend's. */
export const FRONTEND_CONTAINER_PORT = 8080;
/** Time for the endpoints to drop a stopping Pod before HAProxy stops accepting. */
const PRE_STOP_DELAY_SECONDS = 5;

export interface HaproxyDeploymentSettings {
  image: string;
  replicas: number;
  /** The stats and readiness endpoint in the Pod (also where the driver reads backend health). */
  statsPort: number;
  /** How long a stopping or replaced HAProxy may keep serving open connections. */
  drainTimeoutMs: number;
  /** How often HAProxy checks each backend. */
  checkIntervalMs: number;
  resources: V1ResourceRequirements;
  /** A rollout that makes no progress for this long counts as failed (the Deployment's own deadline). */
  progressDeadlineSeconds: number;
}

export const DEFAULT_HAPROXY_SETTINGS: HaproxyDeploymentSettings = {
  image: 'docker.io/library/haproxy:2.6',
  replicas: 2,
  statsPort: 8404,
  drainTimeoutMs: 60_000,
  checkIntervalMs: 2_000,
  resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } },
  progressDeadlineSeconds: 600,
};

/** The certificate as it is mounted: the Secret's name and its resourceVersion, so a renewed certificate rolls out. */
export interface MountedCertificate {
  secretName: string;
  version: string;
}

export interface HaproxyObjects {
  config: string;
  configHash: string;
  configMap: V1ConfigMap & Named;
  /** Null for https without a certificate to mount: there is no Pod that could serve. */
  deployment: (V1Deployment & Named) | null;
  service: V1Service & Named;
}

type Named = { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };

/** What the Deployment selects: its own Pods, by id and role. */
export function podSelector(id: string): Record<string, string> {
  return { [ID_LABEL]: id, [COMPONENT_LABEL]: COMPONENT };
}

export function haproxyObjects(
  resource: Managed<LoadBalancerDesired>,
  { namespace, name }: Placement,
  settings: HaproxyDeploymentSettings,
  certificate: MountedCertificate | null,
): HaproxyObjects {
  const { desired } = resource;
  const tls = desired.protocol === 'https';
  const config = renderHaproxyConfig(desired, {
    listen: { port: FRONTEND_CONTAINER_PORT },
    stats: { port: settings.statsPort },
    certificateFile: tls ? CERTIFICATE_FILE : null,
    checkIntervalMs: settings.checkIntervalMs,
    timeouts: { hardStopAfterMs: settings.drainTimeoutMs },
  });
  const configHash = createHash('sha256').update(config).digest('hex').slice(0, 16);
  const labels = { ...managedLabels(resource.id), [COMPONENT_LABEL]: COMPONENT, 'app.kubernetes.io/name': 'haproxy' };
  const metadata = { name, namespace, labels, ownerReferences: ownerReferencesOf(resource.owner) };

  const volumes: V1Volume[] = [{ name: 'config', configMap: { name, items: [{ key: CONFIG_KEY, path: CONFIG_KEY }] } }];
  const mounts: V1VolumeMount[] = [{ name: 'config', mountPath: CONFIG_DIR, readOnly: true }];
  const annotations: Record<string, string> = { [CONFIG_HASH_ANNOTATION]: configHash };
  if (tls && certificate) {
    volumes.push({
      name: 'tls',
      secret: {
        secretName: certificate.secretName,
        items: [
          { key: 'tls.crt', path: 'tls.pem' },
          { key: 'tls.key', path: 'tls.pem.key' },
        ],
      },
    });
    mounts.push({ name: 'tls', mountPath: TLS_DIR, readOnly: true });
    annotations[CERTIFICATE_VERSION_ANNOTATION] = certificate.version;
  }
  const drainSeconds = Math.ceil(settings.drainTimeoutMs / 1000);
  const readiness = { httpGet: { path: READY_PATH, port: 'stats' } };

  return {
    config,
    configHash,
    configMap: { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { [CONFIG_KEY]: config } },
    deployment:
      tls && !certificate
        ? null
        : {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata,
            spec: {
              replicas: settings.replicas,
              revisionHistoryLimit: 3,
              progressDeadlineSeconds: settings.progressDeadlineSeconds,
              selector: { matchLabels: podSelector(resource.id) },
              strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
              template: {
                metadata: { labels, annotations },
                spec: {
                  automountServiceAccountToken: false,
                  enableServiceLinks: false,
                  terminationGracePeriodSeconds: PRE_STOP_DELAY_SECONDS + drainSeconds + 5,
                  containers: [
                    {
                      name: CONTAINER_NAME,
                      image: settings.image,
                      command: ['haproxy', '-W', '-db', '-f', `${CONFIG_DIR}/${CONFIG_KEY}`],
                      ports: [
                        { name: 'frontend', containerPort: FRONTEND_CONTAINER_PORT, protocol: 'TCP' },
                        { name: 'stats', containerPort: settings.statsPort, protocol: 'TCP' },
                      ],
                      readinessProbe: { ...readiness, periodSeconds: 2, failureThreshold: 2 },
                      livenessProbe: { ...readiness, periodSeconds: 10, failureThreshold: 3 },
                      lifecycle: {
                        preStop: {
                          exec: {
                            // HAProxy is PID 1 (its master); SIGUSR1 soft-stops it and it exits once its connections are done.
                            command: ['/bin/sh', '-c', `sleep ${PRE_STOP_DELAY_SECONDS}; kill -USR1 1; while kill -0 1 2>/dev/null; do sleep 1; done`],
                          },
                        },
                      },
                      resources: settings.resources,
                      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                      volumeMounts: mounts,
                    },
                  ],
                  volumes,
                },
              },
            },
          },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata,
      spec: {
        type: 'LoadBalancer',
        externalTrafficPolicy: 'Local',
        selector: podSelector(resource.id),
        ports: [{ name: 'frontend', port: desired.port, targetPort: 'frontend', protocol: 'TCP' }],
      },
    },
  };
}
