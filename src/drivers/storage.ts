/** The storage drivers' contracts: a bucket's S3 endpoint, a file share's NFS export. */
import type { BucketSpec, FileShareSpec } from '../resources/storage';
import type { Driver } from './types';

export interface BucketOutputs {
  endpoint: string | null;
  /** The bucket's name on the S3 endpoint; null where there is none (the simulated driver). */
  s3_bucket: string | null;
  /** Whether the endpoint's notifications of its objects become data.* events (drivers/s3/notifications.ts). */
  data_events: boolean;
}

export interface FileShareOutputs {
  mount_target: string | null;
}

/** Neither family observes anything beyond existing and being ready. */
export type BucketDriver = Driver<BucketSpec, BucketOutputs, null>;
/** What a file share driver is asked for: the spec as the owner wrote it. */
export type FileShareDesired = FileShareSpec;
export type FileShareDriver = Driver<FileShareDesired, FileShareOutputs, null>;
