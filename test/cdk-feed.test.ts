// The commit feed in the synthesized stack (cdk/constructs/feed.ts): on by default, one
// encrypted, TLS-only standard queue; each committer gets its URL and sqs:SendMessage on
// that queue and nothing else of it; no other function may send to it; `feed.enabled: false`
// removes it and the committers' variable; `feed.eventBus` adds an EventBridge Pipe from the
// queue to a bus (created, or given by ARN) with a role scoped to that queue and bus; bad
// feed config fails naming the key.

import { AwsSolutionsChecks } from 'cdk-nag'
import { beforeAll, describe, expect, it } from 'vitest'
import { parseDeployConfig } from '../cdk/config.ts'
import { type Synth, idOf, ofType, synth } from './helpers/cdk.ts'

const schema = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '2' },
}
const CONFIG = { tables: [{ name: 'orders', schema }, { name: 'page_views', schema }] }

type Statement = { Effect: string; Action: string | string[]; Resource: unknown }
const actions = (st: Statement) => (Array.isArray(st.Action) ? st.Action : [st.Action])
const resources = (st: Statement) => (Array.isArray(st.Resource) ? st.Resource : [st.Resource])

function statementsOf(s: Synth, role: { node: { findChild(id: string): unknown } }): Statement[] {
  const policy = role.node.findChild('DefaultPolicy') as { node: { defaultChild?: unknown } }
  return s.resources[idOf(policy)].Properties.PolicyDocument.Statement
}

let on: Synth
let off: Synth
let bus: Synth
let givenBus: Synth
const BUS_ARN = 'arn:aws:events:eu-west-1:123456789012:event-bus/commits'
beforeAll(() => {
  on = synth(CONFIG)
  off = synth({ ...CONFIG, feed: { enabled: false } })
  bus = synth({ ...CONFIG, stackName: 'StrataBus', feed: { eventBus: 'create' } })
  givenBus = synth({ ...CONFIG, stackName: 'StrataGivenBus', feed: { eventBus: BUS_ARN } })
}, 120_000)

