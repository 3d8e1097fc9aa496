// The synthesized CloudFormation of the Strata stack: the compaction.task-threads mapping,
// FIFO and event-source settings, IAM scoping, encryption and TLS, alarms and dashboard,
// cdk-nag — plus the deployment config's validation. The commit path (commit queues,
// committers, receipts) has its own file, cdk-committer.test.ts. Bundling is skipped here (the
// handlers' bundles are tested in cdk-bundle.test.ts); each configuration is synthesized
// once and its template shared.

import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Stack, Validations } from 'aws-cdk-lib'
import { Queue } from 'aws-cdk-lib/aws-sqs'
import { Match } from 'aws-cdk-lib/assertions'
import { AwsSolutionsChecks } from 'cdk-nag'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../cdk/app.ts'
import { CDK_CONTEXT, type Synth, idOf, ofType, synth, testApp } from './helpers/cdk.ts'
import { compactorConcurrency } from '../cdk/concurrency.ts'
import { DeployConfigError, configFromContext, loadDeployConfig, parseDeployConfig } from '../cdk/config.ts'
import { schemaDifferences } from '../cdk/handlers/table-init.ts'
import { createSchema } from '../lib/table/schema.ts'

const ROOT = join(import.meta.dirname, '..')

const schema = (options: Record<string, string> = {}) => ({
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '4', 'deletion-vectors.enabled': 'true', ...options },
})

/** Four tables, one per mapping of compaction.task-threads (N >= 2 twice: default and raised reserve). */
const SQS_CONFIG = {
  tables: [
    { name: 'one', schema: schema({ 'compaction.task-threads': '1' }) },
    { name: 'three', schema: schema({ 'compaction.task-threads': '3' }), compactor: { timeoutSeconds: 600, memoryMb: 2048 } },
    { name: 'unbounded', schema: schema({ 'compaction.task-threads': '-1' }) },
    { name: 'page_views', schema: schema({ 'compaction.task-threads': '4' }), compactor: { reservedConcurrency: 6 }, alarms: { freshnessLagMinutes: 5, l0FileCount: 20 } },
  ],
  ingest: { type: 'sqs', batchSize: 200, maxBatchingWindowSeconds: 10, maxConcurrency: 4 },
  functions: { writer: { timeoutSeconds: 90 } },
}

const KINESIS_ARN = 'arn:aws:kinesis:eu-west-1:123456789012:stream/events'
const KINESIS_CONFIG = {
  stackName: 'StrataKinesis',
  tables: [{ name: 'events', schema: schema() }],
  ingest: { type: 'kinesis', streamArn: KINESIS_ARN, startingPosition: 'LATEST', retryAttempts: 20, parallelizationFactor: 2 },
  bucket: { versioned: true, noncurrentVersionRetentionDays: 3, accessLogs: false, rejectRetentionDays: 9 },
  functions: { maintenance: { scheduleMinutes: 30, timeoutSeconds: 600 } },
  alarms: { topicArn: 'arn:aws:sns:eu-west-1:123456789012:strata-alarms' },
}

const policyOf = (s: Synth, role: { node: { findChild(id: string): unknown } }) => {
  const policy = (role.node.findChild('DefaultPolicy') as { node: { defaultChild?: unknown } })
  return s.resources[idOf(policy)].Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[]
}
const actions = (st: { Action: string | string[] }) => (Array.isArray(st.Action) ? st.Action : [st.Action])
const resourcesOf = (st: { Resource: unknown }) => (Array.isArray(st.Resource) ? st.Resource : [st.Resource])
/** `Fn::Join ['', [{GetAtt bucket.Arn}, '/tables/x/*']]` → '/tables/x/*', for the stack's bucket only. */
function objectKeyOf(s: Synth, resource: unknown): string | null {
  const join = (resource as Record<string, any>)?.['Fn::Join']
  if (!join) return null
  const [base, key] = join[1]
  expect(base).toEqual({ 'Fn::GetAtt': [idOf(s.stack.storage.bucket), 'Arn'] })
  return key
}

let sqsStack: Synth
let kinesisStack: Synth

beforeAll(() => {
  sqsStack = synth(SQS_CONFIG)
  kinesisStack = synth(KINESIS_CONFIG)
}, 60_000)

