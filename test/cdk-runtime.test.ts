// The deployed runtime's concurrency and alarms, on synthesized templates: the compactor
// mapping of compaction.task-threads 1, 3 and -1 (reserved concurrency, event-source
// maxConcurrency, the -1 cap and its config errors), the writer's default cap, the compactor's
// timeout and its queue's visibility timeout, ChangeMessageVisibility on the compactor's
// queue; alarms on every function, DLQ, the ingest age and freshness (missing data
// breaching); the alarm topic the stack creates (KMS-encrypted, TLS only, CloudWatch allowed)
// or the one it is given, the e-mail subscription; the dashboard; cdk-nag. Bundling is
// skipped (cdk-bundle.test.ts bundles the handlers).

import { AwsSolutionsChecks } from 'cdk-nag'
import { beforeAll, describe, expect, it } from 'vitest'
import { type Synth, idOf, ofType, synth } from './helpers/cdk.ts'
import { DeployConfigError, parseDeployConfig } from '../cdk/config.ts'


const schema = (taskThreads: string) => ({
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '8', 'deletion-vectors.enabled': 'true', 'compaction.task-threads': taskThreads },
})

/** Default ingest and alarms: the stack creates its topic, with an e-mail subscription. */
const CONFIG = {
  tables: [
    { name: 'one', schema: schema('1') },
    { name: 'three', schema: schema('3') },
    { name: 'unbounded', schema: schema('-1') },
    { name: 'capped', schema: schema('-1'), compactor: { maxConcurrency: 20, reservedConcurrency: 25, timeoutSeconds: 300 } },
  ],
  alarms: { email: 'ops@example.com' },
}
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:ops-alarms'
/** A given topic and tuned ingest. */
const GIVEN_TOPIC = {
  stackName: 'StrataGivenTopic',
  tables: [{ name: 'events', schema: schema('2') }],
  ingest: { type: 'sqs', maxConcurrency: 16 },
  alarms: { topicArn: TOPIC_ARN, ingestAgeSeconds: 900 },
}
const KINESIS = {
  stackName: 'StrataKinesisRuntime',
  tables: [{ name: 'events', schema: schema('1') }],
  ingest: { type: 'kinesis', streamArn: 'arn:aws:kinesis:eu-west-1:123456789012:stream/events', parallelizationFactor: 3 },
  alarms: { ingestAgeSeconds: 120 },
}

const alarms = (s: Synth): Record<string, any>[] => ofType(s, 'AWS::CloudWatch::Alarm').map(([id, r]) => ({ id, ...r.Properties }))
/** The resource an alarm's first dimension points at (a Ref or a GetAtt), or its literal value. */
const dimensionTarget = (a: Record<string, any>): string => {
  const v = a.Dimensions?.[0]?.Value
  return v?.Ref ?? v?.['Fn::GetAtt']?.[0] ?? v
}
const table = (s: Synth, name: string) => s.stack.tables.find((t) => t.name === name)!
const compactorMapping = (s: Synth, name: string) => {
  const t = table(s, name)
  const fn = s.resources[idOf(t.compactor.fn)].Properties
  const esm = ofType(s, 'AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties).find((p) => p.FunctionName.Ref === idOf(t.compactor.fn))!
  return { reserved: fn.ReservedConcurrentExecutions, maxConcurrency: esm.ScalingConfig?.MaximumConcurrency }
}
const statementsOf = (s: Synth, role: { node: { findChild(id: string): unknown } }) => {
  const policy = role.node.findChild('DefaultPolicy') as { node: { defaultChild?: unknown } }
  return s.resources[idOf(policy)].Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown }[]
}
const bad = (cfg: unknown): string => {
  try {
    parseDeployConfig(cfg, 'cfg')
  } catch (e) {
    expect(e).toBeInstanceOf(DeployConfigError)
    return (e as Error).message
  }
  throw new Error('expected the config to be refused')
}

let main: Synth
let given: Synth
let kinesis: Synth

beforeAll(() => {
  main = synth(CONFIG)
  given = synth(GIVEN_TOPIC)
  kinesis = synth(KINESIS)
}, 120_000)

