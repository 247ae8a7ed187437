/** Servers: virtual machines with the general lifecycle of the spec and power actions. */
import { Static, Type } from '@sinclair/typebox';
import { assertRegionAvailable } from './regions';
import { SERVER_PLANS } from '../lib/server-catalog';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
import { backupCommands, backupPolicySchemas, policyOf, policyRecord, type BackupPolicy } from './backup';
import {
  baseRecordProperties,
  reconcileRecord,
  reconcileRecordProperties,
  baseStatusProperties,
  ExternalRecordSchema,
  IdOf,
  Region,
  ResourceName,
  strictObject,
  connectionSecretProperty,
  recordTimes,
} from './schema-kit';
import type { ExternalRecord } from './external-record';
import { REGIONAL_COLUMNS } from './presentation';

const STATES = ['creating', 'running', 'stopping', 'stopped', 'starting', 'rebooting', 'restoring', 'failed', 'deleted', 'destroyed'] as const;
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
  /** A daily backup at `time` UTC, keeping the last `retain` policy backups; absent or disabled: none. */
  backup_policy?: BackupPolicy;
}

const { Input: BackupPolicyInput, Spec: BackupPolicySpec, Record: BackupPolicyRecord } = backupPolicySchemas('server');

/** Where an attached file share appears in the server's file system. */
export const mountPathOf = (fileShareId: string) => `/mnt/file-storage/${fileShareId}`;

/** The file shares attached to a server. */
export const attachedShares = (spec: Pick<ServerSpec, 'file_shares'>): string[] => spec.file_shares ?? [];

export interface ServerStatus extends BaseStatus {
  ipv4: string | null;
  reboots_done: number;
  external?: ExternalRecord;
}

export type Server = Resource<ServerSpec, ServerStatus>;

const Mount = strictObject({
  file_share_id: IdOf('fs', 'The attached file share.'),
  mount_path: Type.String({ description: 'Where the share is mounted: /mnt/file-storage/<file_share_id>.' }),
});

const Plan = Type.String({ enum: SERVER_PLANS, description: `Size of the machine: ${SERVER_PLANS.join(', ')}.` });
const Image = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[a-z0-9][a-z0-9._-]*$',
  description: `Operating system image, default ${DEFAULT_IMAGE}.`,
});

const ServerCreate = strictObject({
  name: ResourceName(),
  region: Region(),
  plan: Type.Optional(Plan),
  image: Type.Optional(Image),
  backup_policy: Type.Optional(BackupPolicyInput),
});

const ServerUpdate = strictObject({
  name: Type.Optional(ResourceName()),
  backup_policy: Type.Optional(Type.Union([BackupPolicyInput, Type.Null()], { description: 'A new daily backup policy; null removes it.' })),
});

const power = (verb: string, summary: string, target: string): FamilyCommand => ({
  words: [verb],
  summary,
  method: 'POST',
  path: `/{id}/${verb}`,
  waitFor: [target],
  versioned: true,
  dryRun: true,
});

/** Power actions, backups and restores (api/routes/servers.ts, backups.ts). */
const SERVER_COMMANDS: readonly FamilyCommand[] = [
  power('stop', 'Stop a running server', 'stopped'),
  power('start', 'Start a stopped server', 'running'),
  power('reboot', 'Reboot a running server', 'running'),
  ...backupCommands('server'),
  {
    words: ['restore'],
    summary: 'Restore a backup onto its server (the answer is the backup)',
    method: 'POST',
    path: '/{id}/restore',
    dryRun: true,
    body: Type.Object({ backup_id: Type.String({ minLength: 1, description: 'A completed backup of the server (bkp_...).' }) }),
    answers: 'backup',
  },
];

