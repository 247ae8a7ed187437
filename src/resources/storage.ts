/** Storage families: S3-style object storage buckets and NFS file shares. */
import { Static, Type } from '@sinclair/typebox';
import { assertRegionAvailable } from './regions';
import { fieldInvalid } from '../lib/errors';
import { serverFamily } from './server';
import type { BaseStatus, ConnectionDetails, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
import { presentDetails } from './family';
import {
  baseRecordProperties,
  reconcileRecord,
  reconcileRecordProperties,
  baseStatusProperties,
  ExternalRecordSchema,
  Region,
  ResourceName,
  strictObject,
  connectionSecretProperty,
  recordTimes,
} from './schema-kit';
import type { ExternalRecord } from './external-record';
import { REGIONAL_COLUMNS } from './presentation';

const STATES = ['creating', 'available', 'failed', 'deleted', 'destroyed'] as const;

export interface BucketSpec {
  name: string;
  region: string;
  public: boolean;
}
export interface BucketStatus extends BaseStatus {
  endpoint: string | null;
  s3_bucket?: string | null;
  data_events?: boolean;
  external?: ExternalRecord;
}
export type Bucket = Resource<BucketSpec, BucketStatus>;

const BucketName = Type.String({
  minLength: 3,
  maxLength: 63,
  pattern: '^[a-z0-9][a-z0-9-]*[a-z0-9]$',
  description: 'Bucket name: 3-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit; unique in the team.',
});
const Public = Type.Boolean({ description: 'Whether objects can be read without credentials.' });
const DataEvents = Type.Boolean({
  description:
    "Whether changes to the bucket's objects are data.* events: true under the bucket driver `s3` once the bucket is available, when the installation takes its endpoint's notifications (CLOUDPLANE_S3_NOTIFICATION_SECRET); false under the simulated driver, whose objects nothing observes.",
});

const BucketCreate = strictObject({ name: BucketName, region: Region(), public: Type.Optional(Public) });
// Only `public` changes: the name is the bucket's name on the endpoint, which S3 cannot rename.
const BucketUpdate = strictObject({ public: Type.Optional(Public) });

/** A file share's mount target as connection details: a claim in the namespace (`<namespace>/<claim>`) or an NFS export (`<host>:<path>`). */
function mountDetails(target: string, namespace: string): ConnectionDetails {
  if (target.startsWith(`${namespace}/`)) return { mount_target: target, claim_name: target.slice(namespace.length + 1) };
  const nfs = /^([^:/]+):(\/.*)$/.exec(target);
  return nfs ? { mount_target: target, nfs_server: nfs[1], nfs_path: nfs[2] } : { mount_target: target };
}

export const bucketFamily: FamilyDefinition<BucketSpec, BucketStatus> = {
  name: 'bucket',
  quota: { default: 1000 },
  title: 'bucket',
  kind: 'Bucket',
  plural: 'buckets',
  shortNames: ['cpbkt'],
  path: 'object-storage',
  idPrefix: 'bkt',
  states: STATES,
  readyStates: ['available'],
  providerBacked: true,
  deletion: 'immediate',
  deletionGuard: {
    code: 'bucket_not_empty',
    message: 'The bucket still holds objects. Delete them first, or delete the bucket with ?force=true to delete them with it.',
  },
  creationEvent: 'created',
  eventVerbs: { updated: 'had a new configuration applied (a PATCH, or an edit of its custom resource).' },
  uniqueNames: true,
  description: 'An S3-compatible object storage bucket.',
  schemas: {
    create: BucketCreate,
    update: BucketUpdate,
    spec: strictObject({ name: BucketName, region: Region(), public: Public, ...connectionSecretProperty() }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      endpoint: Type.Union([Type.String(), Type.Null()], { description: 'S3 endpoint of the bucket.' }),
      s3_bucket: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: "The bucket's name on the S3 endpoint." })),
      data_events: Type.Optional(Type.Boolean({ description: "Whether changes to the bucket's objects become data.* events." })),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('bkt', STATES),
      ...reconcileRecordProperties(),
      name: BucketName,
      region: Region(),
      public: Public,
      endpoint: Type.Union([Type.String(), Type.Null()], { description: 'S3 endpoint URL of the bucket; null until it is available.' }),
      s3_bucket: Type.Union([Type.String(), Type.Null()], {
        description:
          "The bucket's name on the S3 endpoint (`<prefix>-<team>-<name>`, shortened with a hash past 63 characters), for S3 clients; null until it is available, and under the simulated driver.",
      }),
      data_events: DataEvents,
    }),
  },
  specFromCreate(body: Static<typeof BucketCreate>, { config }) {
    assertRegionAvailable(config, body.region);
    return { name: body.name, region: body.region, public: body.public ?? false };
  },
  applyUpdate: (spec, patch: Static<typeof BucketUpdate>) => ({ ...spec, ...patch }),
  initialStatus: () => ({ endpoint: null, s3_bucket: null }),
  nameOf: (spec) => spec.name,
  connectionDetails: ({ spec, status }) =>
    status.endpoint ? presentDetails({ endpoint: status.endpoint, bucket: status.s3_bucket ?? spec.name, region: spec.region }) : null,
  toRecord: ({ meta, spec, status }) => ({
    id: meta.id,
    name: spec.name,
    status: status.status,
    status_reason: status.status_reason ?? null,
    ...reconcileRecord(status),
    region: spec.region,
    public: spec.public,
    endpoint: status.endpoint ?? null,
    s3_bucket: status.s3_bucket ?? null,
    data_events: status.data_events ?? false,
    ...recordTimes(meta, status),
  }),
  presentation: {
    columns: [...REGIONAL_COLUMNS, { key: 'public', label: 'Public', secondary: true }, { key: 'endpoint', label: 'Endpoint', secondary: true }],
    // A bucket holding objects is refused (409 bucket_not_empty) unless they go with it.
    deleteOptions: [{ query: 'force', label: 'Also delete the objects it holds' }],
  },
};

