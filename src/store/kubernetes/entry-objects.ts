/**
 * The Kubernetes objects that hold the store's named entries (named-entries.ts): a Secret
 * for a secret, a ConfigMap for a record that is not secret. Both carry the store's name of
 * the entry in an annotation (object names are DNS names) and a label the watch selects by.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { RECORD_NAME_ANNOTATION, SECRET_NAME_ANNOTATION, STORE_RECORD_LABEL, entryObjectName } from './names';

/** What the store reads of an entry's object: the typed client's answers and the watch's JSON both are this. */
export interface EntryObject {
  metadata?: { namespace?: string; resourceVersion?: string; annotations?: Record<string, string>; creationTimestamp?: string | Date; managedFields?: unknown };
  data?: Record<string, string>;
}

interface EntryBody {
  apiVersion: 'v1';
  kind: string;
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string>; resourceVersion?: string };
  [field: string]: unknown;
}

/** How the entries of one port are kept as objects of one Kubernetes kind. */
export interface EntryObjects {
  /** The collection the store watches them in (namespaced-watches.ts). */
  collection: 'secrets' | 'storeRecords';
  /** The annotation that carries an entry's store name. */
  nameAnnotation: string;
  objectName(name: string): string;
  body(name: string, namespace: string, data: Record<string, string>, resourceVersion?: string): EntryBody;
  data(object: EntryObject): Record<string, string>;
  create(core: CoreV1Api, namespace: string, body: EntryBody): Promise<EntryObject>;
  read(core: CoreV1Api, name: string, namespace: string): Promise<EntryObject>;
  replace(core: CoreV1Api, name: string, namespace: string, body: EntryBody): Promise<EntryObject>;
  remove(core: CoreV1Api, name: string, namespace: string): Promise<{ metadata?: { resourceVersion?: string } } | undefined>;
}

const metadataOf = (name: string, objectName: string, namespace: string, annotation: string, labels: Record<string, string>, resourceVersion?: string) => ({
  name: objectName,
  namespace,
  labels: { 'app.kubernetes.io/managed-by': 'cloudplane', ...labels },
  annotations: { [annotation]: name },
  ...(resourceVersion ? { resourceVersion } : {}),
});

/** Secrets: data base64-encoded by the API server (written as stringData). */
export const SECRET_OBJECTS: EntryObjects = {
  collection: 'secrets',
  nameAnnotation: SECRET_NAME_ANNOTATION,
  objectName: entryObjectName,
  body: (name, namespace, data, resourceVersion) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: metadataOf(name, entryObjectName(name), namespace, SECRET_NAME_ANNOTATION, {}, resourceVersion),
    stringData: data,
  }),
  data: (object) => Object.fromEntries(Object.entries(object.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])),
  create: (core, namespace, body) => core.createNamespacedSecret({ namespace, body }),
  read: (core, name, namespace) => core.readNamespacedSecret({ name, namespace }),
  replace: (core, name, namespace, body) => core.replaceNamespacedSecret({ name, namespace, body }),
  remove: (core, name, namespace) => core.deleteNamespacedSecret({ name, namespace }),
};

/**
 * ConfigMaps: data as it is. Named apart from the drivers' ConfigMaps (a load balancer's
 * HAProxy configuration), and labelled so that the store's watch lists its own alone.
 */
const recordObjectName = (name: string) => entryObjectName(`cloudplane-record-${name}`);

export const RECORD_OBJECTS: EntryObjects = {
  collection: 'storeRecords',
  nameAnnotation: RECORD_NAME_ANNOTATION,
  objectName: recordObjectName,
  body: (name, namespace, data, resourceVersion) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadataOf(name, recordObjectName(name), namespace, RECORD_NAME_ANNOTATION, { [STORE_RECORD_LABEL]: 'true' }, resourceVersion),
    data,
  }),
  data: (object) => ({ ...object.data }),
  create: (core, namespace, body) => core.createNamespacedConfigMap({ namespace, body }),
  read: (core, name, namespace) => core.readNamespacedConfigMap({ name, namespace }),
  replace: (core, name, namespace, body) => core.replaceNamespacedConfigMap({ name, namespace, body }),
  remove: (core, name, namespace) => core.deleteNamespacedConfigMap({ name, namespace }),
};
