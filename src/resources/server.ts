/** Servers: virtual machines with the general lifecycle of the spec and power actions. */
import { Type } from '@sinclair/typebox';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import { baseRecordProperties, baseStatusProperties, ExternalRecordSchema, IdOf, Region, ResourceName, strictObject, connectionSecretProperty } from './schema-kit';

const STATES = ['creating', 'running', 'stopping', 'stopped', 'starting', 'rebooting', 'failed', 'deleted', 'destroyed'] as const;
export const SERVER_PLANS = ['s-1vcpu-1gb', 's-1vcpu-2gb', 's-2vcpu-4gb', 's-4vcpu-8gb', 's-8vcpu-16gb'];
const DEFAULT_PLAN = 's-1vcpu-1gb';
const DEFAULT_IMAGE = 'ubuntu-24.04';

export interface ServerSpec {
  name: string;
  region: string;
  plan: string;
  image: string;
  /** What the owner wants: `on` or `off` (stop and start set it). */
  power_state: 'on' | 'off';
  /** Counts reboot requests; a reboot is due while it exceeds status.reboots_done. */
  reboot_requests: number;
  /** The file shares attached to the server (the file-storage attach and detach actions); absent on servers made before them. */
  file_shares?: string[];
}

/** Where an attached file share appears in the server's file system. */
export const mountPathOf = (fileShareId: string) => `/mnt/file-storage/${fileShareId}`;

/** The file shares attached to a server. */
export const attachedShares = (spec: Pick<ServerSpec, 'file_shares'>): string[] => spec.file_shares ?? [];

export interface ServerStatus extends BaseStatus {
  ipv4: string | null;
  reboots_done: number;
  external?: Record<string, unknown>;
}

export type Server = Resource<ServerSpec, ServerStatus>;

const Mount = strictObject({
  file_share_id: IdOf('fs', 'The attached file share.'),
  mount_path: Type.String({ description: 'Where the share is mounted: /mnt/file-storage/<file_share_id>.' }),
});

const Plan = Type.String({ enum: SERVER_PLANS, description: `Size of the machine: ${SERVER_PLANS.join(', ')}.` });
const Image = Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9][a-z0-9._-]*$', description: `Operating system image, default ${DEFAULT_IMAGE}.` });

export const serverFamily: FamilyDefinition<ServerSpec, ServerStatus> = {
  name: 'server',
  title: 'server',
  kind: 'Server',
  plural: 'servers',
  shortNames: ['cpsvr'],
  path: 'servers',
  idPrefix: 'svr',
  states: STATES,
  busyStates: ['stopping', 'starting', 'rebooting'],
  readyStates: ['running'],
  eventStates: ['running', 'stopped', 'failed', 'deleted', 'destroyed'],
  providerBacked: true,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: { updated: 'had a new configuration applied (a PATCH, or an edit of its custom resource).' },
  actionFields: ['power_state', 'reboot_requests'],
  description: 'A virtual server. Stop, start and reboot are actions; a deleted server is kept for the retention period, then destroyed.',
  schemas: {
    create: strictObject({
      name: ResourceName(),
      region: Region(),
      plan: Type.Optional(Plan),
      image: Type.Optional(Image),
    }),
    update: strictObject({ name: Type.Optional(ResourceName()) }),
    spec: strictObject({
      name: ResourceName(),
      region: Region(),
      plan: Plan,
      image: Image,
      power_state: Type.String({ enum: ['on', 'off'], description: 'Desired power state; the stop and start actions set it.' }),
      reboot_requests: Type.Integer({ minimum: 0, description: 'Number of reboots asked for; increment it to reboot.' }),
      file_shares: Type.Optional(Type.Array(IdOf('fs', 'An attached file share.'), { description: 'File shares attached to the server; the file-storage attach and detach actions set it.' })),
      ...connectionSecretProperty(),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      ipv4: Type.Union([Type.String(), Type.Null()], { description: 'Address allocated by the provider.' }),
      reboots_done: Type.Integer({ minimum: 0, description: 'Reboot requests carried out.' }),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('svr', STATES),
      name: ResourceName(),
      region: Region(),
      plan: Plan,
      image: Image,
      ipv4: Type.Union([Type.String(), Type.Null()], { description: 'IPv4 address; null until the server has been provisioned.' }),
      mounts: Type.Array(Mount, { description: 'The file shares attached to the server and where each is mounted.' }),
    }),
  },

  specFromCreate(body, { config }) {
    assertRegionAvailable(config, body.region);
    return { name: body.name, region: body.region, plan: body.plan ?? DEFAULT_PLAN, image: body.image ?? DEFAULT_IMAGE, power_state: 'on', reboot_requests: 0, file_shares: [] };
  },

  applyUpdate: (spec, patch) => ({ ...spec, ...patch }),

  initialStatus: () => ({ ipv4: null, reboots_done: 0 }),

  nameOf: (spec) => spec.name,

  toRecord({ meta, spec, status }) {
    return {
      id: meta.id,
      name: spec.name,
      status: status.status,
      status_reason: status.status_reason ?? null,
      region: spec.region,
      plan: spec.plan,
      image: spec.image,
      ipv4: status.ipv4 ?? null,
      mounts: attachedShares(spec).map((id) => ({ file_share_id: id, mount_path: mountPathOf(id) })),
      created_at: meta.createdAt,
      updated_at: meta.updatedAt,
      deleted_at: status.deleted_at ?? null,
    };
  },
};
