// The one bucket every table lives in: tables under `tables/<name>/` (or
// `<warehouse>/<database>.db/<name>/`), rejected ingest records under `rejects/`: a bucket
// of the user's (the construct's `bucket` prop, used as it is), or one created here. A
// created bucket is encrypted at rest (SSE-S3, or SSE-KMS with an S3 Bucket Key under the
// construct's `encryptionKey`), never public, TLS only, retained when the stack is deleted
// (it holds the data). Versioning is off unless configured: the commit protocol's
// conditional PUT (`If-None-Match: *`) works on either kind of bucket, all table files but
// the LATEST/EARLIEST hints are written once, and snapshot expiration and orphan cleanup
// delete files on purpose — a versioned bucket would keep every deleted file as a
// noncurrent version, so turning it on also turns on a noncurrent-version expiration.

import { Duration, RemovalPolicy } from 'aws-cdk-lib'
import type { IKey } from 'aws-cdk-lib/aws-kms'
import { BlockPublicAccess, Bucket, BucketEncryption, type IBucket, type LifecycleRule, ObjectOwnership } from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'
import type { DeployConfig } from '../config.ts'
import { acknowledge } from '../nag.ts'

export const TABLES_PREFIX = 'tables/'
export const REJECTS_PREFIX = 'rejects/'

/** Key prefix of a table's root inside the bucket, with its trailing slash. */
export const tablePrefix = (name: string): string => `${TABLES_PREFIX}${name}/`

export class StrataStorage extends Construct {
  readonly bucket: IBucket
  readonly accessLogs?: Bucket

  /** `given`: the user's bucket, used as it is (`cfg` then holds only defaults); `key`: SSE-KMS for a created bucket. */
  constructor(scope: Construct, id: string, cfg: DeployConfig['bucket'], given?: IBucket, key?: IKey) {
    super(scope, id)
    if (given) {
      this.bucket = given
      return
    }
    if (cfg.accessLogs) {
      this.accessLogs = new Bucket(this, 'AccessLogs', {
        // S3 server access logs can only be delivered to an SSE-S3 bucket
        encryption: BucketEncryption.S3_MANAGED,
        blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
        enforceSSL: true,
        objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
        removalPolicy: RemovalPolicy.RETAIN,
        lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(cfg.accessLogRetentionDays) }],
      })
      acknowledge(this.accessLogs, 'S1', 'This is the access-log bucket of the data bucket; logging it into itself would log its own log deliveries forever.')
    }
    const lifecycleRules: LifecycleRule[] = [
      { id: 'expire-rejects', prefix: REJECTS_PREFIX, expiration: Duration.days(cfg.rejectRetentionDays) },
      { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(7) },
    ]
    if (cfg.versioned) {
      lifecycleRules.push({ id: 'expire-noncurrent-versions', noncurrentVersionExpiration: Duration.days(cfg.noncurrentVersionRetentionDays), expiredObjectDeleteMarker: true })
    }
    this.bucket = new Bucket(this, 'Data', {
      ...(key ? { encryption: BucketEncryption.KMS, encryptionKey: key, bucketKeyEnabled: true } : { encryption: BucketEncryption.S3_MANAGED }),
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      versioned: cfg.versioned,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: this.accessLogs ? 'data-bucket/' : undefined,
      lifecycleRules,
    })
    if (!this.accessLogs) {
      acknowledge(this.bucket, 'S1', 'Server access logging is turned off in the deployment config (bucket.accessLogs: false); use CloudTrail S3 data events for an audit trail instead.')
    }
  }
}
