// The construct library (cdk/index.ts) in a user's app: StrataTable with a bucket and KMS
// key of the user's and grants to a function of the user's — the policies name only the
// table's prefixes and the key, and cdk-nag finds nothing Strata did not acknowledge; a KMS
// key encrypting what Strata creates (bucket, queues, topic); grantWrite, grantConsume and
// grantInvokeReader; the metrics; typed props refused with the prop named; two deployments
// in one stack. Bundling is skipped (the tests read templates).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Duration, Stack, Validations } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { Key } from 'aws-cdk-lib/aws-kms'
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda'
import { Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3'
import { Queue } from 'aws-cdk-lib/aws-sqs'
import { AwsSolutionsChecks } from 'cdk-nag'
import { describe, expect, it } from 'vitest'
import { DeployConfigError, StrataTable, StrataTables, type StrataTableProps } from '../cdk/index.ts'
import { packagedBundle } from '../cdk/constructs/strata-function.ts'
import { CDK_CONTEXT, testApp } from './helpers/cdk.ts'

const schema = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '2' },
}

type Statement = { Effect: string; Action: string | string[]; Resource: unknown }
const actions = (st: Statement) => (Array.isArray(st.Action) ? st.Action : [st.Action])

/** A user's stack: their own function (their acknowledgements for it are theirs, as in any app). */
function userStack(id: string) {
  const app = testApp({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } })
  const stack = new Stack(app, id)
  const fn = new LambdaFunction(stack, 'Consumer', { runtime: Runtime.NODEJS_22_X, handler: 'index.handler', code: Code.fromInline('export const handler = async () => {}') })
  Validations.of(fn).acknowledge(
    { id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]', reason: "The user's own function in this test keeps CDK's default execution role with the basic Lambda policy." },
    { id: 'AwsSolutions-L1', reason: "The user's own function in this test pins nodejs22.x, as Strata's functions do." },
  )
  return { app, stack, fn }
}

/** The statements of the user function's role policy. */
function fnStatements(stack: Stack): Statement[] {
  const policies = Object.values(Template.fromStack(stack).findResources('AWS::IAM::Policy')) as { Properties: { PolicyName: string; Roles: { Ref: string }[]; PolicyDocument: { Statement: Statement[] } } }[]
  const mine = policies.filter((p) => p.Properties.Roles.some((r) => r.Ref.startsWith('ConsumerServiceRole')))
  return mine.flatMap((p) => p.Properties.PolicyDocument.Statement)
}

