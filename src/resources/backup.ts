/**
 * Backups: a copy of a server's disk or of a database, taken on request (POST
 * /servers/{id}/backups, POST /databases/{id}/backups) or by a server's daily
 * backup_policy. One family for both sources, so both say the same `backup.*` events; a
 * backup names its source by `server_id` or `database_id`, exactly one. `creating` ->
 * `completed` | `failed`. A completed server backup can be restored onto its server: the
 * restore is an intent on the backup (the spec counts restore requests, as a server counts
 * reboots) that the backup controller carries out; the server is `restoring` meanwhile. A
 * restore is no state of the backup, which stays `completed`: its start and end are the
 * events `backup.restore_started` and `backup.restore_completed` (extraEvents), so
 * `backup.completed` is said once. A database backup is restored into a new database
 * (resources/database.ts, `backup_restore`).
 *
 * Backups belong to their source: deleting it deletes them (controllers/backup.ts).
 */
import { Type } from '@sinclair/typebox';
import type { BaseStatus, CreateBody, FamilyDefinition, Resource } from './family';
import { asStored } from './family';
import { baseRecordProperties, baseStatusProperties, ExternalRecordSchema, IdOf, NullableTimestamp, strictObject, recordTimes } from './schema-kit';
import type { ExternalRecord } from './external-record';
import { BASIC_COLUMNS } from './presentation';
import { nowIso } from '../lib/time';
import type { FamilyCommand } from './commands';

const STATES = ['creating', 'completed', 'failed', 'deleted', 'destroyed'] as const;
export const BACKUP_TRIGGERS = ['manual', 'policy'] as const;
export const RESTORE_STATES = ['restoring', 'succeeded', 'failed'] as const;
export type RestoreState = (typeof RESTORE_STATES)[number];

export interface BackupSpec {
  name: string;
  /** The source: a server's disk, or a database (exactly one of the two). */
  server_id?: string;
  database_id?: string;
  /** `manual` (POST) or `policy` (the server's backup_policy); retention deletes only policy backups. */
  trigger: (typeof BACKUP_TRIGGERS)[number];
  /** Policy backups: the time of the policy they were made for. */
  scheduled_at?: string;
  /** Counts restore requests; a restore is due while it exceeds status.restores_done. */
  restore_requests: number;
}

export interface BackupStatus extends BaseStatus {
  /** How the backup was taken: `simulated` or `volume_snapshot`; null before the driver started it. */
  method: string | null;
  completed_at: string | null;
  restore_state: RestoreState | null;
  restore_started_at: string | null;
  restore_finished_at: string | null;
  restores_done: number;
  external?: ExternalRecord;
}

export type Backup = Resource<BackupSpec, BackupStatus>;

/** A restore asked for that is not carried out yet (it may be under way). */
export function restorePending(backup: Backup): boolean {
  const [given, written] = [asStored(backup.spec), asStored(backup.status)];
  return (given.restore_requests ?? 0) > (written.restores_done ?? 0);
}

const BackupName = Type.String({
  minLength: 1,
  maxLength: 80,
  pattern: '^\\S(.*\\S)?$',
  description: 'Name of the backup; default `<server name>-<UTC time>`.',
});
const Trigger = Type.String({
  enum: [...BACKUP_TRIGGERS],
  description: "What made the backup: manual (POST /servers/{id}/backups) or policy (the server's daily backup_policy).",
});
const Method = Type.Union([Type.String({ enum: ['simulated', 'volume_snapshot', 'pg_basebackup'] }), Type.Null()], {
  description:
    "How the backup was taken: volume_snapshot (a snapshot.storage.k8s.io VolumeSnapshot of the server's volume), pg_basebackup (a copy of a database's data directory, by the local database driver) or simulated; null until the driver started it.",
});

const isRestoring = (backup: Backup | undefined) => backup?.status.restore_state === 'restoring';

/** What a backup is of, by the family's name, or null when its spec names no single source (a custom resource edited by hand). */
export function sourceOf(spec: Pick<BackupSpec, 'server_id' | 'database_id'>): { family: 'server' | 'database'; id: string } | null {
  if (spec.server_id && !spec.database_id) return { family: 'server', id: spec.server_id };
  if (spec.database_id && !spec.server_id) return { family: 'database', id: spec.database_id };
  return null;
}

/** A backup's create body: under its source (POST /servers/{id}/backups, /databases/{id}/backups), a name at most. */
export const BackupCreate = strictObject({ name: Type.Optional(BackupName) });

