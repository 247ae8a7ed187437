/** S3-style buckets: on an S3 endpoint (driver `s3`, either mode), simulated otherwise. */
import { bucketFamily } from '../resources/storage';
import type { BucketDriver } from '../drivers/storage';
import { simulatedBucketDriver } from '../drivers/simulated/families';
import { S3BucketDriver } from '../drivers/s3/bucket-driver';
import { bucketBinding } from '../controllers/bucket';
import { drivenFamilyModule } from './module';

export const bucketModule = drivenFamilyModule<BucketDriver>({
  family: bucketFamily,
  drivers: {
    simulated: (ctx) => simulatedBucketDriver(ctx.simulation),
    external: { s3: (ctx) => new S3BucketDriver({ s3: ctx.config.s3, logger: ctx.logger.child({ component: 'bucket-driver' }) }) },
  },
  reconcilers: (deps, driver) => [deps.managed(bucketBinding(driver))],
});
