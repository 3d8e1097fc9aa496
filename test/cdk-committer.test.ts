// The commit path in the CDK stack: every table has a commit FIFO queue (high throughput, a
// message group per commit) with a FIFO DLQ and a committer fed by it (batch 10, partial
// batch responses, maxConcurrency 2); writers and compactors send commit messages to it and
// wait for the committer's receipts; its alarms and dashboard widgets; `committer.enabled`
// is refused. Bundling is skipped (cdk-bundle.test.ts bundles handlers).

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { App, type CfnElement } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { AwsSolutionsChecks } from 'cdk-nag'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../cdk/app.ts'
import { DeployConfigError, parseDeployConfig } from '../cdk/config.ts'
import { logicalIdOf } from '../cdk/nag.ts'
import type { StrataStack } from '../cdk/stack.ts'
import { testApp } from './helpers/cdk.ts'

const CDK_CONTEXT = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'cdk.json'), 'utf8')).context

const schema = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  partitionKeys: [],
  options: { bucket: '2' },
}
const CONFIG = {
  tables: [
    { name: 'orders', schema, committer: { timeoutSeconds: 30, memoryMb: 2048 }, alarms: { commitQueueAgeSeconds: 120 } },
    { name: 'plain', schema },
  ],
}

type Statement = { Effect: string; Action: string | string[]; Resource: any }

let app: App
let stack: StrataStack
let resources: Record<string, { Type: string; Properties: Record<string, any>; DependsOn?: string[] }>
const idOf = (c: { node: { defaultChild?: unknown } }) => logicalIdOf(c.node.defaultChild as CfnElement)
const arnOf = (c: { node: { defaultChild?: unknown } }) => ({ 'Fn::GetAtt': [idOf(c), 'Arn'] })
const table = (name: string) => stack.tables.find((x) => x.name === name)!
const statementsOf = (role: { node: { findChild(id: string): unknown } }) => {
  const policy = role.node.findChild('DefaultPolicy') as { node: { defaultChild?: unknown } }
  return resources[idOf(policy)].Properties.PolicyDocument.Statement as Statement[]
}
const actions = (st: Statement) => [st.Action].flat()
const resourcesOf = (st: Statement) => [st.Resource].flat()
/** Allowed S3 object actions of a role → sorted keys below the bucket ('/tables/x/*'). */
function s3Objects(role: Parameters<typeof statementsOf>[0]): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const st of statementsOf(role).filter((s) => s.Effect === 'Allow')) {
    for (const a of actions(st).filter((x) => x.startsWith('s3:') && x !== 's3:ListBucket')) {
      for (const r of resourcesOf(st)) {
        expect(r['Fn::Join'][1][0]).toEqual(arnOf(stack.storage.bucket))
        ;(out[a] ??= []).push(r['Fn::Join'][1][1])
      }
    }
  }
  for (const k of Object.keys(out)) out[k].sort()
  return out
}
/** The SQS actions a role has on one queue, sorted. */
const sqsActionsOn = (role: Parameters<typeof statementsOf>[0], queue: { node: { defaultChild?: unknown } }) =>
  statementsOf(role)
    .filter((st) => st.Effect === 'Allow' && resourcesOf(st).some((r) => JSON.stringify(r) === JSON.stringify(arnOf(queue))))
    .flatMap(actions)
    .filter((a) => a.startsWith('sqs:'))
    .sort()
/** A function's STRATA_TABLES with each `{Ref: X}` written as `<X>`. */
function strataTables(fn: { node: { defaultChild?: unknown } }): Record<string, Record<string, string | number>> {
  const render = (v: any): string => (typeof v === 'string' ? v : v.Ref ? `<${v.Ref}>` : v['Fn::Join'][1].map(render).join(v['Fn::Join'][0]))
  return JSON.parse(render(resources[idOf(fn)].Properties.Environment.Variables.STRATA_TABLES))
}
const entryOf = (name: string) => {
  const t = table(name)
  return { uri: `s3://<${idOf(stack.storage.bucket)}>/tables/${name}`, compactionQueueUrl: `<${idOf(t.queue)}>`, commitQueueUrl: `<${idOf(t.commitQueue)}>`, taskThreads: 1 }
}

beforeAll(() => {
  app = testApp({ context: { ...CDK_CONTEXT, strata: CONFIG, 'aws:cdk:bundling-stacks': [] } })
  stack = buildApp(app).stack
  resources = Template.fromStack(stack).toJSON().Resources
}, 60_000)