/** A daily backup of a source (a server, a database): at `time` UTC, keeping the last `retain` policy backups; absent or disabled: none. */
export interface BackupPolicy {
  enabled: boolean;
  /** `HH:MM`, UTC. */
  time: string;
  retain: number;
  /** When the policy was last set: times of it before are not caught up (a policy set at 10:00 makes no backup for 03:00 that day). */
  since?: string;
}

const DEFAULT_RETAIN = 7;
const POLICY_TIME = '^([01][0-9]|2[0-3]):[0-5][0-9]$';

/** The policy as a create or PATCH takes it, as a spec keeps it, and as a record shows it, worded for the source's title. */
export function backupPolicySchemas(title: string) {
  return {
    Input: strictObject(
      {
        enabled: Type.Boolean({ description: 'Whether the daily backup is made.' }),
        time: Type.String({ pattern: POLICY_TIME, description: 'Time of day of the backup, HH:MM in UTC.' }),
        retain: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 90,
            description: `How many backups of the policy are kept (the oldest beyond are deleted); default ${DEFAULT_RETAIN}. Manual backups are never deleted by it.`,
          }),
        ),
      },
      `A daily backup of the ${title}: one backup a day at \`time\` (UTC), keeping the last \`retain\`.`,
    ),
    Spec: BackupPolicySpec,
    Record: Type.Union([strictObject({ enabled: Type.Boolean(), time: Type.String(), retain: Type.Integer() }), Type.Null()], {
      description: 'The daily backup policy; null without one.',
    }),
  };
}

/** A policy as a spec keeps it (the reconciler reads it back with this). */
export const BackupPolicySpec = strictObject(
  {
    enabled: Type.Boolean(),
    time: Type.String({ pattern: POLICY_TIME }),
    retain: Type.Integer({ minimum: 1, maximum: 90 }),
    // No `format`: the reconciler checks a spec against this with TypeBox's Value, which knows no formats unless registered.
    since: Type.Optional(Type.String({ description: 'When the policy was set (an RFC 3339 time); times of it before are not caught up.' })),
  },
  'A daily backup at `time` UTC, keeping the last `retain` policy backups.',
);

/** The policy as the spec keeps it: the default retention filled in, and when it was set. */
export function policyOf(input: { enabled: boolean; time: string; retain?: number } | null | undefined): BackupPolicy | undefined {
  if (!input) return undefined;
  return { enabled: input.enabled, time: input.time, retain: input.retain ?? DEFAULT_RETAIN, since: nowIso() };
}

/** A policy as a record shows it: null without one. */
export const policyRecord = (policy: BackupPolicy | undefined) => (policy ? { enabled: policy.enabled, time: policy.time, retain: policy.retain } : null);

/** The CLI's commands of a source's backups (`servers backups list`, `databases backups create`), answered as backups. */
export const backupCommands = (title: string): FamilyCommand[] => [
  {
    words: ['backups', 'list'],
    summary: `List a ${title}'s backups`,
    method: 'GET',
    path: '/{id}/backups',
    query: { list: true },
    paged: true,
    answers: 'backup',
  },
  { words: ['backups', 'get'], summary: `Get a backup of a ${title}`, method: 'GET', path: '/{id}/backups/{backup_id}', answers: 'backup' },
  { words: ['backups', 'create'], summary: `Back up a ${title}`, method: 'POST', path: '/{id}/backups', body: BackupCreate, answers: 'backup' },
  { words: ['backups', 'delete'], summary: `Delete a backup of a ${title}`, method: 'DELETE', path: '/{id}/backups/{backup_id}', answers: 'backup' },
];