describe('compaction.task-threads → compactor concurrency', () => {
  const mapping = (name: string) => {
    const t = sqsStack.stack.tables.find((x) => x.name === name)!
    const fn = sqsStack.resources[idOf(t.compactor.fn)].Properties
    const esm = ofType(sqsStack, 'AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties).find((p) => p.FunctionName.Ref === idOf(t.compactor.fn))!
    return { reserved: fn.ReservedConcurrentExecutions, maxConcurrency: esm.ScalingConfig?.MaximumConcurrency }
  }

  it('1 → reserved concurrency 1 and event-source maxConcurrency 2 (SQS maxConcurrency cannot be 1; one message group keeps one batch in flight)', () => {
    expect(mapping('one')).toEqual({ reserved: 1, maxConcurrency: 2 })
  })
  it('N >= 2 → event-source maxConcurrency N and reserved concurrency N', () => {
    expect(mapping('three')).toEqual({ reserved: 3, maxConcurrency: 3 })
  })
  it('N >= 2 with a configured reserve → that reserve (>= N)', () => {
    expect(mapping('page_views')).toEqual({ reserved: 6, maxConcurrency: 4 })
  })
  it('-1 → no reserved concurrency, event-source maxConcurrency capped at the default 100', () => {
    expect(mapping('unbounded')).toEqual({ reserved: undefined, maxConcurrency: 100 })
  })
  it('each table has its own compactor, queue and DLQ', () => {
    const t = sqsStack.stack.tables
    expect(new Set(t.map((x) => idOf(x.compactor.fn))).size).toBe(4)
    expect(new Set(t.map((x) => idOf(x.queue))).size).toBe(4)
    expect(new Set(t.map((x) => idOf(x.deadLetters))).size).toBe(4)
  })
  it('the pure mapping refuses what the stack could not deploy', () => {
    expect(compactorConcurrency(2)).toEqual({ maxConcurrency: 2, reservedConcurrency: 2, messageGroup: 'bucket' })
    expect(compactorConcurrency(1)).toEqual({ maxConcurrency: 2, reservedConcurrency: 1, messageGroup: 'table' })
    expect(compactorConcurrency(-1)).toEqual({ maxConcurrency: 100, reservedConcurrency: undefined, messageGroup: 'bucket' })
    expect(compactorConcurrency(-1, { maxConcurrency: 40, reservedConcurrency: 50 })).toEqual({ maxConcurrency: 40, reservedConcurrency: 50, messageGroup: 'bucket' })
    expect(() => compactorConcurrency(0)).toThrow(/compaction.task-threads/)
    expect(() => compactorConcurrency(5, { reservedConcurrency: 4 })).toThrow(/below compaction.task-threads 5/)
    expect(() => compactorConcurrency(-1, { maxConcurrency: 40, reservedConcurrency: 39 })).toThrow(/reservedConcurrency 39 is below the event source's maxConcurrency 40/)
    expect(() => compactorConcurrency(-1, { maxConcurrency: 1 })).toThrow(/expected an integer in 2..1000/)
    expect(() => compactorConcurrency(3, { maxConcurrency: 10 })).toThrow(/applies only when compaction.task-threads is -1/)
    expect(() => compactorConcurrency(1, { reservedConcurrency: 2 })).toThrow(/task-threads 1 sets reserved concurrency 1/)
  })
})

describe('queues and event sources', () => {
  it('compaction queues are FIFO with a FIFO DLQ after 5 receives and visibility >= 6x the compactor timeout', () => {
    for (const t of sqsStack.stack.tables) {
      const q = sqsStack.resources[idOf(t.queue)].Properties
      const dlq = sqsStack.resources[idOf(t.deadLetters)].Properties
      const fn = sqsStack.resources[idOf(t.compactor.fn)].Properties
      expect(q.FifoQueue).toBe(true)
      expect(dlq.FifoQueue).toBe(true)
      expect(q.RedrivePolicy).toEqual({ deadLetterTargetArn: { 'Fn::GetAtt': [idOf(t.deadLetters), 'Arn'] }, maxReceiveCount: 5 })
      expect(q.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.Timeout)
      expect(q).toMatchObject({ DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId', ContentBasedDeduplication: false })
    }
    const three = sqsStack.stack.tables.find((t) => t.name === 'three')!
    expect(sqsStack.resources[idOf(three.queue)].Properties.VisibilityTimeout).toBe(3600)
  })

  it('compactor mappings take at most 10 jobs and report batch item failures', () => {
    const compactors = new Set(sqsStack.stack.tables.map((t) => idOf(t.compactor.fn)))
    const esms = ofType(sqsStack, 'AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties).filter((p) => compactors.has(p.FunctionName.Ref))
    expect(esms).toHaveLength(4)
    for (const p of esms) {
      expect(p.BatchSize).toBeLessThanOrEqual(10)
      expect(p.FunctionResponseTypes).toEqual(['ReportBatchItemFailures'])
      expect(p.MaximumBatchingWindowInSeconds).toBeUndefined() // not allowed on FIFO sources
    }
  })

  it('the SQS ingest queue has a DLQ, visibility >= 6x the writer timeout + batching window, and a partial-batch mapping', () => {
    const s = sqsStack.stack
    const q = sqsStack.resources[idOf(s.ingest.queue!)].Properties
    expect(q.FifoQueue).toBeUndefined()
    expect(q.RedrivePolicy.maxReceiveCount).toBe(5)
    expect(q.VisibilityTimeout).toBe(6 * 90 + 10)
    sqsStack.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: idOf(s.writer.fn) },
      EventSourceArn: { 'Fn::GetAtt': [idOf(s.ingest.queue!), 'Arn'] },
      BatchSize: 200,
      MaximumBatchingWindowInSeconds: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 4 },
    })
  })

  it('a Kinesis source maps the stream by ARN: partial batches, no bisect, bounded retries, failures to an SQS queue', () => {
    const s = kinesisStack.stack
    expect(s.ingest.queue).toBeUndefined()
    kinesisStack.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: idOf(s.writer.fn) },
      EventSourceArn: KINESIS_ARN,
      StartingPosition: 'LATEST',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: false,
      MaximumRetryAttempts: 20,
      ParallelizationFactor: 2,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [idOf(s.ingest.deadLetters!), 'Arn'] } } },
    })
    const read = policyOf(kinesisStack, s.writer.role).filter((st) => actions(st).some((a) => a.startsWith('kinesis:')))
    expect(read.length).toBeGreaterThan(0)
    for (const st of read) expect(resourcesOf(st)).toEqual([KINESIS_ARN])
  })
})