describe('every table commits through its committer', () => {
  it('has a high-throughput commit FIFO queue with a FIFO DLQ', () => {
    for (const [name, timeout] of [['orders', 30], ['plain', 60]] as const) {
      const t = table(name)
      expect(resources[idOf(t.commitQueue)].Properties).toEqual({
        FifoQueue: true,
        ContentBasedDeduplication: false,
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
        VisibilityTimeout: 6 * timeout,
        MessageRetentionPeriod: 12 * 3600, // below orphan cleanup's default age (1 day)
        SqsManagedSseEnabled: true,
        RedrivePolicy: { deadLetterTargetArn: arnOf(t.commitDeadLetters), maxReceiveCount: 5 },
      })
      expect(resources[idOf(t.commitDeadLetters)].Properties).toEqual({ FifoQueue: true, MessageRetentionPeriod: 14 * 86400, SqsManagedSseEnabled: true })
    }
    expect(new Set(stack.tables.map((t) => idOf(t.commitQueue))).size).toBe(2)
  })

  it('has a committer fed by its queue: batch 10, partial batch responses, maxConcurrency 2, no reserved concurrency', () => {
    for (const [name, timeout, memory] of [['orders', 30, 2048], ['plain', 60, 1024]] as const) {
      const t = table(name)
      const fn = resources[idOf(t.committer.fn)]
      expect(fn.Properties).toMatchObject({ Timeout: timeout, MemorySize: memory, Description: `Folds the commit messages of table '${name}' into snapshots` })
      expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined()
      expect(fn.Properties.Environment.Variables.STRATA_TABLE).toBe(name)
      expect(fn.DependsOn).toContain(idOf(t.created))
      const esms = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && r.Properties.FunctionName.Ref === idOf(t.committer.fn))
      expect(esms.map((r) => r.Properties)).toEqual([
        { FunctionName: { Ref: idOf(t.committer.fn) }, EventSourceArn: arnOf(t.commitQueue), BatchSize: 10, FunctionResponseTypes: ['ReportBatchItemFailures'], ScalingConfig: { MaximumConcurrency: 2 } },
      ])
    }
  })

  it("gives writer, compactor, committer and maintenance the table's commit queue URL in STRATA_TABLES", () => {
    expect(strataTables(stack.writer.fn)).toEqual({ orders: entryOf('orders'), plain: entryOf('plain') })
    for (const name of ['orders', 'plain']) {
      const t = table(name)
      for (const fn of [t.compactor.fn, t.committer.fn, t.maintenance.fn]) expect(strataTables(fn)).toEqual({ [name]: entryOf(name) })
    }
    expect(strataTables(stack.reader.fn)).toEqual({ orders: { uri: entryOf('orders').uri }, plain: { uri: entryOf('plain').uri } })
  })

  it('tells writer and compactors to give up waiting for a receipt 10 s before their own timeout', () => {
    const wait = (fn: { node: unknown }) => resources[idOf(fn as never)].Properties.Environment.Variables.STRATA_COMMIT_TIMEOUT_MS
    const timeoutOf = (fn: { node: unknown }) => resources[idOf(fn as never)].Properties.Timeout as number
    for (const fn of [stack.writer.fn, ...stack.tables.map((t) => t.compactor.fn)]) expect(wait(fn)).toBe(String((timeoutOf(fn) - 10) * 1000))
    for (const t of stack.tables) expect(wait(t.committer.fn)).toBeUndefined()
  })
})

