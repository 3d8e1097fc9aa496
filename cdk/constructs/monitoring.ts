// Alarms and the dashboard. Alarms: every DLQ not empty (a message there outlived its
// retries); per table freshness lag over its limit and level-0 file count past its stop
// trigger (compaction is falling behind the writers); and per table the commit path: the
// oldest commit message older than its limit (writers and compactors wait for their
// commits) and committer errors. The dashboard adds what the runbook in
// docs/operations.md ("Runbook: readers lag behind the writers") looks at, and the commit queues
// and committers.

import { Duration } from 'aws-cdk-lib'
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import { Topic } from 'aws-cdk-lib/aws-sns'
import type { Queue } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import type { DeployConfig } from '../config.ts'
import { METRICS_NAMESPACE, tableDimensions } from '../metrics.ts'
import type { StrataFunction } from './strata-function.ts'
import type { TableResources } from './table-resources.ts'

export interface MonitoringProps {
  config: DeployConfig
  tables: TableResources[]
  writer: StrataFunction
  reader: StrataFunction
  ingestQueue?: Queue
  /** the ingest DLQ, or the Kinesis mapping's on-failure queue */
  ingestDeadLetters: Queue
}

const FIVE_MINUTES = Duration.minutes(5)

function strataMetric(metricName: string, dimensionsMap: Record<string, string>, statistic: string, period: Duration, label?: string): Metric {
  return new Metric({ namespace: METRICS_NAMESPACE, metricName, dimensionsMap, statistic, period, label })
}

/** Every series of a metric, whatever dimension set an invocation published it under. */
function allSeries(metricName: string, fn: string, statistic: string, label: string): MathExpression {
  return new MathExpression({
    expression: `SUM(SEARCH('Namespace="${METRICS_NAMESPACE}" MetricName="${metricName}" function="${fn}"', '${statistic}', 300))`,
    usingMetrics: {},
    label,
    period: FIVE_MINUTES,
  })
}