describe('functions', () => {
  it('are arm64 nodejs22.x ESM bundles with their own log groups', () => {
    const fns = ofType(sqsStack, 'AWS::Lambda::Function').map(([, r]) => r.Properties)
    expect(fns).toHaveLength(1 + 1 + 1 + 3 * 4) // writer, reader, table-init, committer + compactor + maintenance per table
    for (const p of fns) {
      expect(p.Runtime).toBe('nodejs22.x')
      expect(p.Architectures).toEqual(['arm64'])
      expect(p.Handler).toBe('index.handler')
      expect(p.LoggingConfig.LogGroup.Ref).toBeTruthy()
    }
    expect(ofType(sqsStack, 'AWS::Logs::LogGroup').every(([, r]) => r.Properties.RetentionInDays === 30)).toBe(true)
  })

  it("every function's process starts with large allocations always mapped (MALLOC_MMAP_THRESHOLD_, read by glibc at start)", () => {
    for (const s of [sqsStack, kinesisStack]) {
      const fns = ofType(s, 'AWS::Lambda::Function')
      expect(fns.length).toBeGreaterThan(0)
      for (const [id, r] of fns) expect(r.Properties.Environment.Variables.MALLOC_MMAP_THRESHOLD_, id).toBe('131072')
    }
  })

  it('the reader has a Function URL with AWS_IAM auth', () => {
    sqsStack.template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'AWS_IAM', TargetFunctionArn: { 'Fn::GetAtt': [idOf(sqsStack.stack.reader.fn), 'Arn'] } })
  })

  it('each maintenance function runs on its own schedule, and its orphan cleanup on another', () => {
    for (const t of kinesisStack.stack.tables) {
      kinesisStack.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(30 minutes)',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [idOf(t.maintenance.fn), 'Arn'] }, Input: Match.absent() })],
      })
      kinesisStack.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(6 hours)',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [idOf(t.maintenance.fn), 'Arn'] }, Input: '{"task":"remove-orphans"}' })],
      })
    }
    const rules = Object.values(kinesisStack.template.findResources('AWS::Events::Rule'))
    expect(rules.length).toBe(2 * kinesisStack.stack.tables.length)
  })

  it('environments name the tables each function serves', () => {
    const env = (fn: { node: { defaultChild?: unknown } }) => JSON.stringify(sqsStack.resources[idOf(fn)].Properties.Environment.Variables)
    const s = sqsStack.stack
    for (const t of s.tables) {
      expect(env(s.writer.fn)).toContain(`\\"${t.name}\\":{\\"uri\\":\\"s3://`)
      expect(env(s.writer.fn)).toContain(`\\"compactionQueueUrl\\":\\"",{"Ref":"${idOf(t.queue)}"}`)
      expect(env(s.writer.fn)).toContain(`\\"commitQueueUrl\\":\\"",{"Ref":"${idOf(t.commitQueue)}"}`)
      for (const fn of [t.compactor.fn, t.committer.fn, t.maintenance.fn]) {
        const own = sqsStack.resources[idOf(fn)].Properties.Environment.Variables
        expect(own.STRATA_TABLE).toBe(t.name)
        expect(JSON.stringify(own)).toContain(`\\"commitQueueUrl\\":\\"",{"Ref":"${idOf(t.commitQueue)}"}`)
        for (const other of s.tables.filter((x) => x !== t)) {
          expect(JSON.stringify(own)).not.toContain(idOf(other.queue))
          expect(JSON.stringify(own)).not.toContain(idOf(other.commitQueue))
        }
      }
    }
    expect(env(s.reader.fn)).not.toContain('compactionQueueUrl')
    expect(env(s.reader.fn)).not.toContain('commitQueueUrl')
    expect(sqsStack.resources[idOf(s.reader.fn)].Properties.Environment.Variables.STRATA_MAX_RESULT_ROWS).toBe('1000')
  })

  it('every table gets a Custom::StrataTable with its schema, and its functions wait for it', () => {
    const s = sqsStack.stack
    for (const t of s.tables) {
      const cr = sqsStack.resources[idOf(t.created)]
      expect(cr.Type).toBe('Custom::StrataTable')
      expect(cr.Properties.ServiceToken).toEqual({ 'Fn::GetAtt': [idOf(s.tableInit.fn), 'Arn'] })
      expect(JSON.parse(cr.Properties.Schema)).toEqual(SQS_CONFIG.tables.find((x) => x.name === t.name)!.schema)
      expect(cr.Properties.TableUri).toEqual({ 'Fn::Join': ['', ['s3://', { Ref: idOf(s.storage.bucket) }, `/tables/${t.name}`]] })
      expect(sqsStack.resources[idOf(t.compactor.fn)].DependsOn).toContain(idOf(t.created))
      expect(sqsStack.resources[idOf(t.committer.fn)].DependsOn).toContain(idOf(t.created))
      expect(sqsStack.resources[idOf(s.writer.fn)].DependsOn).toContain(idOf(t.created))
    }
  })
})

