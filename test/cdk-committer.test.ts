// The batching committer in the CDK stack, behind the per-table `committer.enabled` flag:
// a commit FIFO queue with its FIFO DLQ and a committer function fed by it (batch 10,
// partial batch responses), scoped to its table, only for tables that ask for it; cdk-nag
// has nothing to say about it. Bundling is skipped (cdk-bundle.test.ts bundles handlers).

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { App, type CfnElement } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../cdk/app.ts'
import { parseDeployConfig } from '../cdk/config.ts'
import { logicalIdOf } from '../cdk/nag.ts'
import type { StrataStack } from '../cdk/stack.ts'

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
    { name: 'orders', schema, committer: { enabled: true, timeoutSeconds: 30 } },
    { name: 'plain', schema },
  ],
}

let app: App
let stack: StrataStack
let resources: Record<string, { Type: string; Properties: Record<string, any> }>
const idOf = (c: { node: { defaultChild?: unknown } }) => logicalIdOf(c.node.defaultChild as CfnElement)

beforeAll(() => {
  app = new App({ context: { ...CDK_CONTEXT, strata: CONFIG, 'aws:cdk:bundling-stacks': [] } })
  stack = buildApp(app).stack
  resources = Template.fromStack(stack).toJSON().Resources
}, 60_000)

describe('committer.enabled', () => {
  it('gives the table a commit FIFO queue, its DLQ and a committer fed by it', () => {
    const t = stack.tables.find((x) => x.name === 'orders')!
    expect(t.commitQueue && t.commitDeadLetters && t.committer).toBeTruthy()
    const q = resources[idOf(t.commitQueue!)].Properties
    expect(q.FifoQueue).toBe(true)
    expect(q.SqsManagedSseEnabled).toBe(true)
    expect(q.VisibilityTimeout).toBeGreaterThanOrEqual(30)
    expect(q.MessageRetentionPeriod).toBeLessThan(24 * 3600) // below orphan cleanup's default age
    expect(q.RedrivePolicy.deadLetterTargetArn).toEqual({ 'Fn::GetAtt': [idOf(t.commitDeadLetters!), 'Arn'] })
    expect(resources[idOf(t.commitDeadLetters!)].Properties.FifoQueue).toBe(true)
    const fn = resources[idOf(t.committer!.fn)].Properties
    expect(fn.Timeout).toBe(30)
    expect(fn.Environment.Variables.STRATA_TABLE).toBe('orders')
    const esm = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping').map((r) => r.Properties).find((p) => p.FunctionName.Ref === idOf(t.committer!.fn))!
    expect(esm).toMatchObject({ BatchSize: 10, FunctionResponseTypes: ['ReportBatchItemFailures'], EventSourceArn: { 'Fn::GetAtt': [idOf(t.commitQueue!), 'Arn'] } })
    // one table's objects only
    const policy = t.committer!.role.node.findChild('DefaultPolicy') as { node: { defaultChild?: unknown } }
    const statements = resources[idOf(policy)].Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: any }[]
    const objectKeys = statements.filter((s) => s.Effect === 'Allow' && [s.Action].flat().includes('s3:PutObject')).flatMap((s) => [s.Resource].flat()).map((r) => r['Fn::Join']?.[1]?.[1])
    expect(objectKeys).toEqual(['/tables/orders/*'])
  })

  it('is off by default: no queue or committer for other tables', () => {
    const t = stack.tables.find((x) => x.name === 'plain')!
    expect([t.commitQueue, t.commitDeadLetters, t.committer]).toEqual([undefined, undefined, undefined])
    const committers = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Description?.startsWith('Folds the commit messages'))
    expect(committers).toHaveLength(1)
  })

  it('passes cdk-nag', () => {
    expect(() => app.synth()).not.toThrow()
  })

  it('rejects a non-boolean flag, naming it', () => {
    expect(() => parseDeployConfig({ tables: [{ name: 't', schema, committer: { enabled: 'yes' } }] }, 'cfg')).toThrow(`cfg: tables[0].committer.enabled: invalid value "yes", expected true or false`)
  })
})