export const backupFamily: FamilyDefinition<BackupSpec, BackupStatus> = {
  name: 'backup',
  title: 'backup',
  kind: 'ServerBackup',
  plural: 'serverbackups',
  shortNames: ['cpbkp'],
  path: 'backups',
  idPrefix: 'bkp',
  states: STATES,
  busyStates: ['creating'],
  readyStates: ['completed'],
  eventStates: ['completed', 'failed'],
  providerBacked: true,
  deletion: 'immediate',
  standardRoutes: false,
  creationEvent: 'created',
  actionFields: ['restore_requests'],
  eventVerbs: {
    restore_started: 'began to be restored onto its server (POST /servers/{id}/restore); the server is `restoring`.',
    restore_completed: 'finished being restored onto its server; `restore_status` says whether it succeeded.',
  },
  extraEvents(previous, next) {
    if (!isRestoring(previous) && isRestoring(next)) return ['restore_started'];
    if (isRestoring(previous) && !isRestoring(next) && next.status.restore_state !== null) return ['restore_completed'];
    return [];
  },
  description:
    "A backup of a server's disk, made on request or by the server's daily backup policy, that can be restored onto the server; or of a database, restored into a new one.",
  schemas: {
    create: BackupCreate,
    spec: strictObject({
      name: BackupName,
      server_id: Type.Optional(IdOf('svr', 'The server backed up (or database_id).')),
      database_id: Type.Optional(IdOf('db', 'The database backed up (or server_id).')),
      trigger: Trigger,
      scheduled_at: Type.Optional(Type.String({ format: 'date-time', description: 'Policy backups: the time of the policy it was made for.' })),
      restore_requests: Type.Integer({ minimum: 0, description: 'Number of restores asked for; increment it to restore the backup onto its server.' }),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      // No enums here: a CRD's enum must list null to allow it.
      method: Type.Union([Type.String(), Type.Null()], {
        description: 'How the backup was taken: simulated, volume_snapshot or pg_basebackup; null until the driver started it.',
      }),
      completed_at: NullableTimestamp('When the backup was complete.'),
      restore_state: Type.Union([Type.String(), Type.Null()], { description: 'The last restore: restoring, succeeded or failed; null if never restored.' }),
      restore_started_at: NullableTimestamp('When the last restore began.'),
      restore_finished_at: NullableTimestamp('When the last restore ended.'),
      restores_done: Type.Integer({ minimum: 0, description: 'Restore requests carried out.' }),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('bkp', STATES),
      name: BackupName,
      server_id: Type.Union([IdOf('svr', 'The server backed up.'), Type.Null()], { description: 'The server backed up; null for a database backup.' }),
      database_id: Type.Union([IdOf('db', 'The database backed up.'), Type.Null()], { description: 'The database backed up; null for a server backup.' }),
      trigger: Trigger,
      scheduled_at: NullableTimestamp('Policy backups: the time of the policy it was made for; null for manual ones.'),
      method: Method,
      completed_at: NullableTimestamp('When the backup was complete; null before.'),
      restore_status: Type.Union([Type.String({ enum: [...RESTORE_STATES] }), Type.Null()], {
        description: 'The last restore of this backup: restoring, succeeded or failed; null if never restored.',
      }),
      restore_started_at: NullableTimestamp('When the last restore began.'),
      restore_finished_at: NullableTimestamp('When the last restore ended.'),
    }),
  },

  /** The API route supplies server_id and the default name; a custom resource has them in its spec. */
  specFromCreate(body: CreateBody<BackupSpec, 'trigger' | 'restore_requests'>) {
    return {
      name: body.name,
      ...(body.server_id ? { server_id: body.server_id } : {}),
      ...(body.database_id ? { database_id: body.database_id } : {}),
      trigger: body.trigger ?? 'manual',
      ...(body.scheduled_at ? { scheduled_at: body.scheduled_at } : {}),
      restore_requests: body.restore_requests ?? 0,
    };
  },

  initialStatus: () => ({ method: null, completed_at: null, restore_state: null, restore_started_at: null, restore_finished_at: null, restores_done: 0 }),

  nameOf: (spec) => spec.name,
  listing: { filterFields: ['server_id', 'database_id'] },

  toRecord: ({ meta, spec, status }) => ({
    id: meta.id,
    name: spec.name,
    server_id: spec.server_id ?? null,
    database_id: spec.database_id ?? null,
    status: status.status,
    status_reason: status.status_reason ?? null,
    trigger: spec.trigger,
    scheduled_at: spec.scheduled_at ?? null,
    method: status.method ?? null,
    completed_at: status.completed_at ?? null,
    restore_status: status.restore_state ?? null,
    restore_started_at: status.restore_started_at ?? null,
    restore_finished_at: status.restore_finished_at ?? null,
    ...recordTimes(meta, status),
  }),
  presentation: {
    columns: [
      ...BASIC_COLUMNS,
      { key: 'trigger', label: 'Trigger' },
      { key: 'method', label: 'Method' },
      { key: 'completed_at', label: 'Completed at' },
      { key: 'restore_status', label: 'Restore status' },
    ],
  },
};