describe('least privilege', () => {
  const allStatements = (s: Synth) => ofType(s, 'AWS::IAM::Policy').flatMap(([, r]) => r.Properties.PolicyDocument.Statement)

  it('no wildcard actions and no statement on "*"', () => {
    for (const s of [sqsStack, kinesisStack]) {
      for (const st of allStatements(s)) {
        expect(actions(st).filter((a: string) => a === '*' || a.endsWith(':*'))).toEqual([])
        expect(resourcesOf(st)).not.toContain('*')
      }
      expect(ofType(s, 'AWS::IAM::Role').every(([, r]) => r.Properties.ManagedPolicyArns === undefined)).toBe(true)
    }
  })

  /** S3 object grants of a role as action → sorted keys, and whether it may list the bucket. */
  function s3Grants(s: Synth, role: Parameters<typeof policyOf>[1]): { list: boolean; objects: Record<string, string[]> } {
    const objects: Record<string, string[]> = {}
    let list = false
    for (const st of policyOf(s, role).filter((x) => x.Effect === 'Allow')) {
      for (const a of actions(st).filter((x) => x.startsWith('s3:'))) {
        if (a === 's3:ListBucket') {
          expect(resourcesOf(st)).toEqual([{ 'Fn::GetAtt': [idOf(s.stack.storage.bucket), 'Arn'] }])
          list = true
          continue
        }
        for (const r of resourcesOf(st)) (objects[a] ??= []).push(objectKeyOf(s, r)!)
      }
    }
    for (const k of Object.keys(objects)) objects[k].sort()
    return { list, objects }
  }

  it('writer: reads and writes its tables, deletes only receipts, writes rejects, sends to the compaction and commit queues', () => {
    const s = sqsStack.stack
    const names = s.tables.map((t) => t.name).sort()
    expect(s3Grants(sqsStack, s.writer.role)).toEqual({
      list: true,
      objects: {
        's3:GetObject': names.map((n) => `/tables/${n}/*`),
        's3:PutObject': ['/rejects/*', ...names.map((n) => `/tables/${n}/*`)],
        's3:DeleteObject': names.map((n) => `/tables/${n}/_strata/commit-receipts/*`),
      },
    })
    const send = policyOf(sqsStack, s.writer.role).filter((st) => actions(st).includes('sqs:SendMessage'))
    expect(send.flatMap(resourcesOf).map((r: any) => `${r['Fn::GetAtt'][0]}.${r['Fn::GetAtt'][1]}`).sort()).toEqual(s.tables.flatMap((t) => [`${idOf(t.queue)}.Arn`, `${idOf(t.commitQueue)}.Arn`]).sort())
  })

  it("compactor: its own table prefix, consumes its own queue, sends to it and to its table's commit queue", () => {
    for (const t of sqsStack.stack.tables) {
      const p = `/tables/${t.name}/*`
      expect(s3Grants(sqsStack, t.compactor.role)).toEqual({ list: true, objects: { 's3:GetObject': [p], 's3:PutObject': [p], 's3:DeleteObject': [p] } })
      const sqs = policyOf(sqsStack, t.compactor.role).filter((st) => actions(st).some((a) => a.startsWith('sqs:')))
      const send = sqs.filter((st) => actions(st).includes('sqs:SendMessage'))
      expect(send).toHaveLength(1)
      expect(send[0].Action).toBe('sqs:SendMessage')
      expect(resourcesOf(send[0]).map((r: any) => r['Fn::GetAtt'][0]).sort()).toEqual([idOf(t.queue), idOf(t.commitQueue)].sort())
      const rest = sqs.filter((st) => !send.includes(st))
      expect(rest.flatMap(resourcesOf)).toEqual(rest.map(() => ({ 'Fn::GetAtt': [idOf(t.queue), 'Arn'] })))
    }
  })

  it('reader: read-only', () => {
    const s = sqsStack.stack
    expect(s3Grants(sqsStack, s.reader.role)).toEqual({ list: true, objects: { 's3:GetObject': s.tables.map((t) => `/tables/${t.name}/*`).sort() } })
    expect(policyOf(sqsStack, s.reader.role).flatMap(actions).filter((a) => a.startsWith('sqs:'))).toEqual([])
  })

  it('maintenance: reads and deletes its table, writes only the EARLIEST hint, reads its queue attributes', () => {
    for (const t of sqsStack.stack.tables) {
      const p = `/tables/${t.name}/*`
      expect(s3Grants(sqsStack, t.maintenance.role)).toEqual({
        list: true,
        objects: { 's3:GetObject': [p], 's3:DeleteObject': [p], 's3:PutObject': [`/tables/${t.name}/snapshot/EARLIEST`] },
      })
      const sqs = policyOf(sqsStack, t.maintenance.role).filter((st) => actions(st).some((a) => a.startsWith('sqs:')))
      expect(sqs).toEqual([{ Effect: 'Allow', Action: 'sqs:GetQueueAttributes', Resource: { 'Fn::GetAtt': [idOf(t.queue), 'Arn'] } }])
    }
  })

  it('table init: writes only the schema directories, reads the snapshots too (an option change is checked against them)', () => {
    const s = sqsStack.stack
    const keys = s.tables.map((t) => `/tables/${t.name}/schema/*`).sort()
    const snapshots = s.tables.map((t) => `/tables/${t.name}/snapshot/*`)
    expect(s3Grants(sqsStack, s.tableInit.role)).toEqual({ list: true, objects: { 's3:GetObject': [...keys, ...snapshots].sort(), 's3:PutObject': keys } })
  })

  it('writer, committers, compactors and maintenance are denied writes to the schemas', () => {
    const s = sqsStack.stack
    const denied = (role: Parameters<typeof policyOf>[1]) =>
      policyOf(sqsStack, role)
        .filter((st) => st.Effect === 'Deny')
        .map((st) => ({ actions: actions(st), keys: resourcesOf(st).map((r) => objectKeyOf(sqsStack, r)).sort() }))
    const schemas = (ts: typeof s.tables) => ts.map((t) => `/tables/${t.name}/schema/*`).sort()
    expect(denied(s.writer.role)).toEqual([{ actions: ['s3:DeleteObject', 's3:PutObject'], keys: schemas(s.tables) }])
    for (const t of s.tables) {
      expect(denied(t.committer.role)).toEqual([{ actions: ['s3:DeleteObject', 's3:PutObject'], keys: schemas([t]) }])
      expect(denied(t.compactor.role)).toEqual([{ actions: ['s3:DeleteObject', 's3:PutObject'], keys: schemas([t]) }])
      expect(denied(t.maintenance.role)).toEqual([{ actions: ['s3:DeleteObject', 's3:PutObject'], keys: schemas([t]) }])
    }
    expect(denied(s.tableInit.role)).toEqual([])
  })

  it('logs: each role writes to its own log group only', () => {
    for (const f of [sqsStack.stack.writer, sqsStack.stack.reader, ...sqsStack.stack.tables.flatMap((t) => [t.compactor, t.committer])]) {
      const logs = policyOf(sqsStack, f.role).filter((st) => actions(st).some((a) => a.startsWith('logs:')))
      expect(logs.flatMap(resourcesOf)).toEqual([{ 'Fn::GetAtt': [idOf(f.logGroup), 'Arn'] }])
    }
  })
})