describe('compaction.task-threads → compactor concurrency, nothing relying on throttles', () => {
  it('1 → reserved concurrency 1, event-source maxConcurrency 2 (AWS minimum), jobs in one message group per table', () => {
    expect(compactorMapping(main, 'one')).toEqual({ reserved: 1, maxConcurrency: 2 })
    expect(table(main, 'one').concurrency.messageGroup).toBe('table')
  })

  it('3 → reserved concurrency 3 and event-source maxConcurrency 3, one message group per bucket', () => {
    expect(compactorMapping(main, 'three')).toEqual({ reserved: 3, maxConcurrency: 3 })
    expect(table(main, 'three').concurrency.messageGroup).toBe('bucket')
  })

  it('-1 → the event source capped at compactor.maxConcurrency (default 100), reserved concurrency only when configured', () => {
    expect(compactorMapping(main, 'unbounded')).toEqual({ reserved: undefined, maxConcurrency: 100 })
    expect(compactorMapping(main, 'capped')).toEqual({ reserved: 25, maxConcurrency: 20 })
    expect(table(main, 'unbounded').concurrency.messageGroup).toBe('bucket')
  })

  it('every compactor mapping has a maxConcurrency no higher than its reserved concurrency', () => {
    for (const t of main.stack.tables) {
      const { reserved, maxConcurrency } = compactorMapping(main, t.name)
      expect(maxConcurrency, t.name).toBeGreaterThanOrEqual(2)
      // task-threads 1: 2 > 1 is safe only because one message group keeps one batch in flight
      if (reserved !== undefined && t.concurrency.messageGroup === 'bucket') expect(maxConcurrency, t.name).toBeLessThanOrEqual(reserved)
    }
  })

  it('the writer and the compactor are told the task-threads in force (STRATA_TABLES taskThreads)', () => {
    // STRATA_TABLES with each {Ref: X} written as <X>, parsed
    const render = (v: any): string => (typeof v === 'string' ? v : v.Ref ? `<${v.Ref}>` : v['Fn::Join'][1].map(render).join(v['Fn::Join'][0]))
    const tablesOf = (fn: { node: { defaultChild?: unknown } }) => JSON.parse(render(main.resources[idOf(fn)].Properties.Environment.Variables.STRATA_TABLES))
    const writer = tablesOf(main.stack.writer.fn)
    for (const [name, threads] of [['one', 1], ['three', 3], ['unbounded', -1], ['capped', -1]] as const) {
      expect(writer[name].taskThreads, name).toBe(threads)
      expect(tablesOf(table(main, name).compactor.fn)[name].taskThreads, name).toBe(threads)
    }
  })

  it('compactor.maxConcurrency is refused unless task-threads is -1, naming the field, the value and what was expected', () => {
    const t = (threads: string, compactor: Record<string, unknown>) => ({ tables: [{ name: 't', schema: schema(threads), compactor }] })
    expect(bad(t('3', { maxConcurrency: 10 }))).toBe(
      "cfg: tables[0].compactor.maxConcurrency: invalid value 10, expected no value: it applies only when compaction.task-threads is -1 (here 3, where the event source's maxConcurrency is task-threads, 3)",
    )
    expect(bad(t('1', { maxConcurrency: 10 }))).toBe(
      "cfg: tables[0].compactor.maxConcurrency: invalid value 10, expected no value: it applies only when compaction.task-threads is -1 (here 1, where the event source's maxConcurrency is 2, with one message group per table)",
    )
    expect(bad(t('-1', { maxConcurrency: 1 }))).toBe('cfg: tables[0].compactor.maxConcurrency: invalid value 1, expected an integer in 2..1000')
    expect(bad(t('-1', { maxConcurrency: 1001 }))).toBe('cfg: tables[0].compactor.maxConcurrency: invalid value 1001, expected an integer in 2..1000')
    expect(bad(t('-1', { maxConcurrency: 'lots' }))).toBe('cfg: tables[0].compactor.maxConcurrency: invalid value "lots", expected an integer in 2..1000')
  })

  it('reserved concurrency at -1 must cover the cap; at 1 it is refused', () => {
    const t = (threads: string, compactor: Record<string, unknown>) => ({ tables: [{ name: 't', schema: schema(threads), compactor }] })
    expect(bad(t('-1', { maxConcurrency: 40, reservedConcurrency: 39 }))).toBe(
      "cfg: tables[0].compactor.reservedConcurrency: invalid value 39, expected at least tables[0].compactor.maxConcurrency (40), or the event source's pollers are throttled",
    )
    expect(bad(t('-1', { reservedConcurrency: 50 }))).toMatch(/reservedConcurrency: invalid value 50, expected at least tables\[0\]\.compactor\.maxConcurrency \(100\)/)
    expect(bad(t('1', { reservedConcurrency: 2 }))).toMatch(/reservedConcurrency: invalid value 2, expected no value: it applies only when compaction.task-threads is N >= 2 or -1/)
    expect(parseDeployConfig(t('-1', { maxConcurrency: 40, reservedConcurrency: 40 })).tables[0].compactor).toMatchObject({ maxConcurrency: 40, reservedConcurrency: 40 })
    expect(parseDeployConfig(t('3', {})).tables[0].compactor.maxConcurrency).toBeUndefined()
  })
})