describe('permissions of the commit path', () => {
  it('the committer consumes its own queue (ChangeMessageVisibility included) and sends only to it (forwarding its batch while another invocation holds the lease) and to the commit feed', () => {
    const feed = stack.feed!.queue
    for (const t of stack.tables) {
      expect(sqsActionsOn(t.committer.role, t.commitQueue)).toEqual(['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:ReceiveMessage', 'sqs:SendMessage'])
      for (const other of stack.tables.filter((x) => x !== t)) expect(sqsActionsOn(t.committer.role, other.commitQueue)).toEqual([])
      // the feed (on by default): it may only publish there (test/cdk-feed.test.ts has the rest)
      expect(sqsActionsOn(t.committer.role, feed)).toEqual(['sqs:SendMessage'])
      const sqs = statementsOf(t.committer.role).filter((st) => actions(st).some((a) => a.startsWith('sqs:')))
      const allowed = [JSON.stringify(arnOf(t.commitQueue)), JSON.stringify(arnOf(feed))]
      for (const r of sqs.flatMap(resourcesOf)) expect(allowed).toContain(JSON.stringify(r))
    }
  })

  it("the committer reads its table, writes manifests, snapshots, sidecars, receipts and its lease, deletes spilled bodies, lost-race manifests and its lease, never the schema", () => {
    for (const t of stack.tables) {
      const p = `/tables/${t.name}/`
      expect(s3Objects(t.committer.role)).toEqual({
        's3:GetObject': [`${p}*`],
        's3:PutObject': [`${p}_strata/commit-receipts/*`, `${p}_strata/committer-lease.json`, `${p}_strata/folded-commits/*`, `${p}manifest/*`, `${p}snapshot/*`],
        's3:DeleteObject': [`${p}_strata/commit-messages/*`, `${p}_strata/committer-lease.json`, `${p}manifest/*`],
      })
      const deny = statementsOf(t.committer.role).filter((st) => st.Effect === 'Deny')
      expect(deny.map((st) => ({ actions: actions(st), keys: resourcesOf(st).map((r) => r['Fn::Join'][1][1]) }))).toEqual([{ actions: ['s3:DeleteObject', 's3:PutObject'], keys: [`${p}schema/*`] }])
    }
  })

  it('writers and compactors may only send to a commit queue', () => {
    for (const t of stack.tables) {
      expect(sqsActionsOn(stack.writer.role, t.commitQueue)).toEqual(['sqs:SendMessage'])
      expect(sqsActionsOn(t.compactor.role, t.commitQueue)).toEqual(['sqs:SendMessage'])
      for (const other of stack.tables.filter((x) => x !== t)) expect(sqsActionsOn(t.compactor.role, other.commitQueue)).toEqual([])
      expect(sqsActionsOn(t.maintenance.role, t.commitQueue)).toEqual([])
      expect(sqsActionsOn(stack.reader.role, t.commitQueue)).toEqual([])
    }
  })

  it("the writer reads and deletes receipts (deleting nothing else), and may spill bodies; the compactor's table prefix covers both", () => {
    const objects = s3Objects(stack.writer.role)
    expect(objects['s3:DeleteObject']).toEqual(['/tables/orders/_strata/commit-receipts/*', '/tables/plain/_strata/commit-receipts/*'])
    expect(objects['s3:GetObject']).toEqual(['/tables/orders/*', '/tables/plain/*'])
    expect(objects['s3:PutObject']).toEqual(['/rejects/*', '/tables/orders/*', '/tables/plain/*'])
    for (const t of stack.tables) {
      const p = [`/tables/${t.name}/*`]
      expect(s3Objects(t.compactor.role)).toEqual({ 's3:GetObject': p, 's3:PutObject': p, 's3:DeleteObject': p })
    }
  })
})

describe('receipts', () => {
  it('left-behind receipts expire after a day, per table, and nothing else of the table does', () => {
    const rules = resources[idOf(stack.storage.bucket)].Properties.LifecycleConfiguration.Rules as { Prefix?: string }[]
    for (const name of ['orders', 'plain']) {
      expect(rules).toContainEqual({ Id: `expire-commit-receipts-${name}`, Prefix: `tables/${name}/_strata/commit-receipts/`, ExpirationInDays: 1, Status: 'Enabled' })
    }
    expect(rules.filter((r) => r.Prefix?.startsWith('tables/')).map((r) => r.Prefix).sort()).toEqual(['tables/orders/_strata/commit-receipts/', 'tables/plain/_strata/commit-receipts/'])
  })
})