describe('commit feed in the stack', () => {
  it('is one encrypted standard queue, its URL on every committer, SendMessage on it for committers only', () => {
    const feed = on.stack.feed!
    expect(feed).toBeDefined()
    const feedId = idOf(feed.queue)
    const q = on.resources[feedId]
    expect(q.Type).toBe('AWS::SQS::Queue')
    expect(q.Properties.FifoQueue).toBeUndefined()
    expect(q.Properties.SqsManagedSseEnabled).toBe(true)
    expect(q.Properties.MessageRetentionPeriod).toBe(4 * 86400)
    const isFeed = (r: unknown) => JSON.stringify(r) === JSON.stringify({ 'Fn::GetAtt': [feedId, 'Arn'] })
    for (const t of on.stack.tables) {
      const env = on.resources[idOf(t.committer.fn)].Properties.Environment.Variables
      expect(env.STRATA_FEED_QUEUE_URL).toEqual({ Ref: feedId })
      const grants = statementsOf(on, t.committer.role).filter((st) => resources(st).some(isFeed))
      expect(grants).toEqual([expect.objectContaining({ Effect: 'Allow', Action: 'sqs:SendMessage' })])
      expect(resources(grants[0])).toHaveLength(1)
    }
    // no other role names the feed queue
    const others = [on.stack.writer, on.stack.reader, on.stack.tableInit, ...on.stack.tables.flatMap((t) => [t.compactor, t.maintenance])]
    for (const f of others) expect(statementsOf(on, f.role).filter((st) => resources(st).some(isFeed)), f.node.id).toEqual([])
    const policy = ofType(on, 'AWS::SQS::QueuePolicy').find(([, r]) => r.Properties.Queues.some((x: { Ref: string }) => x.Ref === feedId))
    expect(policy![1].Properties.PolicyDocument.Statement).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }))
    const outputs = on.template.toJSON().Outputs
    expect(outputs.CommitFeedQueueUrl.Value).toEqual({ Ref: feedId })
    // committers send nothing but their commit queue and the feed
    for (const t of on.stack.tables) {
      const sends = statementsOf(on, t.committer.role).filter((st) => actions(st).includes('sqs:SendMessage'))
      expect(sends.flatMap(resources)).toHaveLength(2)
    }
  })

  it('per table, an alarm on the committer\'s FeedFailures', () => {
    const alarms = (s: Synth) => ofType(s, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties).filter((p) => p.MetricName === 'FeedFailures')
    expect(alarms(on).map((p) => p.Dimensions.find((d: { Name: string }) => d.Name === 'table').Value).sort()).toEqual(['orders', 'page_views'])
    for (const p of alarms(on)) expect(p).toMatchObject({ Namespace: 'Strata', Statistic: 'Sum', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' })
    expect(alarms(off)).toEqual([])
  })

  it('feed.enabled false: no feed queue, no variable, no grant', () => {
    expect(off.stack.feed).toBeUndefined()
    expect(ofType(off, 'AWS::SQS::Queue')).toHaveLength(ofType(on, 'AWS::SQS::Queue').length - 1)
    for (const t of off.stack.tables) {
      expect(off.resources[idOf(t.committer.fn)].Properties.Environment.Variables.STRATA_FEED_QUEUE_URL).toBeUndefined()
      expect(statementsOf(off, t.committer.role).filter((st) => actions(st).includes('sqs:SendMessage')).flatMap(resources)).toHaveLength(1)
    }
    expect(off.template.toJSON().Outputs.CommitFeedQueueUrl).toBeUndefined()
  })

  it('feed.eventBus: a pipe from the feed queue to the bus, whose role only consumes that queue and puts events on that bus', () => {
    expect(ofType(on, 'AWS::Pipes::Pipe')).toEqual([])
    for (const [s, busArn] of [[bus, { 'Fn::GetAtt': [idOf(bus.stack.feed!.bus! as never), 'Arn'] }], [givenBus, BUS_ARN]] as const) {
      const feed = s.stack.feed!
      const pipes = ofType(s, 'AWS::Pipes::Pipe')
      expect(pipes).toHaveLength(1)
      const p = pipes[0][1].Properties
      expect(p.Source).toEqual({ 'Fn::GetAtt': [idOf(feed.queue), 'Arn'] })
      expect(p.Target).toEqual(busArn)
      expect(p.TargetParameters).toEqual({ InputTemplate: '<$.body>', EventBridgeEventBusParameters: { Source: 'strata', DetailType: 'Strata commit' } })
      const roleId = p.RoleArn['Fn::GetAtt'][0]
      expect(s.resources[roleId].Properties.AssumeRolePolicyDocument.Statement[0].Principal).toEqual({ Service: 'pipes.amazonaws.com' })
      const policy = ofType(s, 'AWS::IAM::Policy').find(([, r]) => r.Properties.Roles.some((x: { Ref: string }) => x.Ref === roleId))![1]
      const statements = policy.Properties.PolicyDocument.Statement as Statement[]
      expect(statements.map((st) => [actions(st).sort(), resources(st)])).toEqual([
        [['sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage'], [{ 'Fn::GetAtt': [idOf(feed.queue), 'Arn'] }]],
        [['events:PutEvents'], [busArn]],
      ])
      const report = new AwsSolutionsChecks(s.app).validateScope(s.app)
      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(' ')}`)).toEqual([])
    }
    expect(ofType(bus, 'AWS::Events::EventBus')[0][1].Properties.Name).toBe('StrataBus-commits')
    expect(ofType(givenBus, 'AWS::Events::EventBus')).toEqual([])
    expect(bus.template.toJSON().Outputs.CommitFeedEventBusArn).toBeDefined()
  })

  it('bad feed config is refused naming the key', () => {
    expect(() => parseDeployConfig({ ...CONFIG, feed: { eventBus: 'arn:aws:sqs:eu-west-1:123456789012:q' } })).toThrow('feed.eventBus: invalid value "arn:aws:sqs:eu-west-1:123456789012:q", expected "create"')
    expect(() => parseDeployConfig({ ...CONFIG, feed: { enabled: false, eventBus: 'create' } })).toThrow('feed.eventBus: invalid value "create", expected no value when feed.enabled is false')
    expect(() => parseDeployConfig({ ...CONFIG, feed: { enabled: 'yes' } })).toThrow('feed.enabled: invalid value "yes", expected true or false')
    expect(() => parseDeployConfig({ ...CONFIG, feed: { retentionDays: 30 } })).toThrow('feed.retentionDays: invalid value 30, expected an integer in 1..14')
    expect(() => parseDeployConfig({ ...CONFIG, feed: { queue: 'x' } })).toThrow('feed')
    expect(parseDeployConfig({ ...CONFIG, feed: { retentionDays: 2 } }).feed).toEqual({ enabled: true, retentionDays: 2 })
  })
})
