// S3 and SQS permissions by prefix and action, so each function gets only what it uses.
//
// s3:ListBucket is granted on the bucket without a prefix condition on purpose: S3 answers
// a GetObject/HeadObject of a missing key with 404 only when the caller may list the
// bucket, and 403 otherwise, and a prefix condition cannot be met by those requests (they
// carry no s3:prefix). The commit protocol probes for absent keys all the time
// (`snapshot-(N+1)` until absent), so a 403 there would break every commit. Listing shows
// key names only; object contents stay scoped to each function's prefixes below.

import { Effect, type IPrincipal, type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam'
import type { IKey } from 'aws-cdk-lib/aws-kms'
import type { IBucket } from 'aws-cdk-lib/aws-s3'
import type { IQueue } from 'aws-cdk-lib/aws-sqs'
import { Construct, type IConstruct } from 'constructs'
import { acknowledge, findingName } from '../nag.ts'

export function allowList(role: IRole, bucket: IBucket): void {
  role.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }))
}

/**
 * `actions` on the objects matching `keys` (each a key, or a prefix ending in `*`).
 * s3:GetObject also covers HeadObject and ranged GETs; s3:PutObject covers conditional PUTs.
 * Each prefix is a cdk-nag IAM5 finding, acknowledged here by name with the reason.
 */
export function allowObjects(role: IRole, bucket: IBucket, actions: string[], keys: string[]): void {
  role.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions, resources: keys.map((k) => bucket.arnForObjects(k)) }))
  acknowledgePrefixes(role, bucket, actions, keys)
}

/**
 * The IAM5 findings of prefix grants in `bucket`, acknowledged on `principal` (when it is a
 * construct: a role of this app) by name with the reason.
 */
export function acknowledgePrefixes(principal: IPrincipal | IConstruct, bucket: IBucket, actions: string[], keys: string[]): void {
  if (!Construct.isConstruct(principal)) return
  for (const key of keys.filter((k) => k.includes('*'))) {
    acknowledge(
      principal,
      `IAM5[Resource::${findingName(principal, bucket.arnForObjects(key))}]`,
      `Prefix grant (${actions.join(', ')} on ${key}) inside Strata's bucket: Strata names its own files (data, manifest and index files with UUIDs, partition directories from row values), so the objects cannot be listed one by one; the prefix is a table's root, one of its subdirectories, or the reject prefix.`,
    )
  }
}

/** What a principal needs of the KMS key that encrypts Strata's bucket and queues: decrypt to read, and data keys to write. */
export function allowKey(role: IRole, key: IKey | undefined, write = true): void {
  if (!key) return
  role.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: write ? ['kms:Decrypt', 'kms:GenerateDataKey'] : ['kms:Decrypt'], resources: [key.keyArn] }))
}

/**
 * An explicit deny of writes and deletes under each table's `schema/`: only the table-init
 * resource writes schemas, and no data, manifest or index file is ever named there
 * (partition directories are `k=v`, bucket directories `bucket-N`), so a runtime function
 * that tried would have a bug, and the deny makes it fail instead of rewriting the table.
 */
export function denySchemaWrites(role: IRole, bucket: IBucket, tablePrefixes: string[]): void {
  role.addToPrincipalPolicy(
    new PolicyStatement({ effect: Effect.DENY, actions: ['s3:PutObject', 's3:DeleteObject'], resources: tablePrefixes.map((p) => bucket.arnForObjects(`${p}schema/*`)) }),
  )
}

export function allowSend(role: IRole, queues: IQueue[]): void {
  if (queues.length === 0) return
  role.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['sqs:SendMessage'], resources: queues.map((q) => q.queueArn) }))
}

export function allowQueueAttributes(role: IRole, queues: IQueue[]): void {
  role.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['sqs:GetQueueAttributes'], resources: queues.map((q) => q.queueArn) }))
}