describe('timeouts and the compaction queue', () => {
  it('the compactor times out after 120 s by default and its queue hides a job for 6 × that (720 s)', () => {
    for (const name of ['one', 'three', 'unbounded']) {
      const t = table(main, name)
      expect(main.resources[idOf(t.compactor.fn)].Properties.Timeout, name).toBe(120)
      expect(main.resources[idOf(t.queue)].Properties.VisibilityTimeout, name).toBe(720)
      expect(main.resources[idOf(t.compactor.fn)].Properties.Environment.Variables.STRATA_COMMIT_TIMEOUT_MS, name).toBe('110000')
    }
    const capped = table(main, 'capped')
    expect(main.resources[idOf(capped.compactor.fn)].Properties.Timeout).toBe(300)
    expect(main.resources[idOf(capped.queue)].Properties.VisibilityTimeout).toBe(1800)
  })

  it("the compactor may ChangeMessageVisibility on its own compaction queue, and on no other table's", () => {
    for (const t of main.stack.tables) {
      const on = (queue: { node: { defaultChild?: unknown } }) =>
        statementsOf(main, t.compactor.role)
          .filter((st) => st.Effect === 'Allow' && JSON.stringify(st.Resource) === JSON.stringify({ 'Fn::GetAtt': [idOf(queue), 'Arn'] }))
          .flatMap((st) => [st.Action].flat())
      expect(on(t.queue), t.name).toContain('sqs:ChangeMessageVisibility')
      expect(on(t.queue), t.name).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']))
      for (const other of main.stack.tables.filter((x) => x !== t)) expect(on(other.queue)).toEqual([])
    }
  })
})