describe('storage', () => {
  const buckets = (s: Synth) => ofType(s, 'AWS::S3::Bucket').map(([id, r]) => ({ id, p: r.Properties }))

  it('buckets are encrypted, never public and TLS only', () => {
    for (const s of [sqsStack, kinesisStack]) {
      for (const { id, p } of buckets(s)) {
        expect(p.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm).toBe('AES256')
        expect(p.PublicAccessBlockConfiguration).toEqual({ BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true })
        const policy = ofType(s, 'AWS::S3::BucketPolicy').find(([, r]) => r.Properties.Bucket.Ref === id)
        expect(policy, id).toBeDefined()
        expect(policy![1].Properties.PolicyDocument.Statement).toContainEqual(
          expect.objectContaining({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        )
      }
      expect(Object.values(s.template.toJSON().Resources).filter((r: any) => r.Type === 'AWS::S3::Bucket').every((r: any) => r.DeletionPolicy === 'Retain')).toBe(true)
    }
  })

  it('the data bucket expires rejects, logs access by default, and is unversioned unless configured', () => {
    const data = sqsStack.resources[idOf(sqsStack.stack.storage.bucket)].Properties
    expect(data.LifecycleConfiguration.Rules).toContainEqual(expect.objectContaining({ Prefix: 'rejects/', ExpirationInDays: 30, Status: 'Enabled' }))
    expect(data.VersioningConfiguration).toBeUndefined()
    expect(data.LoggingConfiguration.DestinationBucketName).toEqual({ Ref: idOf(sqsStack.stack.storage.accessLogs!) })

    const versioned = kinesisStack.resources[idOf(kinesisStack.stack.storage.bucket)].Properties
    expect(versioned.VersioningConfiguration).toEqual({ Status: 'Enabled' })
    expect(versioned.LifecycleConfiguration.Rules).toContainEqual(expect.objectContaining({ Prefix: 'rejects/', ExpirationInDays: 9 }))
    expect(versioned.LifecycleConfiguration.Rules).toContainEqual(expect.objectContaining({ NoncurrentVersionExpiration: { NoncurrentDays: 3 } }))
    expect(versioned.LoggingConfiguration).toBeUndefined()
    expect(buckets(kinesisStack)).toHaveLength(1)
  })

  it('queues are encrypted and TLS only', () => {
    for (const s of [sqsStack, kinesisStack]) {
      const queues = ofType(s, 'AWS::SQS::Queue')
      for (const [id, q] of queues) {
        expect(q.Properties.SqsManagedSseEnabled, id).toBe(true)
        const policy = ofType(s, 'AWS::SQS::QueuePolicy').find(([, r]) => r.Properties.Queues.some((x: any) => x.Ref === id))
        expect(policy![1].Properties.PolicyDocument.Statement).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }))
      }
    }
  })
})