export interface FileShareSpec {
  name: string;
  region: string;
  size_gb: number;
}
export interface FileShareStatus extends BaseStatus {
  mount_target: string | null;
  external?: ExternalRecord;
}
export type FileShare = Resource<FileShareSpec, FileShareStatus>;

const SizeGb = Type.Integer({ minimum: 10, maximum: 16384, description: 'Size in GB, 10-16384, default 100.' });

const FileShareCreate = strictObject({ name: ResourceName(), region: Region(), size_gb: Type.Optional(SizeGb) });
const FileShareUpdate = strictObject({ name: Type.Optional(ResourceName()), size_gb: Type.Optional(SizeGb) });

const shareAction = (verb: string, summary: string): FamilyCommand => ({
  words: [verb],
  summary: `${summary} (the answer is the server)`,
  method: 'POST',
  path: `/{id}/${verb}`,
  body: Type.Object({ server_id: Type.String({ minLength: 1, description: 'The server (svr_...).' }) }),
  answers: 'server',
  waitFor: ['running'],
  dryRun: true,
});

/** A share is attached to and detached from servers by actions (api/routes/file-shares.ts). */
const FILE_SHARE_COMMANDS: readonly FamilyCommand[] = [
  shareAction('attach', 'Attach a file share to a server'),
  shareAction('detach', 'Detach a file share from a server'),
];

export const fileShareFamily: FamilyDefinition<FileShareSpec, FileShareStatus> = {
  name: 'file_share',
  quota: { default: 1000 },
  title: 'file share',
  kind: 'FileShare',
  plural: 'fileshares',
  shortNames: ['cpfs'],
  path: 'file-storage',
  idPrefix: 'fs',
  states: STATES,
  readyStates: ['available'],
  providerBacked: true,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: { updated: 'had a new configuration applied (a PATCH, or an edit of its custom resource).' },
  description: 'An NFS file share mountable from the team network.',
  referencedBy: { kind: serverFamily.kind, title: serverFamily.title, field: 'file_shares' },
  schemas: {
    create: FileShareCreate,
    update: FileShareUpdate,
    spec: strictObject({ name: ResourceName(), region: Region(), size_gb: SizeGb, ...connectionSecretProperty() }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      mount_target: Type.Union([Type.String(), Type.Null()], {
        description: 'What servers mount: an NFS export host:/path, or a PersistentVolumeClaim <namespace>/<claim> (kubernetes driver).',
      }),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('fs', STATES),
      ...reconcileRecordProperties(),
      name: ResourceName(),
      region: Region(),
      size_gb: SizeGb,
      protocol: Type.String({ enum: ['nfs'], description: 'Access protocol: nfs (NFSv4.1).' }),
      mount_target: Type.Union([Type.String(), Type.Null()], {
        description:
          'What servers mount: an NFS export (host:/path), or on the kubernetes driver the PersistentVolumeClaim <namespace>/<claim>; null until the share is available.',
      }),
    }),
  },
  specFromCreate(body: Static<typeof FileShareCreate>, { config }) {
    assertRegionAvailable(config, body.region);
    return { name: body.name, region: body.region, size_gb: body.size_gb ?? 100 };
  },
  /** A share grows; it never shrinks (a volume cannot give back space its files may use). */
  applyUpdate(spec, patch: Static<typeof FileShareUpdate>) {
    if (patch.size_gb !== undefined && patch.size_gb < spec.size_gb) {
      throw fieldInvalid('size_gb', `cannot shrink the share from ${spec.size_gb} to ${patch.size_gb} GB; a file share only grows`);
    }
    return { ...spec, ...patch };
  },
  initialStatus: () => ({ mount_target: null }),
  nameOf: (spec) => spec.name,
  commands: FILE_SHARE_COMMANDS,
  connectionDetails: ({ status }, namespace) => (status.mount_target ? mountDetails(status.mount_target, namespace) : null),
  toRecord: ({ meta, spec, status }) => ({
    id: meta.id,
    name: spec.name,
    status: status.status,
    status_reason: status.status_reason ?? null,
    ...reconcileRecord(status),
    region: spec.region,
    size_gb: spec.size_gb,
    protocol: 'nfs',
    mount_target: status.mount_target ?? null,
    ...recordTimes(meta, status),
  }),
  presentation: {
    columns: [...REGIONAL_COLUMNS, { key: 'size_gb', label: 'Size (GB)', secondary: true }, { key: 'mount_target', label: 'Mount target', secondary: true }],
  },
};
