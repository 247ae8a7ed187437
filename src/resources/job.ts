/**
 * Jobs: a command run once in a container. Queued, then running, then completed or
 * failed; `cancel` ends a queued or running job. Jobs are history: they have no PATCH
 * and no DELETE.
 */
import { Type } from '@sinclair/typebox';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import { baseRecordProperties, baseStatusProperties, NullableTimestamp, Region, ResourceName, strictObject } from './schema-kit';

const STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export const FINISHED_JOB_STATES = ['completed', 'failed', 'cancelled'];
export const JOB_PLANS = ['standard', 'performance', 'gpu'];
const DEFAULT_IMAGE = 'docker.io/library/alpine:3.20';

export interface JobSpec {
  name: string;
  command: string;
  image: string;
  region: string;
  plan: string;
  /** Set by the cancel action (or a kubectl edit); the reconciler stops the run. */
  cancel_requested: boolean;
}

export interface JobStatus extends BaseStatus {
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
}

export type Job = Resource<JobSpec, JobStatus>;

const Command = Type.String({ minLength: 1, maxLength: 10_000, description: 'Shell command to execute (run with /bin/sh -c).' });
const Image = Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s]+$', description: `Container image, default ${DEFAULT_IMAGE}.` });
const Plan = Type.String({ enum: JOB_PLANS, description: `Execution plan: ${JOB_PLANS.join(', ')}; default standard.` });

export const jobFamily: FamilyDefinition<JobSpec, JobStatus> = {
  name: 'job',
  title: 'job',
  kind: 'CloudJob',
  plural: 'cloudjobs',
  shortNames: ['cpjob'],
  path: 'jobs',
  idPrefix: 'job',
  states: STATES,
  reconcilingStates: ['running'],
  readyStates: ['completed'],
  providerBacked: true,
  deletion: 'immediate',
  deletable: false,
  creationEvent: null,
  actionFields: ['cancel_requested'],
  description: 'A one-off job: a command run in a container image. Cancel ends it; finished jobs are kept as history.',
  schemas: {
    create: strictObject({
      name: ResourceName('Job name, 2-40 characters.'),
      command: Command,
      image: Type.Optional(Image),
      region: Type.Optional(Region('Execution region from GET /api/v1/regions; default the first region of the catalog.')),
      plan: Type.Optional(Plan),
    }),
    spec: strictObject({
      name: ResourceName(),
      command: Command,
      image: Image,
      region: Region(),
      plan: Plan,
      cancel_requested: Type.Boolean({ description: 'Set to true to cancel the job.' }),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      exit_code: Type.Union([Type.Integer(), Type.Null()], { description: 'Exit code of the command once it finished.' }),
      started_at: NullableTimestamp('When the command started.'),
      finished_at: NullableTimestamp('When the job finished, failed or was cancelled.'),
    }),
    record: strictObject({
      ...baseRecordProperties('job', STATES),
      name: ResourceName(),
      command: Command,
      image: Image,
      region: Region(),
      plan: Plan,
      exit_code: Type.Union([Type.Integer(), Type.Null()], { description: 'Exit code of the command; null until it finished.' }),
      started_at: NullableTimestamp('When the command started; null while queued.'),
      finished_at: NullableTimestamp('When the job ended; null while queued or running.'),
    }),
  },
  specFromCreate(body, { config }) {
    const region = body.region ?? config.regions.find((r) => !config.unavailableRegions.includes(r)) ?? config.regions[0];
    assertRegionAvailable(config, region);
    return { name: body.name, command: body.command, image: body.image ?? DEFAULT_IMAGE, region, plan: body.plan ?? 'standard', cancel_requested: false };
  },
  initialStatus: () => ({ exit_code: null, started_at: null, finished_at: null }),
  nameOf: (spec) => spec.name,
  toRecord: ({ meta, spec, status }) => ({
    id: meta.id,
    name: spec.name,
    status: status.status,
    status_reason: status.status_reason ?? null,
    command: spec.command,
    image: spec.image,
    region: spec.region,
    plan: spec.plan,
    exit_code: status.exit_code ?? null,
    started_at: status.started_at ?? null,
    finished_at: status.finished_at ?? null,
    created_at: meta.createdAt,
    updated_at: meta.updatedAt,
    deleted_at: null,
  }),
};
