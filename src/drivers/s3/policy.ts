/**
 * What `public: true` means on S3: a bucket policy with one statement that lets anyone
 * (Principal "*") read the bucket's objects (s3:GetObject), and nothing else: no listing,
 * no writes. `public: false` is no policy at all.
 */
import { fieldOf, isRecord } from '../../lib/unknown-values';

export function publicReadPolicy(bucket: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Sid: 'CloudplanePublicRead', Effect: 'Allow', Principal: '*', Action: ['s3:GetObject'], Resource: [`arn:aws:s3:::${bucket}/*`] }],
  });
}

const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** Principal "*", or {"AWS": "*"} as servers may give it back. */
const isAnyone = (principal: unknown): boolean =>
  principal === '*' || (typeof principal === 'object' && principal !== null && 'AWS' in principal && asList(principal.AWS).every((p) => p === '*'));

/**
 * Whether a policy read back from the endpoint is exactly the public-read grant, compared
 * by meaning rather than text (servers reformat what they store). Anything more (another
 * statement, another action) is drift the driver puts back.
 */
export function isPublicReadPolicy(text: string, bucket: string): boolean {
  let policy: unknown;
  try {
    policy = JSON.parse(text);
  } catch {
    return false;
  }
  const statements = asList(fieldOf(policy, 'Statement'));
  if (statements.length !== 1) return false;
  const statement = statements[0];
  return (
    isRecord(statement) &&
    statement.Effect === 'Allow' &&
    isAnyone(statement.Principal) &&
    statement.NotPrincipal === undefined &&
    statement.Condition === undefined &&
    sameSet(asList(statement.Action), ['s3:GetObject']) &&
    sameSet(asList(statement.Resource), [`arn:aws:s3:::${bucket}/*`])
  );
}

const sameSet = (a: unknown[], b: string[]) => a.length === b.length && b.every((x) => a.includes(x));
