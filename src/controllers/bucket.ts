/** How buckets bind to the managed reconciler: the spec is what the driver is asked for; the endpoint, backend name and whether data events are on are what it gives out. */
import type { BucketDriver, BucketOutputs } from '../drivers/storage';
import { bucketFamily, type Bucket, type BucketSpec } from '../resources/storage';
import type { FamilyBinding } from './managed';

export function bucketBinding(driver: BucketDriver): FamilyBinding<BucketSpec, BucketOutputs, null, Bucket> {
  return {
    family: bucketFamily,
    readyState: 'available',
    driver,
    desired: ({ spec }) => Promise.resolve(spec),
    outputs: ({ endpoint, s3_bucket, data_events }) => ({ endpoint, s3_bucket, data_events }),
  };
}