const nagViolations = (app: ReturnType<typeof testApp>) =>
  new AwsSolutionsChecks(app).validateScope(app).violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(' ')}`)

describe('StrataTable with a bucket and key of the user', () => {
  const { app, stack, fn } = userStack('UserApp')
  const key = new Key(stack, 'DataKey', { enableKeyRotation: true })
  const bucket = new Bucket(stack, 'Lake', { encryption: BucketEncryption.KMS, encryptionKey: key, enforceSSL: true })
  Validations.of(bucket).acknowledge({ id: 'AwsSolutions-S1', reason: "The user's own bucket in this test has no access logging; theirs to decide." })
  const table = new StrataTable(stack, 'Orders', { name: 'orders', schema, bucket, encryptionKey: key })
  table.grantRead(fn)
  const template = Template.fromStack(stack)

  it('uses the bucket as it is: Strata creates none, and the table lives under tables/orders in it', () => {
    expect(Object.keys(template.findResources('AWS::S3::Bucket'))).toHaveLength(1)
    expect(stack.resolve(table.tableUri)).toEqual({ 'Fn::Join': ['', ['s3://', { Ref: stack.getLogicalId(bucket.node.defaultChild as never) }, '/tables/orders']] })
  })

  it("grantRead gives the user's function s3:GetObject under the table's prefix only, ListBucket on the bucket and kms:Decrypt on the key", () => {
    const sts = fnStatements(stack)
    const bucketArn = { 'Fn::GetAtt': [stack.getLogicalId(bucket.node.defaultChild as never), 'Arn'] }
    const s3 = sts.filter((st) => actions(st).some((a) => a.startsWith('s3:')))
    expect(s3).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Action: 's3:GetObject', Resource: { 'Fn::Join': ['', [bucketArn, '/tables/orders/*']] } }),
        expect.objectContaining({ Action: 's3:ListBucket', Resource: bucketArn }),
      ]),
    )
    expect(s3.flatMap(actions).sort()).toEqual(['s3:GetObject', 's3:ListBucket'])
    const kms = sts.filter((st) => actions(st).some((a) => a.startsWith('kms:')))
    expect(kms).toEqual([expect.objectContaining({ Action: 'kms:Decrypt', Resource: { 'Fn::GetAtt': [stack.getLogicalId(key.node.defaultChild as never), 'Arn'] } })])
  })

  it('cdk-nag finds nothing unacknowledged, the grant included', () => {
    expect(nagViolations(app)).toEqual([])
  })
})

describe('a KMS key of the user for what Strata creates', () => {
  const { stack, fn } = userStack('KeyedApp')
  const key = new Key(stack, 'StrataKey', { enableKeyRotation: true })
  const strata = new StrataTables(stack, 'Strata', { encryptionKey: key, tables: [{ name: 'events', schema }] })
  const writes = strata.grantWrite(fn)
  strata.grantConsume(fn, 'events')
  strata.grantInvokeReader(fn)
  const template = Template.fromStack(stack)
  const keyArn = { 'Fn::GetAtt': [stack.getLogicalId(key.node.defaultChild as never), 'Arn'] }

  it('encrypts the bucket (with an S3 Bucket Key), every queue and the alarm topic', () => {
    const data = template.findResources('AWS::S3::Bucket', { Properties: { BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms' } }] } } })
    const [dataBucket] = Object.values(data) as { Properties: any }[]
    expect(dataBucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0]).toMatchObject({ BucketKeyEnabled: true, ServerSideEncryptionByDefault: { KMSMasterKeyID: keyArn } })
    const queues = Object.values(template.findResources('AWS::SQS::Queue')) as { Properties: any }[]
    expect(queues.length).toBeGreaterThanOrEqual(6)
    for (const q of queues) expect(q.Properties.KmsMasterKeyId).toEqual(keyArn)
    const topics = Object.values(template.findResources('AWS::SNS::Topic')) as { Properties: any }[]
    expect(topics.map((t) => t.Properties.KmsMasterKeyId)).toEqual([keyArn])
    // no key of Strata's own beside it
    expect(Object.keys(template.findResources('AWS::KMS::Key'))).toHaveLength(1)
  })

  it("the key's policy lets CloudWatch alarms encrypt for the topic", () => {
    const [k] = Object.values(template.findResources('AWS::KMS::Key')) as { Properties: any }[]
    expect(k.Properties.KeyPolicy.Statement).toEqual(expect.arrayContaining([expect.objectContaining({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'] })]))
  })

  it("every Strata function's role may use the key (the reader only to decrypt)", () => {
    for (const f of [strata.writer, strata.tableInit, ...strata.tables.flatMap((t) => [t.compactor, t.committer, t.maintenance])]) {
      const sts = stack.resolve(f.role.node.tryFindChild('DefaultPolicy') && (f.role.node.findChild('DefaultPolicy') as any).document.toJSON().Statement) as Statement[]
      expect(sts.some((st) => actions(st).includes('kms:GenerateDataKey') && JSON.stringify(st.Resource) === JSON.stringify(keyArn)), f.node.path).toBe(true)
    }
    const reader = stack.resolve((strata.reader.role.node.findChild('DefaultPolicy') as any).document.toJSON().Statement) as Statement[]
    expect(reader.filter((st) => actions(st).some((a) => a.startsWith('kms:'))).flatMap(actions)).toEqual(['kms:Decrypt'])
  })

  it('grantWrite: send to the ingest queue with the key; grantConsume: put and delete of consumer files only; grantInvokeReader: the reader URL', () => {
    expect(writes.success).toBe(true)
    const sts = fnStatements(stack)
    /** action → the resources of the statements that allow it (policies are minimized: statements merge, actions sort) */
    const on = (action: string) => sts.filter((st) => actions(st).includes(action)).map((st) => st.Resource)
    const queueArn = { 'Fn::GetAtt': [stack.getLogicalId(strata.ingestQueue!.node.defaultChild as never), 'Arn'] }
    for (const a of ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl']) expect(on(a), a).toEqual([queueArn])
    expect(sts.flatMap(actions).filter((a) => a.startsWith('sqs:')).sort()).toEqual(['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'])
    expect(on('kms:GenerateDataKey')).toEqual([keyArn])
    const bucketArn = { 'Fn::GetAtt': [stack.getLogicalId(strata.bucket.node.defaultChild as never), 'Arn'] }
    const consumers = { 'Fn::Join': ['', [bucketArn, '/tables/events/consumer/consumer-*']] }
    expect(on('s3:PutObject')).toEqual([consumers])
    expect(on('s3:DeleteObject')).toEqual([consumers])
    expect(on('s3:GetObject')).toEqual([{ 'Fn::Join': ['', [bucketArn, '/tables/events/*']] }])
    const readerArn = { 'Fn::GetAtt': [stack.getLogicalId(strata.readerFunction.node.defaultChild as never), 'Arn'] }
    expect(on('lambda:InvokeFunctionUrl')).toEqual([readerArn])
    expect(on('lambda:InvokeFunction')).toEqual([readerArn])
  })

  it('metrics: freshness lag, L0 files, compaction backlog and rows written per table, ingest age', () => {
    expect(strata.metricFreshnessLag('events')).toMatchObject({ namespace: 'Strata', metricName: 'FreshnessLag', statistic: 'Maximum', dimensions: { service: 'strata', function: 'maintenance', table: 'events' } })
    expect(strata.metricFreshnessLag('events').period.toMinutes()).toBe(15)
    expect(strata.metricL0FileCount('events').metricName).toBe('L0FileCountMax')
    expect(strata.metricCompactionBacklog('events', { period: Duration.hours(1) })).toMatchObject({ metricName: 'QueuedJobs' })
    expect(strata.metricCompactionBacklog('events', { period: Duration.hours(1) }).period.toHours()).toBe(1)
    expect(strata.metricRowsWritten('events')).toMatchObject({ metricName: 'RowsWritten', statistic: 'Sum', dimensions: { function: 'writer', table: 'events' } })
    expect(strata.metricIngestAge()).toMatchObject({ namespace: 'AWS/SQS', metricName: 'ApproximateAgeOfOldestMessage' })
    expect(() => strata.metricFreshnessLag('nope')).toThrow("table 'nope': no such table in this StrataTables; expected one of events")
  })
})

describe('ingest sources, and two deployments in one stack', () => {
  it("a queue of the user's is the writer's event source, and Strata creates no ingest queue", () => {
    const { stack, fn } = userStack('OwnQueue')
    const queue = new Queue(stack, 'Events', { enforceSSL: true })
    const table = new StrataTable(stack, 'T', { name: 't', schema, ingest: { queue } })
    table.grantWrite(fn)
    const template = Template.fromStack(stack)
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: { 'Fn::GetAtt': [stack.getLogicalId(queue.node.defaultChild as never), 'Arn'] } })
    expect(table.ingestQueue).toBe(queue)
    expect(table.ingestDeadLetterQueue).toBeUndefined()
  })

  it('without an ingest source grantWrite is refused, and there is no ingest alarm', () => {
    const { stack, fn } = userStack('NoIngest')
    const table = new StrataTable(stack, 'T', { name: 't', schema, ingest: { enabled: false } })
    expect(() => table.grantWrite(fn)).toThrow(/grantWrite: no ingest source to write to \(ingest.enabled is false\)/)
    expect(Template.fromStack(stack).findResources('AWS::Lambda::EventSourceMapping', { Properties: { FunctionName: { Ref: stack.getLogicalId(table.writerFunction.node.defaultChild as never) } } })).toEqual({})
    expect(table.deployment.monitoring.alarms.some((a) => a.node.id === 'IngestAgeAlarm')).toBe(false)
  })

  it('two StrataTables share a stack without their alarms or names colliding', () => {
    const { app, stack } = userStack('TwoDeployments')
    new StrataTables(stack, 'Hot', { tables: [{ name: 'a', schema }], feed: { enabled: false } })
    new StrataTables(stack, 'Cold', { tables: [{ name: 'a', schema }], feed: { enabled: false } })
    expect(() => app.synth()).not.toThrow()
  })
})

describe('typed props are validated with the deploy config rules, naming the prop', () => {
  const build = (props: Partial<StrataTableProps>, id = 'Bad') => {
    const { stack } = userStack(id)
    return () => new StrataTable(stack, 'T', { name: 't', schema, ...props })
  }

  it('durations that are not whole units, or out of range', () => {
    expect(build({ alarms: { freshnessLag: Duration.seconds(90) } })).toThrow("StrataTable 'Bad/T': alarms.freshnessLag: invalid value 1 minute 30 seconds, expected a whole number of minutes")
    expect(build({ alarms: { freshnessLag: Duration.days(30) } })).toThrow("StrataTable 'Bad/T': alarms.freshnessLag (whole minutes): invalid value 43200, expected an integer in 1..10080")
    expect(build({ functions: { writer: { timeout: Duration.minutes(20) } } })).toThrow('functions.writer.timeout (whole seconds): invalid value 1200, expected an integer in 1..900')
    expect(build({ committer: { memorySize: 64 } })).toThrow("StrataTable 'Bad/T': committer.memorySize: invalid value 64, expected an integer in 128..10240")
  })

  it('compactionTaskThreads is the one place for compaction.task-threads', () => {
    expect(build({ schema: { ...schema, options: { 'compaction.task-threads': '2' } } })).toThrow("schema.options: option 'compaction.task-threads' is set by the compactionTaskThreads prop; expected no such option (set compactionTaskThreads: 2)")
    expect(build({ compactionTaskThreads: 0 })).toThrow('compactionTaskThreads: invalid value 0, expected -1 or an integer from 1')
    expect(build({ compactionTaskThreads: 4, compactor: { reservedConcurrency: 3 } })).toThrow('compactor.reservedConcurrency: invalid value 3, expected at least compaction.task-threads (4)')
  })

  it("the schema's own errors, and what only a created bucket or topic takes", () => {
    expect(build({ schema: { ...schema, options: { bucket: 'many' } } })).toThrow(`StrataTable 'Bad/T': ('t'): option 'bucket': invalid value "many", expected an integer in 1..32768`)
    const { stack } = userStack('Byo')
    const bucket = Bucket.fromBucketName(stack, 'Given', 'given-bucket')
    expect(() => new StrataTable(stack, 'T', { name: 't', schema, bucket, bucketOptions: { versioned: true } })).toThrow('bucketOptions: applies to the bucket Strata creates; expected none with a bucket of your own')
    expect(() => new StrataTables(stack, 'Many', { tables: [] })).toThrow('tables: invalid value [], expected at least one table')
    expect(build({ alarms: { email: 'not-an-address' } })).toThrow(DeployConfigError)
  })
})

describe("the functions' code", () => {
  it("compiled inside the package, a function deploys the package's bundle; from source, it bundles at synth", () => {
    const root = mkdtempSync(join(tmpdir(), 'strata-package-'))
    try {
      writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'strata-tables' }))
      mkdirSync(join(root, 'dist', 'bundles', 'writer'), { recursive: true })
      writeFileSync(join(root, 'dist', 'bundles', 'writer', 'index.mjs'), 'export const handler = async () => {}')
      const compiled = pathToFileURL(join(root, 'dist', 'cdk', 'constructs', 'strata-function.js')).href
      expect(packagedBundle('writer', compiled)).toBe(join(root, 'dist', 'bundles', 'writer'))
      // no bundle built for that kind, or running from the TypeScript source: bundle at synth
      expect(packagedBundle('reader', compiled)).toBeUndefined()
      expect(packagedBundle('writer', pathToFileURL(join(root, 'cdk', 'constructs', 'strata-function.ts')).href)).toBeUndefined()
      // another package's tree is not Strata's
      writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'someone-else' }))
      expect(packagedBundle('writer', compiled)).toBeUndefined()
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