export class Monitoring extends Construct {
  readonly alarms: Alarm[] = []
  readonly dashboard: Dashboard

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id)
    const { config, tables } = props
    const topic = config.alarms.topicArn ? Topic.fromTopicArn(this, 'AlarmTopic', config.alarms.topicArn) : undefined
    const add = (alarm: Alarm) => {
      if (topic) {
        alarm.addAlarmAction(new SnsAction(topic))
        alarm.addOkAction(new SnsAction(topic))
      }
      this.alarms.push(alarm)
      return alarm
    }
    const dlqAlarm = (id: string, queue: Queue, what: string) =>
      add(
        new Alarm(this, id, {
          alarmDescription: `${what} has messages: they failed every retry. See docs/operations.md, "Dead-letter queues".`,
          metric: queue.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      )
    dlqAlarm('IngestDeadLettersAlarm', props.ingestDeadLetters, config.ingest.type === 'sqs' ? 'The ingest DLQ' : 'The Kinesis on-failure queue')

    // maintenance publishes table metrics once per run, so one period is one run; a run
    // drifting across a period boundary leaves a period empty, which keeps the state
    const schedule = Duration.minutes(config.functions.maintenance.scheduleMinutes)
    for (const t of tables) {
      dlqAlarm(`${t.node.id}DeadLettersAlarm`, t.deadLetters, `The compaction DLQ of table '${t.name}'`)
      dlqAlarm(`${t.node.id}CommitDeadLettersAlarm`, t.commitDeadLetters, `The commit DLQ of table '${t.name}'`)
      const dims = tableDimensions('maintenance', t.name)
      const cfg = config.tables.find((c) => c.name === t.name)!
      add(
        new Alarm(this, `${t.node.id}CommitQueueAgeAlarm`, {
          alarmDescription: `Table '${t.name}': a commit message has waited more than ${cfg.alarms.commitQueueAgeSeconds} s on the commit queue; writers and compactors wait for their commits. See docs/operations.md, "Metrics and alarms".`,
          metric: t.commitQueue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }),
          threshold: cfg.alarms.commitQueueAgeSeconds,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      )
      add(
        new Alarm(this, `${t.node.id}CommitterErrorsAlarm`, {
          alarmDescription: `Table '${t.name}': committer invocations failed (not single messages: those are returned to the queue). See the committer's log and docs/operations.md, "Metrics and alarms".`,
          metric: t.committer.fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      )
      add(
        new Alarm(this, `${t.node.id}FreshnessLagAlarm`, {
          alarmDescription: `Table '${t.name}': rows written more than ${cfg.alarms.freshnessLagMinutes} min ago are not yet visible to deletion-vector readers. Runbook: docs/operations.md, "Runbook: readers lag behind the writers".`,
          metric: strataMetric('FreshnessLag', dims, 'Maximum', schedule),
          threshold: cfg.alarms.freshnessLagMinutes * 60_000, // FreshnessLag is in milliseconds
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.IGNORE,
        }),
      )
      add(
        new Alarm(this, `${t.node.id}L0FilesAlarm`, {
          alarmDescription: `Table '${t.name}': a bucket has more than ${cfg.alarms.l0FileCount} level-0 files (back-pressure). Runbook: docs/operations.md, "Runbook: readers lag behind the writers".`,
          metric: strataMetric('L0FileCountMax', dims, 'Maximum', schedule),
          threshold: cfg.alarms.l0FileCount,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.IGNORE,
        }),
      )
    }

    const perTable = (metricName: string, fn: 'maintenance' | 'writer' | 'compactor' | 'committer', statistic: string, period: Duration): IMetric[] =>
      tables.map((t) => strataMetric(metricName, tableDimensions(fn, t.name), statistic, period, t.name))
    const graph = (title: string, left: IMetric[], width = 8, right?: IMetric[]) => new GraphWidget({ title, left, right, width, height: 6 })
    // each compactor serves one table and publishes with its table dimension
    const compactor = (metricName: string, statistic: string, label: string): IMetric[] =>
      tables.map((t) => strataMetric(metricName, tableDimensions('compactor', t.name), statistic, FIVE_MINUTES, `${t.name} ${label}`))

    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) })
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: '## Strata\nFreshness lag is how long written rows stay invisible to deletion-vector readers. When it grows, see the runbook "Runbook: readers lag behind the writers" in docs/operations.md.',
        width: 24,
        height: 2,
      }),
    )
    this.dashboard.addWidgets(new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 3 }))
    this.dashboard.addWidgets(
      graph('Freshness lag (ms, max)', perTable('FreshnessLag', 'maintenance', 'Maximum', schedule)),
      graph('L0 files in the worst bucket', perTable('L0FileCountMax', 'maintenance', 'Maximum', schedule)),
      graph('Queued compaction jobs', perTable('QueuedJobs', 'maintenance', 'Maximum', schedule)),
    )
    this.dashboard.addWidgets(
      graph('Compactor busy (ms per 5 min)', compactor('CompactorBusy', 'Sum', 'busy')),
      graph('Compaction time (ms)', [...compactor('CompactionTime', 'Average', 'avg'), ...compactor('CompactionTime', 'Maximum', 'max')]),
      graph('Compaction jobs and commit retries', compactor('CompactionJobs', 'Sum', 'jobs'), 8, [
        ...compactor('CommitRetries', 'Sum', 'compactor commit retries'),
        ...tables.map((t) => strataMetric('CommitRetries', tableDimensions('committer', t.name), 'Sum', FIVE_MINUTES, `${t.name} committer commit retries`)),
      ]),
    )
    this.dashboard.addWidgets(
      graph(
        'Commit queue (messages, max)',
        tables.flatMap((t) => [
          t.commitQueue.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: `${t.name} waiting` }),
          t.commitQueue.metricApproximateNumberOfMessagesNotVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: `${t.name} in flight` }),
        ]),
      ),
      graph(
        'Oldest commit message (s)',
        tables.map((t) => t.commitQueue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum', label: t.name })),
      ),
      graph(
        'Committer duration (ms)',
        tables.flatMap((t) => [
          t.committer.fn.metricDuration({ period: FIVE_MINUTES, statistic: 'Average', label: `${t.name} avg` }),
          t.committer.fn.metricDuration({ period: FIVE_MINUTES, statistic: 'Maximum', label: `${t.name} max` }),
        ]),
      ),
    )
    this.dashboard.addWidgets(
      graph('Rows written', perTable('RowsWritten', 'writer', 'Sum', FIVE_MINUTES)),
      graph('Rows rejected', [allSeries('RowsRejected', 'writer', 'Sum', 'rejected')]),
      graph(
        'Dead-letter queues (messages)',
        [
          props.ingestDeadLetters.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: 'ingest' }),
          ...tables.flatMap((t) => [
            t.deadLetters.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: `compaction ${t.name}` }),
            t.commitDeadLetters.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: `commit ${t.name}` }),
          ]),
        ],
      ),
    )
    const fns: [StrataFunction, string][] = [
      [props.writer, 'writer'],
      ...tables.flatMap((t): [StrataFunction, string][] => [
        [t.committer, `committer ${t.name}`],
        [t.compactor, `compactor ${t.name}`],
      ]),
    ]
    this.dashboard.addWidgets(
      graph('Throttles', fns.map(([f, label]) => f.fn.metricThrottles({ period: FIVE_MINUTES, label }))),
      graph('Errors', [...fns, [props.reader, 'reader'] as const].map(([f, label]) => f.fn.metricErrors({ period: FIVE_MINUTES, label }))),
      graph(
        'Concurrent executions (max)',
        fns.map(([f, label]) => f.fn.metric('ConcurrentExecutions', { period: FIVE_MINUTES, statistic: 'Maximum', label })),
      ),
    )
    this.dashboard.addWidgets(
      graph(
        'Oldest message age (s)',
        [
          ...(props.ingestQueue ? [props.ingestQueue.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum', label: 'ingest' })] : []),
          ...tables.map((t) => t.queue.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum', label: `compaction ${t.name}` })),
        ],
      ),
    )
  }
}