describe('alarms and dashboard', () => {
  const alarms = (s: Synth) => ofType(s, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties)

  it('every DLQ has a depth alarm', () => {
    const s = sqsStack.stack
    const dlqs = [s.ingest.deadLetters!, ...s.tables.flatMap((t) => [t.deadLetters, t.commitDeadLetters])]
    for (const q of dlqs) {
      const a = alarms(sqsStack).find((p) => p.Namespace === 'AWS/SQS' && p.Dimensions[0].Value['Fn::GetAtt'][0] === idOf(q))
      expect(a, idOf(q)).toMatchObject({ MetricName: 'ApproximateNumberOfMessagesVisible', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' })
    }
    expect(alarms(sqsStack).filter((p) => p.MetricName === 'ApproximateNumberOfMessagesVisible')).toHaveLength(dlqs.length)
    expect(dlqs).toHaveLength(1 + 2 * 4)
  })

  it('per table, the commit queue age and committer errors are alarmed', () => {
    const s = sqsStack.stack
    const age = alarms(sqsStack).filter((p) => p.MetricName === 'ApproximateAgeOfOldestMessage')
    const commitAge = age.filter((p) => p.Dimensions[0].Value['Fn::GetAtt'][0] !== idOf(s.ingest.queue!))
    expect(commitAge.map((p) => p.Dimensions[0].Value['Fn::GetAtt'][0]).sort()).toEqual(s.tables.map((t) => idOf(t.commitQueue)).sort())
    expect(commitAge.every((p) => p.Threshold === 60 && p.Period === 60 && p.Statistic === 'Maximum')).toBe(true)
    const errors = alarms(sqsStack).filter((p) => p.Namespace === 'AWS/Lambda' && p.MetricName === 'Errors')
    expect(errors.map((p) => p.Dimensions[0].Value.Ref)).toEqual(expect.arrayContaining(s.tables.map((t) => idOf(t.committer.fn))))
  })

  it('freshness lag and L0 file count alarms per table, on the maintenance series, with the configured limits', () => {
    for (const t of sqsStack.stack.tables) {
      const dims = [{ Name: 'function', Value: 'maintenance' }, { Name: 'service', Value: 'strata' }, { Name: 'table', Value: t.name }]
      const mine = alarms(sqsStack).filter((p) => p.Namespace === 'Strata' && JSON.stringify(p.Dimensions) === JSON.stringify(dims))
      expect(mine.map((p) => p.MetricName).sort()).toEqual(['FreshnessLag', 'L0FileCountMax'])
      const lag = mine.find((p) => p.MetricName === 'FreshnessLag')!
      const l0 = mine.find((p) => p.MetricName === 'L0FileCountMax')!
      expect(lag.Period).toBe(15 * 60)
      expect(lag.TreatMissingData).toBe('breaching')
      expect(l0.TreatMissingData).toBe('ignore')
      if (t.name === 'page_views') {
        expect(lag.Threshold).toBe(5 * 60_000)
        expect(l0.Threshold).toBe(20)
      } else {
        expect(lag.Threshold).toBe(30 * 60_000)
        expect(l0.Threshold).toBe(8) // num-sorted-run.stop-trigger: compaction-trigger 5 + 3
      }
    }
  })

  it('alarms notify the configured topic', () => {
    const all = alarms(kinesisStack)
    // stack: failed-batches queue, iterator age, errors + throttles of writer, reader and
    // table-init; the table: compaction DLQ, commit DLQ, commit age, committer lease
    // overridden, freshness, L0, commit-feed failures, errors + throttles of compactor,
    // committer and maintenance
    expect(all.length).toBe(2 + 2 * 3 + 7 + 2 * 3)
    for (const a of all) {
      expect(a.AlarmActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:strata-alarms'])
      expect(a.OKActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:strata-alarms'])
    }
    expect(ofType(kinesisStack, 'AWS::SNS::Topic')).toEqual([])
  })

  it('the dashboard shows the runbook metrics', () => {
    const [, dash] = ofType(sqsStack, 'AWS::CloudWatch::Dashboard')[0]
    const body = JSON.stringify(dash.Properties.DashboardBody)
    for (const m of ['FreshnessLag', 'PostponedRows', 'L0FileCountMax', 'QueuedJobs', 'CompactorBusy', 'CompactionTime', 'CompactionJobs', 'RowsWritten', 'RowsRejected', 'CommitRetries', 'Throttles', 'ConcurrentExecutions', 'ApproximateNumberOfMessagesVisible', 'ApproximateAgeOfOldestMessage', 'Duration']) {
      expect(body, m).toContain(m)
    }
  })
})

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in either stack', () => {
    for (const s of [sqsStack, kinesisStack]) {
      const report = new AwsSolutionsChecks(s.app).validateScope(s.app)
      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(' ')}`)).toEqual([])
    }
  })

  it('every acknowledgement carries a written reason', () => {
    const acks: [string, string][] = []
    for (const c of [...sqsStack.app.node.findAll(), ...kinesisStack.app.node.findAll()]) {
      for (const m of c.node.metadata) if (m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY) acks.push(...(Object.entries(m.data as object) as [string, string][]))
    }
    expect(acks.length).toBeGreaterThan(0)
    for (const [id, reason] of acks) {
      expect(id).toMatch(/AwsSolutions-(IAM5\[Resource::<StorageData[0-9A-F]{8}\.Arn>\/(tables\/[a-z_]+\/(schema\/|manifest\/|snapshot\/|_strata\/(commit-receipts|commit-messages|folded-commits)\/)?|rejects\/)\*\]|L1|S1|SQS3)$/)
      expect(reason.length, id).toBeGreaterThan(40)
    }
  })

  it('does flag a resource that breaks a rule (the check is live)', () => {
    const app = testApp()
    const stack = new Stack(app, 'Probe')
    new Queue(stack, 'Plain')
    const rules = new AwsSolutionsChecks(app).validateScope(app).violations.map((v) => v.ruleName)
    expect(rules).toEqual(expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']))
  })
})

describe('deployment config', () => {
  const table = (options: Record<string, string> = {}, extra: Record<string, unknown> = {}) => ({ name: 't', schema: schema(options), ...extra })
  const bad = (cfg: unknown) => {
    try {
      parseDeployConfig(cfg, 'cfg')
    } catch (e) {
      expect(e).toBeInstanceOf(DeployConfigError)
      return (e as Error).message
    }
    throw new Error('expected the config to be refused')
  }

  it('the example config (cdk/strata.config.json) is valid', () => {
    const cfg = loadDeployConfig(join(ROOT, 'cdk', 'strata.config.json'))
    expect(cfg.tables.map((t) => t.name)).toEqual(['orders'])
    expect(cfg.ingest.type).toBe('sqs')
  })

  it('applies the defaults', () => {
    const cfg = parseDeployConfig({ tables: [table()] })
    expect(cfg).toMatchObject({
      stackName: 'Strata',
      ingest: { type: 'sqs', batchSize: 1000, maxBatchingWindowSeconds: 5, maxConcurrency: 8 },
      bucket: { rejectRetentionDays: 30, versioned: false, accessLogs: true },
      functions: { writer: { memoryMb: 1024, timeoutSeconds: 120 }, maintenance: { scheduleMinutes: 15, orphanScheduleHours: 6 }, logRetentionDays: 30, logLevel: 'INFO' },
    })
    expect(cfg.tables[0]).toMatchObject({
      taskThreads: 1,
      compactor: { memoryMb: 3008, timeoutSeconds: 120 },
      committer: { memoryMb: 1024, timeoutSeconds: 60 },
      alarms: { freshnessLagMinutes: 30, l0FileCount: 8, commitQueueAgeSeconds: 60 },
    })
  })

  it('a bad table option fails with the option named, as createSchema words it', () => {
    expect(bad({ tables: [table({ bucket: '0' })] })).toBe(`cfg: tables[0] ('t'): option 'bucket': invalid value "0", expected an integer in 1..32768`)
    expect(bad({ tables: [table({ 'compaction.task-threads': '0' })] })).toMatch(/option 'compaction.task-threads': invalid value "0", expected -1 or an integer >= 1/)
    expect(bad({ tables: [table({ 'compaction.task-threads': '1001' })] })).toMatch(/option 'compaction.task-threads': invalid value "1001", expected -1 or 1..1000/)
    expect(bad({ tables: [table({ 'no.such.option': 'x' })] })).toMatch(/option 'no.such.option' is unknown/)
    expect(bad({ tables: [{ name: 't', schema: { ...schema(), primaryKeys: [] } }] })).toMatch(/tables\[0\] \('t'\): schema.primaryKeys/)
  })

  it('names the field of every other mistake', () => {
    expect(bad({})).toMatch(/cfg: tables: invalid value undefined, expected a non-empty array/)
    expect(bad({ tables: [table()], ingets: {} })).toMatch(/unknown key 'ingets'/)
    expect(bad({ tables: [table({}, { name: '9lives' })] })).toMatch(/tables\[0\]\.name: invalid value "9lives"/)
    expect(bad({ tables: [table({}, { name: 'a-b' }), table({}, { name: 'A_B' })] })).toMatch(/tables\[1\]\.name: 'A_B' clashes/)
    expect(bad({ tables: [table({}, { compactor: { timeoutSeconds: 901 } })] })).toMatch(/tables\[0\]\.compactor\.timeoutSeconds: invalid value 901, expected an integer in 1..900/)
    expect(bad({ tables: [table({}, { compactor: { reservedConcurrency: 2 } })] })).toMatch(/reservedConcurrency: .*applies only when compaction.task-threads is N >= 2/)
    expect(bad({ tables: [table({ 'compaction.task-threads': '4' }, { compactor: { reservedConcurrency: 3 } })] })).toMatch(/reservedConcurrency: invalid value 3, expected at least compaction.task-threads \(4\)/)
    expect(bad({ tables: [table()], ingest: { type: 'sqs', batchSize: 50, maxBatchingWindowSeconds: 0 } })).toMatch(/ingest.maxBatchingWindowSeconds: .*at least 1 when ingest.batchSize \(50\)/)
    expect(bad({ tables: [table()], ingest: { type: 'sqs', streamArn: KINESIS_ARN } })).toMatch(/ingest.streamArn applies to a Kinesis source only/)
    expect(bad({ tables: [table()], ingest: { type: 'kinesis', streamArn: 'arn:aws:sqs:x' } })).toMatch(/ingest.streamArn: invalid value "arn:aws:sqs:x", expected a Kinesis stream ARN/)
    expect(bad({ tables: [table()], ingest: { type: 'kafka' } })).toMatch(/ingest.type: invalid value "kafka", expected one of sqs, kinesis/)
    expect(bad({ tables: [table()], functions: { logRetentionDays: 10 } })).toMatch(/functions.logRetentionDays: invalid value 10, expected one of 1, 3, 5/)
    expect(bad({ tables: [table()], functions: { maintenance: { scheduleMinutes: 5, timeoutSeconds: 300 } } })).toMatch(/functions.maintenance.timeoutSeconds: invalid value 300, expected less than/)
    expect(bad({ tables: [table()], functions: { maintenance: { orphanScheduleHours: 0 } } })).toMatch(/functions.maintenance.orphanScheduleHours: invalid value 0, expected an integer in 1..168/)
    expect(bad({ tables: [table()], alarms: { topicArn: 'x' } })).toMatch(/alarms.topicArn: invalid value "x"/)
    expect(bad({ tables: [table({}, { committer: { enabled: true } })] })).toMatch(/^cfg: tables\[0\]\.committer\.enabled: invalid value true, expected no value: .*every table now commits through its committer/)
    expect(bad({ tables: [table({}, { alarms: { commitQueueAgeSeconds: 'soon' } })] })).toMatch(/tables\[0\]\.alarms\.commitQueueAgeSeconds: invalid value "soon", expected an integer in 1..43200/)
  })

  it('takes the config from context: inline JSON first, then the config file', () => {
    const inline = { tables: [table()], stackName: 'Inline' }
    expect(configFromContext((k) => (k === 'strata' ? JSON.stringify(inline) : k === 'config' ? 'nope.json' : undefined)).stackName).toBe('Inline')
    expect(configFromContext((k) => (k === 'strata' ? inline : undefined)).stackName).toBe('Inline')
    expect(configFromContext((k) => (k === 'config' ? join(ROOT, 'cdk', 'strata.config.json') : undefined)).tables[0].name).toBe('orders')
    expect(() => configFromContext((k) => (k === 'config' ? '/no/such/strata.json' : undefined))).toThrow(/strata config \/no\/such\/strata.json: cannot read it/)
    expect(() => configFromContext((k) => (k === 'strata' ? '{not json' : undefined))).toThrow(/context 'strata'\): not valid JSON/)
  })

  it("cdk.json's app command exits 1 with the message alone on a bad config", async () => {
    const out = mkdtempSync(join(tmpdir(), 'strata-cdk-app-'))
    const bad = join(out, 'bad.json')
    writeFileSync(bad, JSON.stringify({ tables: [table({ 'compaction.task-threads': '-2' })] }))
    try {
      // as `cdk synth -c config=…` runs it: output directory and context in the environment
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'cdk/app.ts'], {
          cwd: ROOT,
          env: { ...process.env, CDK_OUTDIR: out, CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_CONTEXT, config: bad }) },
        })
        let err = ''
        child.stderr.on('data', (d) => (err += d))
        child.on('close', (c) => resolve({ code: c, stderr: err }))
      })
      expect(code).toBe(1)
      expect(stderr.trim()).toBe(`strata config ${bad}: tables[0] ('t'): option 'compaction.task-threads': invalid value "-2", expected -1 or an integer >= 1`)
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  })

  it('a bad config fails synth with its message', () => {
    const app = testApp({ context: { strata: { tables: [table({ bucket: 'many' })] } } })
    expect(() => buildApp(app)).toThrow(`strata config (context 'strata'): tables[0] ('t'): option 'bucket': invalid value "many", expected an integer in 1..32768`)
  })
})

describe('table init schema check', () => {
  it('names what differs in columns and keys; options are applied, not compared (test/cdk-table-init.test.ts)', () => {
    const a = createSchema(schema({ 'compaction.task-threads': '1' }))
    expect(schemaDifferences(a, createSchema(schema({ 'compaction.task-threads': '8' })))).toEqual([])
    expect(schemaDifferences(a, createSchema(schema({ bucket: '8' })))).toEqual([])
    expect(schemaDifferences(a, createSchema({ ...schema(), primaryKeys: ['dt', 'id', 'v'] }))).toEqual([
      'fields: stored "dt STRING NOT NULL, id BIGINT NOT NULL, v STRING", configured "dt STRING NOT NULL, id BIGINT NOT NULL, v STRING NOT NULL"',
      'primaryKeys: stored "dt, id", configured "dt, id, v"',
    ])
    const renamed = createSchema({ ...schema(), fields: [...schema().fields.slice(0, 2), { name: 'w', type: 'INT' }] })
    expect(schemaDifferences(a, renamed)).toEqual(['fields: stored "dt STRING NOT NULL, id BIGINT NOT NULL, v STRING", configured "dt STRING NOT NULL, id BIGINT NOT NULL, w INT"'])
  })
})
