// What CloudWatch bills one table's deployment for, whatever its load: the alarms and
// dashboards of the CDK stack, synthesized for one table (bundling skipped), and the custom
// metrics the functions can publish (EMF: one metric per name and dimension set), counted
// from the functions' sources.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { buildApp } from '../../cdk/app.ts'

const ROOT = join(import.meta.dirname, '..', '..')

export interface CloudWatchCounts {
  alarms: number
  dashboards: number
  metrics: number
  /** metric names per function, as counted */
  metricsByFunction: Record<string, number>
}

/** One table (64 buckets, deletion vectors) behind an SQS ingest queue, everything else at its defaults. */
function oneTableConfig(): unknown {
  return {
    stackName: 'StrataCost',
    tables: [{ name: 'bench', schema: { fields: [{ name: 'id', type: 'BIGINT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], partitionKeys: [], options: { bucket: '64', 'deletion-vectors.enabled': 'true' } } }],
    ingest: { type: 'sqs' },
  }
}

function synthesized(): { alarms: number; dashboards: number } {
  const context = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')).context
  const outdir = mkdtempSync(join(tmpdir(), 'strata-cost-cdk-'))
  try {
    const app = new App({ outdir, context: { ...context, strata: oneTableConfig(), 'aws:cdk:bundling-stacks': [] } })
    const { stack } = buildApp(app)
    const resources = Object.values(Template.fromStack(stack).toJSON().Resources as Record<string, { Type: string }>)
    return { alarms: resources.filter((r) => r.Type === 'AWS::CloudWatch::Alarm').length, dashboards: resources.filter((r) => r.Type === 'AWS::CloudWatch::Dashboard').length }
  } finally {
    rmSync(outdir, { recursive: true, force: true })
  }
}

/** Distinct `addMetric('Name'` names of a source file; a templated name counts once per value the file lists. */
function metricNames(file: string): number {
  const src = readFileSync(join(ROOT, file), 'utf8')
  return new Set([...src.matchAll(/addMetric\(\s*['`]([^'`]+)['`]/g)].map((m) => m[1])).size
}

export function cloudWatchCounts(): CloudWatchCounts {
  // the writer publishes under {service, function} and, per table, {service, function, table}
  const metricsByFunction = {
    writer: 2 * metricNames('functions/writer.ts'),
    compactor: metricNames('functions/compactor.ts'),
    committer: metricNames('functions/committer.ts'),
    // the table metrics maintenance publishes from its summary, and `${what}Time` once per
    // step (Expire, Markers, Metrics, Sweep, Queue, Orphans), counted once above
    maintenance: metricNames('functions/maintenance.ts') + tableMetricKeys() + 6 - 1,
  }
  return { ...synthesized(), metrics: Object.values(metricsByFunction).reduce((n, k) => n + k, 0), metricsByFunction }
}

/** The fields of TableMetrics (lib/maintenance/table-metrics.ts), each one metric. */
function tableMetricKeys(): number {
  const src = readFileSync(join(ROOT, 'lib/maintenance/table-metrics.ts'), 'utf8')
  const body = /export interface TableMetrics \{([\s\S]*?)\n\}/.exec(src)?.[1] ?? ''
  return [...body.matchAll(/^\s+(\w+)\??:/gm)].length
}

if (import.meta.filename === process.argv[1]) console.log(cloudWatchCounts())