export const serverFamily: FamilyDefinition<ServerSpec, ServerStatus> = {
  name: 'server',
  quota: { default: 1000 },
  title: 'server',
  kind: 'Server',
  plural: 'servers',
  shortNames: ['cpsvr'],
  path: 'servers',
  idPrefix: 'svr',
  states: STATES,
  busyStates: ['stopping', 'starting', 'rebooting', 'restoring'],
  readyStates: ['running'],
  eventStates: ['running', 'stopped', 'failed', 'deleted', 'destroyed'],
  providerBacked: true,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: { updated: 'had a new configuration applied (a PATCH, or an edit of its custom resource).' },
  actionFields: ['power_state', 'reboot_requests'],
  description: 'A virtual server. Stop, start and reboot are actions; a deleted server is kept for the retention period, then destroyed.',
  schemas: {
    create: ServerCreate,
    update: ServerUpdate,
    spec: strictObject({
      name: ResourceName(),
      region: Region(),
      plan: Plan,
      image: Image,
      power_state: Type.String({ enum: ['on', 'off'], description: 'Desired power state; the stop and start actions set it.' }),
      reboot_requests: Type.Integer({ minimum: 0, description: 'Number of reboots asked for; increment it to reboot.' }),
      // Unique: attach refuses a share already attached; the CRD makes it a set.
      file_shares: Type.Optional(
        Type.Array(IdOf('fs', 'An attached file share.'), {
          uniqueItems: true,
          description: 'File shares attached to the server; the file-storage attach and detach actions set it.',
        }),
      ),
      backup_policy: Type.Optional(BackupPolicySpec),
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
      ...reconcileRecordProperties(),
      name: ResourceName(),
      region: Region(),
      plan: Plan,
      image: Image,
      ipv4: Type.Union([Type.String(), Type.Null()], { description: 'IPv4 address; null until the server has been provisioned.' }),
      mounts: Type.Array(Mount, { description: 'The file shares attached to the server and where each is mounted.' }),
      backup_policy: BackupPolicyRecord,
    }),
  },

  specFromCreate(body: Static<typeof ServerCreate>, { config }) {
    assertRegionAvailable(config, body.region);
    const policy = policyOf(body.backup_policy);
    return {
      name: body.name,
      region: body.region,
      plan: body.plan ?? DEFAULT_PLAN,
      image: body.image ?? DEFAULT_IMAGE,
      power_state: 'on',
      reboot_requests: 0,
      file_shares: [],
      ...(policy ? { backup_policy: policy } : {}),
    };
  },

  applyUpdate(spec, patch: Static<typeof ServerUpdate>) {
    const { backup_policy: policy, ...rest } = patch;
    const next = { ...spec, ...rest };
    if (policy === undefined) return next;
    const { backup_policy: _old, ...without } = next;
    const replaced = policyOf(policy);
    return replaced ? { ...without, backup_policy: replaced } : without;
  },

  initialStatus: () => ({ ipv4: null, reboots_done: 0 }),

  nameOf: (spec) => spec.name,
  commands: SERVER_COMMANDS,
  connectionDetails: ({ status }) => (status.ipv4 ? { address: status.ipv4 } : null),

  toRecord({ meta, spec, status }) {
    return {
      id: meta.id,
      name: spec.name,
      status: status.status,
      status_reason: status.status_reason ?? null,
      ...reconcileRecord(status),
      region: spec.region,
      plan: spec.plan,
      image: spec.image,
      ipv4: status.ipv4 ?? null,
      mounts: attachedShares(spec).map((id) => ({ file_share_id: id, mount_path: mountPathOf(id) })),
      backup_policy: policyRecord(spec.backup_policy),
      ...recordTimes(meta, status),
    };
  },
  presentation: {
    columns: [
      ...REGIONAL_COLUMNS,
      { key: 'plan', label: 'Plan', secondary: true },
      { key: 'ipv4', label: 'IPv4', secondary: true },
      { key: 'mounts', label: 'Mounts', shownIn: 'cli' },
    ],
    actions: [
      { name: 'stop', label: 'Stop', allowedIn: ['running'] },
      { name: 'start', label: 'Start', allowedIn: ['stopped'] },
      { name: 'reboot', label: 'Reboot', allowedIn: ['running'] },
    ],
  },
};