describe('alarms and dashboard of the commit path', () => {
  const alarms = () => Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm').map((r) => r.Properties)
  const on = (namespace: string, metric: string, dimension: { node: { defaultChild?: unknown } }) =>
    alarms().filter((p) => p.Namespace === namespace && p.MetricName === metric && JSON.stringify(p.Dimensions[0].Value).includes(`"${idOf(dimension)}"`))

  it("alarm on a message in the commit DLQ, on the oldest commit message past the configured age, and on committer errors", () => {
    for (const [name, age] of [['orders', 120], ['plain', 60]] as const) {
      const t = table(name)
      expect(on('AWS/SQS', 'ApproximateNumberOfMessagesVisible', t.commitDeadLetters)).toEqual([
        expect.objectContaining({ Statistic: 'Maximum', Period: 300, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' }),
      ])
      expect(on('AWS/SQS', 'ApproximateAgeOfOldestMessage', t.commitQueue)).toEqual([
        expect.objectContaining({ Statistic: 'Maximum', Period: 60, Threshold: age, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' }),
      ])
      expect(on('AWS/Lambda', 'Errors', t.committer.fn)).toEqual([
        expect.objectContaining({ Statistic: 'Sum', Period: 300, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' }),
      ])
      expect(on('AWS/SQS', 'ApproximateAgeOfOldestMessage', t.commitQueue)[0].AlarmDescription).toContain(`more than ${age} s`)
    }
  })

  it('alarm when a committer took the committer lease over before it expired (CommitterLeaseOverridden)', () => {
    for (const name of ['orders', 'plain']) {
      const overridden = alarms().filter((p) => p.Namespace === 'Strata' && p.MetricName === 'CommitterLeaseOverridden' && p.Dimensions.some((d: { Name: string; Value: string }) => d.Name === 'table' && d.Value === name))
      expect(overridden).toEqual([
        expect.objectContaining({
          Dimensions: expect.arrayContaining([{ Name: 'function', Value: 'committer' }, { Name: 'service', Value: 'strata' }]),
          Statistic: 'Sum',
          Period: 300,
          Threshold: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          EvaluationPeriods: 1,
          TreatMissingData: 'notBreaching',
        }),
      ])
      expect(overridden[0].AlarmDescription).toContain('Runbook: the committer lease was overridden')
    }
  })

  it('the dashboard shows the commit queues, the commit DLQs and the committers', () => {
    const [dash] = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard')
    const body = JSON.stringify(dash.Properties.DashboardBody)
    for (const title of ['Commit queue (messages, max)', 'Oldest commit message (s)', 'Committer duration (ms)']) expect(body).toContain(title)
    for (const t of stack.tables) {
      for (const id of [idOf(t.commitQueue), idOf(t.commitDeadLetters), idOf(t.committer.fn)]) expect(body, id).toContain(id)
    }
  })
})

describe('cdk-nag and config', () => {
  it('passes cdk-nag', () => {
    const report = new AwsSolutionsChecks(app).validateScope(app)
    expect(report.violations.map((v) => v.ruleName)).toEqual([])
    expect(() => app.synth()).not.toThrow()
  })

  it('defaults: 1024 MB, 60 s, commit age alarm at 60 s', () => {
    const cfg = parseDeployConfig({ tables: [{ name: 't', schema }] })
    expect(cfg.tables[0].committer).toEqual({ memoryMb: 1024, timeoutSeconds: 60 })
    expect(cfg.tables[0].alarms.commitQueueAgeSeconds).toBe(60)
  })

  it('refuses committer.enabled, whatever its value, naming the field and why', () => {
    for (const value of [true, false, 'yes']) {
      const parse = () => parseDeployConfig({ tables: [{ name: 't', schema, committer: { enabled: value } }] }, 'cfg')
      expect(parse).toThrow(DeployConfigError)
      expect(parse).toThrow(
        `cfg: tables[0].committer.enabled: invalid value ${JSON.stringify(value)}, expected no value: the key was removed, every table now commits through its committer (its commit queue and committer function are always deployed); delete the key`,
      )
    }
  })

  it('validates the committer settings and the commit age limit like the others', () => {
    const bad = (extra: Record<string, unknown>) => () => parseDeployConfig({ tables: [{ name: 't', schema, ...extra }] }, 'cfg')
    expect(bad({ committer: { timeoutSeconds: 901 } })).toThrow('cfg: tables[0].committer.timeoutSeconds: invalid value 901, expected an integer in 1..900')
    expect(bad({ committer: { concurrency: 1 } })).toThrow(`cfg: unknown key 'tables[0].committer.concurrency'; expected one of memoryMb, timeoutSeconds`)
    expect(bad({ alarms: { commitQueueAgeSeconds: 0 } })).toThrow('cfg: tables[0].alarms.commitQueueAgeSeconds: invalid value 0, expected an integer in 1..43200')
    expect(bad({ alarms: { commitQueueAgeSeconds: 43201 } })).toThrow('cfg: tables[0].alarms.commitQueueAgeSeconds: invalid value 43201, expected an integer in 1..43200')
  })
})
