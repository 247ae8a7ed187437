/**
 * A bucket's name on the S3 endpoint: `<prefix>-<team>-<name>`, so that the names of two
 * teams, or of two installs sharing an endpoint (their prefixes), never collide, while
 * `name` stays the user's own. S3 allows 63 characters; a longer name keeps its start and
 * ends in a hash of the whole, which keeps it unique. The driver computes it once, at the
 * first create, and keeps it in status.external: it is never recomputed.
 */
import { createHash } from 'node:crypto';

export const MAX_BUCKET_NAME = 63;
const HASH_LENGTH = 10;

/** A team id (`team_x1y2…`) as bucket names allow it: lowercase letters, digits and hyphens. */
const slug = (value: string) => value.toLowerCase().replace(/[^a-z0-9-]+/g, '-');

export function backendBucketName(prefix: string, team: string, name: string): string {
  const full = `${prefix}-${slug(team)}-${name}`;
  if (full.length <= MAX_BUCKET_NAME) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, HASH_LENGTH);
  // The kept start must not end in a hyphen before the one that joins the hash.
  const start = full.slice(0, MAX_BUCKET_NAME - HASH_LENGTH - 1).replace(/-+$/, '');
  return `${start}-${hash}`;
}