describe('writer concurrency', () => {
  const writerMapping = (s: Synth) => ofType(s, 'AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties).find((p) => p.FunctionName.Ref === idOf(s.stack.writer.fn))!

  it('the SQS ingest event source is capped at 8 writers by default', () => {
    expect(writerMapping(main).ScalingConfig).toEqual({ MaximumConcurrency: 8 })
    expect(parseDeployConfig({ tables: [{ name: 't', schema: schema('1') }] }).ingest).toMatchObject({ type: 'sqs', maxConcurrency: 8 })
  })

  it('ingest.maxConcurrency still sets it, within 2..1000', () => {
    expect(writerMapping(given).ScalingConfig).toEqual({ MaximumConcurrency: 16 })
    expect(bad({ tables: [{ name: 't', schema: schema('1') }], ingest: { maxConcurrency: 1 } })).toBe('cfg: ingest.maxConcurrency: invalid value 1, expected an integer in 2..1000')
  })

  it('a Kinesis source has no cap of its own: shards × parallelizationFactor', () => {
    const p = writerMapping(kinesis)
    expect(p.ScalingConfig).toBeUndefined()
    expect(p.ParallelizationFactor).toBe(3)
  })
})

describe('alarms', () => {
  it('every function in the template has one Errors and one Throttles alarm (at least one in 5 minutes)', () => {
    for (const s of [main, given, kinesis]) {
      const fns = ofType(s, 'AWS::Lambda::Function').map(([id]) => id)
      expect(fns.length).toBe(3 + 3 * s.stack.tables.length)
      for (const metric of ['Errors', 'Throttles']) {
        const mine = alarms(s).filter((a) => a.Namespace === 'AWS/Lambda' && a.MetricName === metric)
        expect(mine.map(dimensionTarget).sort(), metric).toEqual([...fns].sort())
        for (const a of mine) expect(a).toMatchObject({ Statistic: 'Sum', Period: 300, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' })
      }
    }
  })

  it("each table's maintenance failure is alarmed and its description says what stops", () => {
    for (const t of main.stack.tables) {
      const a = alarms(main).filter((x) => x.MetricName === 'Errors' && dimensionTarget(x) === idOf(t.maintenance.fn))
      expect(a).toHaveLength(1)
      expect(a[0].AlarmDescription).toContain(`maintenance ${t.name}: the maintenance run failed`)
    }
  })

  it('the freshness alarm fires when FreshnessLag stops arriving: missing data is breaching, over two maintenance periods', () => {
    for (const s of [main, given, kinesis]) {
      const lag = alarms(s).filter((a) => a.MetricName === 'FreshnessLag')
      expect(lag).toHaveLength(s.stack.tables.length)
      for (const a of lag) {
        expect(a).toMatchObject({ Namespace: 'Strata', TreatMissingData: 'breaching', EvaluationPeriods: 2, DatapointsToAlarm: 2, Period: 15 * 60, Statistic: 'Maximum' })
        expect(a.Dimensions).toContainEqual({ Name: 'function', Value: 'maintenance' })
      }
    }
  })

  it('the ingest age: the oldest ingest message (SQS), or the writer iterator age (Kinesis), over the configured threshold', () => {
    const sqsAge = (s: Synth) => alarms(s).filter((a) => a.MetricName === 'ApproximateAgeOfOldestMessage' && dimensionTarget(a) === idOf(s.stack.ingest.queue!))
    expect(sqsAge(main)).toEqual([expect.objectContaining({ Namespace: 'AWS/SQS', Threshold: 300, Period: 60, Statistic: 'Maximum', ComparisonOperator: 'GreaterThanThreshold' })])
    expect(sqsAge(given)).toEqual([expect.objectContaining({ Threshold: 900 })])
    const iterator = alarms(kinesis).filter((a) => a.MetricName === 'IteratorAge')
    expect(iterator).toEqual([expect.objectContaining({ Namespace: 'AWS/Lambda', Threshold: 120_000, Statistic: 'Maximum', ComparisonOperator: 'GreaterThanThreshold' })])
    expect(dimensionTarget(iterator[0])).toBe(idOf(kinesis.stack.writer.fn))
    expect(alarms(kinesis).filter((a) => a.MetricName === 'ApproximateAgeOfOldestMessage').map(dimensionTarget)).toEqual([idOf(kinesis.stack.tables[0].commitQueue)])
    expect(bad({ tables: [{ name: 't', schema: schema('1') }], alarms: { ingestAgeSeconds: 0 } })).toBe('cfg: alarms.ingestAgeSeconds: invalid value 0, expected an integer in 1..31536000')
  })

  it('every DLQ in the template — each redrive target and the Kinesis on-failure queue — has a depth alarm', () => {
    for (const s of [main, given, kinesis]) {
      const dlqs = new Set<string>()
      for (const [, q] of ofType(s, 'AWS::SQS::Queue')) if (q.Properties.RedrivePolicy) dlqs.add(q.Properties.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0])
      for (const [, m] of ofType(s, 'AWS::Lambda::EventSourceMapping')) {
        const onFailure = m.Properties.DestinationConfig?.OnFailure?.Destination
        if (onFailure) dlqs.add(onFailure['Fn::GetAtt'][0])
      }
      expect(dlqs.size).toBe(1 + 2 * s.stack.tables.length)
      const depth = alarms(s).filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible')
      expect(depth.map(dimensionTarget).sort()).toEqual([...dlqs].sort())
      for (const a of depth) expect(a).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', Statistic: 'Maximum' })
    }
  })

  it('every alarm notifies the topic on ALARM and on OK', () => {
    const created = { Ref: idOf(main.stack.monitoring.createdTopic!) }
    for (const a of alarms(main)) {
      expect(a.AlarmActions, a.id).toEqual([created])
      expect(a.OKActions, a.id).toEqual([created])
    }
    for (const a of alarms(given)) {
      expect(a.AlarmActions, a.id).toEqual([TOPIC_ARN])
      expect(a.OKActions, a.id).toEqual([TOPIC_ARN])
    }
  })
})

describe('the alarm topic', () => {
  it('is created when no topicArn is given: encrypted with a rotated customer-managed key that CloudWatch may use', () => {
    const topics = ofType(main, 'AWS::SNS::Topic')
    expect(topics).toHaveLength(1)
    const keyRef = topics[0][1].Properties.KmsMasterKeyId
    expect(keyRef['Fn::GetAtt'][1]).toBe('Arn')
    const key = main.resources[keyRef['Fn::GetAtt'][0]]
    expect(key.Type).toBe('AWS::KMS::Key')
    expect(key.Properties.EnableKeyRotation).toBe(true)
    expect(key.Properties.KeyPolicy.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'] }),
    )
    // not the AWS-managed SNS key, which CloudWatch cannot use
    expect(JSON.stringify(topics[0][1].Properties)).not.toContain('alias/aws/sns')
  })

  it('refuses publishing without TLS and lets only this account’s CloudWatch alarms publish', () => {
    const [[, policy]] = ofType(main, 'AWS::SNS::TopicPolicy')
    const topicRef = { Ref: idOf(main.stack.monitoring.createdTopic!) }
    expect(policy.Properties.Topics).toEqual([topicRef])
    const statements = policy.Properties.PolicyDocument.Statement
    expect(statements).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Principal: '*', Action: 'sns:Publish', Resource: topicRef, Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    )
    const allow = statements.find((st: any) => st.Effect === 'Allow')
    expect(allow).toMatchObject({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: 'sns:Publish', Resource: topicRef })
    expect(allow.Condition.StringEquals).toEqual({ 'aws:SourceAccount': { Ref: 'AWS::AccountId' } })
    expect(JSON.stringify(allow.Condition.ArnLike['aws:SourceArn'])).toContain(':alarm:*')
  })

  it('subscribes alarms.email to the created topic; none without it', () => {
    expect(ofType(main, 'AWS::SNS::Subscription').map(([, r]) => r.Properties)).toEqual([
      { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: { Ref: idOf(main.stack.monitoring.createdTopic!) } },
    ])
    expect(ofType(kinesis, 'AWS::SNS::Topic')).toHaveLength(1)
    expect(ofType(kinesis, 'AWS::SNS::Subscription')).toEqual([])
  })

  it('is not created when alarms.topicArn names one: no topic, key or subscription of the stack', () => {
    expect(given.stack.monitoring.createdTopic).toBeUndefined()
    for (const type of ['AWS::SNS::Topic', 'AWS::SNS::TopicPolicy', 'AWS::SNS::Subscription', 'AWS::KMS::Key']) expect(ofType(given, type), type).toEqual([])
  })

  it('validates alarms.email, and refuses it next to alarms.topicArn', () => {
    const t = [{ name: 't', schema: schema('1') }]
    expect(parseDeployConfig({ tables: t, alarms: { email: 'a.b+c@x-y.example.org' } }).alarms.email).toBe('a.b+c@x-y.example.org')
    for (const email of ['ops', 'ops@localhost', 'a@b.com, c@d.com', '<ops@example.com>', 7]) {
      expect(bad({ tables: t, alarms: { email } })).toBe(`cfg: alarms.email: invalid value ${JSON.stringify(email)}, expected one e-mail address like ops@example.com`)
    }
    expect(bad({ tables: t, alarms: { email: 'ops@example.com', topicArn: TOPIC_ARN } })).toMatch(/^cfg: alarms.email: invalid value "ops@example.com", expected no value when alarms.topicArn is set/)
  })
})

describe('dashboard', () => {
  const body = (s: Synth) => JSON.stringify(ofType(s, 'AWS::CloudWatch::Dashboard')[0][1].Properties.DashboardBody)

  it('shows every alarm in an alarm status widget', () => {
    for (const s of [main, given, kinesis]) {
      const b = body(s)
      expect(b).toContain('\\"type\\":\\"alarm\\"')
      for (const a of alarms(s)) expect(b, a.id).toContain(`{"Fn::GetAtt":["${a.id}","Arn"]}`)
    }
  })

  it('graphs errors, throttles and invocations of every function, maintenance failures and the ingest age', () => {
    const b = body(main)
    for (const [id] of ofType(main, 'AWS::Lambda::Function')) expect(b, id).toContain(`{"Ref":"${id}"}`)
    for (const m of ['Errors', 'Throttles', 'Invocations', 'MaintenanceErrors', 'ApproximateAgeOfOldestMessage', 'maintenance one']) expect(b, m).toContain(m)
    expect(body(kinesis)).toContain('IteratorAge')
  })

  it('splits the alarms over several status widgets past 100', () => {
    const many = synth({ stackName: 'StrataMany', tables: Array.from({ length: 9 }, (_, i) => ({ name: `t${i}`, schema: schema('2') })) })
    const n = alarms(many).length
    expect(n).toBe(1 + 1 + 2 * 3 + 9 * 13) // ingest DLQ + age, 3 stack functions × 2, per table 13 (with the commit feed's and the committer lease's)
    const b = body(many)
    expect(b).toContain(`Alarms (1–100 of ${n})`)
    expect(b).toContain(`Alarms (101–${n} of ${n})`)
    for (const a of alarms(many)) expect(b, a.id).toContain(`{"Fn::GetAtt":["${a.id}","Arn"]}`)
  }, 60_000)
})

describe('cdk-nag', () => {
  it('finds nothing unacknowledged with a created topic, a given topic or a Kinesis source', () => {
    for (const s of [main, given, kinesis]) {
      const report = new AwsSolutionsChecks(s.app).validateScope(s.app)
      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(' ')}`)).toEqual([])
    }
  })
})
