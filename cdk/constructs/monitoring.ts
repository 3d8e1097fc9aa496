// Alarms, the alarm topic and the dashboard. Alarms: every DLQ not empty (a message there
// outlived its retries); the ingest source falling behind (the oldest ingest message, or the
// writer's iterator age on Kinesis); Errors and Throttles of every function in the stack;
// per table freshness lag over its limit — or not arriving, since only the maintenance
// function publishes it — and level-0 file count past its stop trigger (compaction is
// falling behind the writers); and per table the commit path: the oldest commit message
// older than its limit (writers and compactors wait for their commits), and a committer that
// took the committer lease over before it expired (a clock off, a stray lease object, or
// messages forwarded too often: docs/design.md "The committer lease and clocks"). Every
// alarm notifies one SNS topic: the configured one, or one created here, encrypted with
// a customer-managed KMS key (the construct's `encryptionKey`, or one of its own) that CloudWatch may use (it cannot publish to a topic encrypted
// with the AWS-managed SNS key) and refusing anything but TLS. The dashboard adds what the
// runbook in docs/operations.md ("Runbook: readers lag behind the writers") looks at, and
// the commit queues and committers.

import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib'
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
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam'
import { type IKey, Key } from 'aws-cdk-lib/aws-kms'
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns'
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions'
import type { IQueue } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import type { DeployConfig } from '../config.ts'
import { METRICS_NAMESPACE, tableDimensions } from '../metrics.ts'
import { StrataFunction } from './strata-function.ts'
import type { TableResources } from './table-resources.ts'

export interface MonitoringProps {
  config: DeployConfig
  tables: TableResources[]
  writer: StrataFunction
  reader: StrataFunction
  tableInit: StrataFunction
  ingestQueue?: IQueue
  /** the ingest DLQ, or the Kinesis mapping's on-failure queue (none for a user's queue without one given) */
  ingestDeadLetters?: IQueue
  /** whether the writer has an ingest source (a queue, or a Kinesis stream) */
  ingestEnabled: boolean
  /** the user's alarm topic (else `config.alarms.topicArn`, else one created here) */
  topic?: ITopic
  /** the construct's KMS key: it encrypts the created topic */
  key?: IKey
}

/** A function of the stack as the alarms and the dashboard name it. */
export interface WatchedFunction {
  fn: StrataFunction
  /** construct id prefix of its alarms: `Writer`, `TableOrdersCompactor`, … */
  id: string
  /** how alarm descriptions and the dashboard name it: `writer`, `compactor orders`, … */
  label: string
}

const FIVE_MINUTES = Duration.minutes(5)
const ONE_MINUTE = Duration.minutes(1)
/** The most alarms one alarm status widget shows. */
const ALARMS_PER_STATUS_WIDGET = 100

export function strataMetric(metricName: string, dimensionsMap: Record<string, string>, statistic: string, period: Duration, label?: string): Metric {
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

const graph = (title: string, left: IMetric[], width = 8, right?: IMetric[]) => new GraphWidget({ title, left, right, width, height: 6 })

/**
 * The stack's alarm topic: encrypted with a customer-managed key (rotated yearly) whose
 * policy lets CloudWatch use it — CloudWatch encrypts what it publishes with the topic's key
 * itself, and the AWS-managed `alias/aws/sns` key's policy cannot grant it that, so alarms
 * to a topic under that key are dropped — and a topic policy that refuses publishing
 * without TLS and lets CloudWatch alarms of this account publish (a topic policy replaces
 * SNS's default one, which is what let same-account alarms publish before).
 */
function createAlarmTopic(scope: Construct, email: string | undefined, given?: IKey): Topic {
  const stack = Stack.of(scope)
  const key =
    given ??
    new Key(scope, 'AlarmTopicKey', {
      description: `Encrypts the alarm topic of stack ${stack.stackName}`,
      enableKeyRotation: true,
      // the key protects alarm notifications in transit through SNS and nothing at rest:
      // nothing is left to decrypt once the stack and its topic are gone
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    })
  // no aws:SourceArn/SourceAccount condition here: CloudWatch may use the key to encrypt
  // what it publishes, and publishing to the topic is what the topic policy below restricts
  // to this account's alarms. A key imported by ARN takes no statement from here (its policy
  // is its owner's: docs/operations.md, "A KMS key of your own").
  key.addToResourcePolicy(
    new PolicyStatement({
      sid: 'AllowCloudWatchAlarmsToEncryptForTheTopic',
      principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      resources: ['*'],
    }),
    true,
  )
  const topic = new Topic(scope, 'AlarmTopic', {
    displayName: `Strata alarms (${stack.stackName})`,
    masterKey: key,
    enforceSSL: true,
  })
  topic.addToResourcePolicy(
    new PolicyStatement({
      sid: 'AllowCloudWatchAlarmsOfThisAccount',
      principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: {
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:*` },
      },
    }),
  )
  if (email) topic.addSubscription(new EmailSubscription(email))
  return topic
}

const atLeastOne = { threshold: 1, comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, evaluationPeriods: 1 }

// Errors and Throttles of every function. Errors counts invocations that failed as a
// whole (a crash, the timeout, a thrown error); a record or job that fails alone goes back
// through the partial batch response and is not an error.
const ERRORS_WHY: Partial<Record<StrataFunction['kind'], (label: string) => string>> = {
  committer: (l) => `${l}: invocations failed (not single messages: those are returned to the queue). See the committer's log and docs/operations.md, "Metrics and alarms".`,
  maintenance: (l) => `${l}: the maintenance run failed: snapshots are not expired, orphan files not removed, and the table's metrics may be missing (the freshness alarm fires when they stop). See its log and docs/operations.md, "Metrics and alarms".`,
}

/** Every function of the stack, as the alarms and the dashboard name it. */
function watchedFunctions(props: MonitoringProps): WatchedFunction[] {
  return [
    { fn: props.writer, id: 'Writer', label: 'writer' },
    { fn: props.reader, id: 'Reader', label: 'reader' },
    { fn: props.tableInit, id: 'TableInit', label: 'table-init' },
    ...props.tables.flatMap((t): WatchedFunction[] => [
      { fn: t.compactor, id: `${t.node.id}Compactor`, label: `compactor ${t.name}` },
      { fn: t.committer, id: `${t.node.id}Committer`, label: `committer ${t.name}` },
      { fn: t.maintenance, id: `${t.node.id}Maintenance`, label: `maintenance ${t.name}` },
    ]),
  ]
}

/** A function added to the construct without being listed in `functions` would go unwatched. */
function refuseUnwatched(scope: Construct, functions: WatchedFunction[]): void {
  const listed = new Set(functions.map((f) => f.fn))
  const unlisted = (scope.node.scope ?? scope).node
    .findAll()
    .filter((c): c is StrataFunction => c instanceof StrataFunction && !listed.has(c))
  if (unlisted.length) throw new Error(`Monitoring: functions without alarms: ${unlisted.map((f) => f.node.path).join(', ')}`)
}

export class Monitoring extends Construct {
  readonly alarms: Alarm[] = []
  readonly dashboard: Dashboard
  /** where every alarm and OK notification goes */
  readonly topic: ITopic
  /** the topic created here (undefined when the user's topic or `alarms.topicArn` is used) */
  readonly createdTopic?: Topic
  /** every function of the stack, each with an Errors and a Throttles alarm */
  readonly functions: WatchedFunction[]
  private readonly action: SnsAction

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id)
    const { config, tables } = props
    if (props.topic) {
      this.topic = props.topic
    } else if (config.alarms.topicArn) {
      this.topic = Topic.fromTopicArn(this, 'AlarmTopic', config.alarms.topicArn)
    } else {
      this.createdTopic = createAlarmTopic(this, config.alarms.email, props.key)
      this.topic = this.createdTopic
    }
    this.action = new SnsAction(this.topic)
    this.functions = watchedFunctions(props)
    refuseUnwatched(this, this.functions)

    if (props.ingestDeadLetters) this.dlqAlarm('IngestDeadLettersAlarm', props.ingestDeadLetters, config.ingest.type === 'sqs' ? 'The ingest DLQ' : 'The Kinesis on-failure queue')
    if (props.ingestEnabled) this.ingestAgeAlarm(props)
    for (const w of this.functions) this.functionAlarms(w)
    // Maintenance publishes the table metrics once per run, so one period is one run.
    const schedule = Duration.minutes(config.functions.maintenance.scheduleMinutes)
    for (const t of tables) this.tableAlarms(t, config, schedule)

    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) })
    this.addStatusWidgets()
    this.addTableGraphs(tables, schedule)
    this.addRuntimeGraphs(props, schedule)
  }

  /** Sends the alarm's ALARM and OK notifications to the topic, and lists it. */
  private watch(alarm: Alarm): Alarm {
    alarm.addAlarmAction(this.action)
    alarm.addOkAction(this.action)
    this.alarms.push(alarm)
    return alarm
  }

  private dlqAlarm(id: string, queue: IQueue, what: string): Alarm {
    return this.watch(
      new Alarm(this, id, {
        alarmDescription: `${what} has messages: they failed every retry. See docs/operations.md, "Dead-letter queues".`,
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        ...atLeastOne,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
  }

  /** The ingest source falling behind: the oldest ingest message, or the writer's Kinesis iterator age. */
  private ingestAgeAlarm(props: MonitoringProps): void {
    const ingestAge = props.config.alarms.ingestAgeSeconds
    if (props.ingestQueue) {
      this.watch(
        new Alarm(this, 'IngestAgeAlarm', {
          alarmDescription: `The oldest message on the ingest queue is more than ${ingestAge} s old: the writers are not keeping up, or messages keep failing and coming back. See the writer's errors, throttles and log, and docs/operations.md, "Metrics and alarms".`,
          metric: props.ingestQueue.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum' }),
          threshold: ingestAge,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      )
    } else {
      this.watch(
        new Alarm(this, 'IngestAgeAlarm', {
          alarmDescription: `The writer's Kinesis iterator age is more than ${ingestAge} s: the writer is behind the stream, or a batch keeps failing and is retried. See the writer's errors and log, and docs/operations.md, "Metrics and alarms".`,
          metric: props.writer.fn.metric('IteratorAge', { period: ONE_MINUTE, statistic: 'Maximum' }),
          threshold: ingestAge * 1000, // IteratorAge is in milliseconds
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      )
    }
  }

  /** A function's Errors and Throttles alarms (ERRORS_WHY). */
  private functionAlarms(w: WatchedFunction): void {
    this.watch(
      new Alarm(this, `${w.id}ErrorsAlarm`, {
        alarmDescription:
          ERRORS_WHY[w.fn.kind]?.(w.label) ??
          `${w.label}: invocations failed as a whole (a crash, the timeout, a thrown error). See its log and docs/operations.md, "Metrics and alarms".`,
        metric: w.fn.fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        ...atLeastOne,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
    this.watch(
      new Alarm(this, `${w.id}ThrottlesAlarm`, {
        alarmDescription: `${w.label}: invocations were throttled. No function of the stack is meant to be (event sources are capped with maxConcurrency, docs/operations.md "compaction.task-threads on Lambda"): the account's concurrency is used up, or a reservation is below its event source's cap.`,
        metric: w.fn.fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        ...atLeastOne,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
  }

  /**
   * A table's alarms: its DLQs, its commit path, and the table metrics maintenance publishes
   * once per run (`schedule` is one run). Only the maintenance function publishes
   * FreshnessLag, so a missing datapoint means a run that failed or never came: missing counts
   * as breaching. A run that drifts across a period boundary leaves one period empty, so the
   * alarm needs two periods in a row, breaching or empty, and a single drift never fires it.
   */
  private tableAlarms(t: TableResources, config: DeployConfig, schedule: Duration): void {
    this.dlqAlarm(`${t.node.id}DeadLettersAlarm`, t.deadLetters, `The compaction DLQ of table '${t.name}'`)
    this.dlqAlarm(`${t.node.id}CommitDeadLettersAlarm`, t.commitDeadLetters, `The commit DLQ of table '${t.name}'`)
    const dims = tableDimensions('maintenance', t.name)
    const cfg = config.tables.find((c) => c.name === t.name)!
    this.watch(
      new Alarm(this, `${t.node.id}CommitQueueAgeAlarm`, {
        alarmDescription: `Table '${t.name}': a commit message has waited more than ${cfg.alarms.commitQueueAgeSeconds} s on the commit queue; writers and compactors wait for their commits. See docs/operations.md, "Metrics and alarms".`,
        metric: t.commitQueue.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum' }),
        threshold: cfg.alarms.commitQueueAgeSeconds,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
    this.watch(
      new Alarm(this, `${t.node.id}FreshnessLagAlarm`, {
        alarmDescription: `Table '${t.name}': rows written more than ${cfg.alarms.freshnessLagMinutes} min ago are not yet visible to readers (level 0 of a deletion-vector table, or rows postponed in bucket-postpone), or the maintenance function has published no FreshnessLag for two periods (it failed or did not run). Runbook: docs/operations.md, "Runbook: readers lag behind the writers".`,
        metric: strataMetric('FreshnessLag', dims, 'Maximum', schedule),
        threshold: cfg.alarms.freshnessLagMinutes * 60_000, // FreshnessLag is in milliseconds
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        datapointsToAlarm: 2,
        treatMissingData: TreatMissingData.BREACHING,
      }),
    )
    this.committerAlarms(t, config.feed.enabled)
    if (cfg.glue) this.glueAlarm(t, `${cfg.glue.database}.${cfg.glue.tableName}`)
    if (t.icebergMetadataPrefix !== undefined) this.icebergAlarm(t)
    // missing data keeps the state: the freshness alarm and the maintenance Errors alarm
    // already say when the maintenance metrics stop
    this.watch(
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

  /** What a table's committer publishes: lease overrides (every invocation, 0 when all is well) and, with the feed on, feed failures. */
  private committerAlarms(t: TableResources, feedEnabled: boolean): void {
    this.watch(
      new Alarm(this, `${t.node.id}CommitterLeaseAlarm`, {
        alarmDescription: `Table '${t.name}': a committer took the committer lease over before it expired: the lease lay beyond the bound of its clock (another committer's clock runs ahead, or a stray lease object), or a message had been forwarded too often. Commits go on (two committers fold at once meanwhile). See the committer's log ("committer lease overridden") and docs/operations.md, "Runbook: the committer lease was overridden".`,
        metric: strataMetric('CommitterLeaseOverridden', tableDimensions('committer', t.name), 'Sum', FIVE_MINUTES),
        ...atLeastOne,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
    if (!feedEnabled) return
    this.watch(
      new Alarm(this, `${t.node.id}FeedFailuresAlarm`, {
        alarmDescription: `Table '${t.name}': the committer could not publish commit-feed events (the snapshots landed; subscribers were not told). See the committer's log ("commit feed event not published") and docs/operations.md, "The commit feed".`,
        metric: strataMetric('FeedFailures', tableDimensions('committer', t.name), 'Sum', FIVE_MINUTES),
        ...atLeastOne,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
  }

  /**
   * A Glue registration's failed updates: each is retried by the next commit, so one alone is
   * a blip, but a lasting cause (a missing database, a role without the Glue actions) keeps
   * Athena on an old snapshot until someone acts.
   */
  private glueAlarm(t: TableResources, glueTable: string): void {
    this.watch(
      new Alarm(this, `${t.node.id}GlueUpdateFailuresAlarm`, {
        alarmDescription: `Table '${t.name}': the committer could not move Glue table ${glueTable} to the newest Iceberg metadata (the snapshots landed; Athena reads the snapshot Glue still names). See the committer's log ("Glue table not moved") and docs/operations.md, "Registering tables in AWS Glue".`,
        metric: strataMetric('GlueUpdateFailures', tableDimensions('committer', t.name), 'Sum', FIVE_MINUTES),
        ...atLeastOne,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
  }

  /** A table with Iceberg metadata: its committer failed to write a version (the snapshots landed). */
  private icebergAlarm(t: TableResources): void {
    this.watch(
      new Alarm(this, `${t.node.id}IcebergMetadataFailuresAlarm`, {
        alarmDescription: `Table '${t.name}': the committer could not write the Iceberg metadata of a snapshot (the snapshots landed; Iceberg readers read the last version written until a later snapshot's catches up). See the committer's log ("Iceberg metadata not written") and docs/operations.md, "Iceberg metadata".`,
        metric: strataMetric('IcebergMetadataFailures', tableDimensions('committer', t.name), 'Sum', FIVE_MINUTES),
        ...atLeastOne,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    )
  }

  /** The dashboard's heading and its alarm status widgets, ALARMS_PER_STATUS_WIDGET alarms each. */
  private addStatusWidgets(): void {
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: '## Strata\nFreshness lag is how long written rows stay invisible to readers (level 0 of a deletion-vector table, rows postponed in bucket-postpone). When it grows, see the runbook "Runbook: readers lag behind the writers" in docs/operations.md.',
        width: 24,
        height: 2,
      }),
    )
    for (let i = 0; i < this.alarms.length; i += ALARMS_PER_STATUS_WIDGET) {
      const alarms = this.alarms.slice(i, i + ALARMS_PER_STATUS_WIDGET)
      const title = this.alarms.length > ALARMS_PER_STATUS_WIDGET ? `Alarms (${i + 1}–${i + alarms.length} of ${this.alarms.length})` : 'Alarms'
      this.dashboard.addWidgets(new AlarmStatusWidget({ title, alarms, width: 24, height: Math.min(12, 2 + Math.ceil(alarms.length / 6)) }))
    }
  }

  /** The tables' rows of graphs: freshness and level 0, compaction, the freshness budget, the commit path. */
  private addTableGraphs(tables: TableResources[], schedule: Duration): void {
    // the maximum over a maintenance run of what it publishes per table
    const perRun = (metricName: string): IMetric[] => tables.map((t) => strataMetric(metricName, tableDimensions('maintenance', t.name), 'Maximum', schedule, t.name))
    // each compactor serves one table and publishes with its table dimension
    const compactor = (metricName: string, statistic: string, label: string): IMetric[] =>
      tables.map((t) => strataMetric(metricName, tableDimensions('compactor', t.name), statistic, FIVE_MINUTES, `${t.name} ${label}`))
    this.dashboard.addWidgets(
      // postponed rows (postpone bucket mode) wait for a job too: on the right axis
      graph('Freshness lag (ms, max); postponed rows', perRun('FreshnessLag'), 8, perRun('PostponedRows')),
      graph('L0 files in the worst bucket', perRun('L0FileCountMax')),
      graph('Queued compaction jobs', perRun('QueuedJobs')),
    )
    this.dashboard.addWidgets(
      graph('Compactor busy (ms per 5 min)', compactor('CompactorBusy', 'Sum', 'busy')),
      graph('Compaction time (ms)', [...compactor('CompactionTime', 'Average', 'avg'), ...compactor('CompactionTime', 'Maximum', 'max')]),
      graph('Compaction jobs and commit retries', compactor('CompactionJobs', 'Sum', 'jobs'), 8, [
        ...compactor('CommitRetries', 'Sum', 'compactor commit retries'),
        ...tables.map((t) => strataMetric('CommitRetries', tableDimensions('committer', t.name), 'Sum', FIVE_MINUTES, `${t.name} committer commit retries`)),
      ]),
    )
    // the freshness budget (docs/design.md "Freshness budget"): where a row's seconds go, per stage
    const writer = (metricName: string, statistic: string): IMetric[] => tables.map((t) => strataMetric(metricName, tableDimensions('writer', t.name), statistic, FIVE_MINUTES, `${t.name} ${metricName}`))
    const stages = (statistic: string): IMetric[] => [
      ...writer('IngestWait', statistic),
      ...writer('WriteCommitTime', statistic),
      ...['JobQueueAge', 'CompactionSlotWait', 'CompactionReadTime', 'CompactionMergeTime', 'CompactionWriteTime', 'CompactionCommitTime'].flatMap((m) => compactor(m, statistic, m)),
    ]
    this.dashboard.addWidgets(
      graph('Freshness budget, p50 per stage (ms)', stages('p50')),
      graph('Freshness budget, p99 per stage (ms)', stages('p99')),
      graph('Level-0 file written → lifted (ms)', [...compactor('CompactedL0Age', 'p50', 'p50'), ...compactor('CompactedL0Age', 'p99', 'p99')]),
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
  }

  /** The stack's rows of graphs: rows written, DLQs, the functions, queue ages, maintenance. */
  private addRuntimeGraphs(props: MonitoringProps, schedule: Duration): void {
    const { tables } = props
    this.dashboard.addWidgets(
      graph('Rows written', tables.map((t) => strataMetric('RowsWritten', tableDimensions('writer', t.name), 'Sum', FIVE_MINUTES, t.name))),
      graph('Rows rejected', [allSeries('RowsRejected', 'writer', 'Sum', 'rejected')]),
      graph('Dead-letter queues (messages)', [
        ...(props.ingestDeadLetters ? [props.ingestDeadLetters.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: 'ingest' })] : []),
        ...tables.flatMap((t) => [
          t.deadLetters.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: `compaction ${t.name}` }),
          t.commitDeadLetters.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum', label: `commit ${t.name}` }),
        ]),
      ]),
    )
    const all = this.functions
    const running = all.filter((w) => w.fn.kind !== 'tableInit')
    this.dashboard.addWidgets(
      graph('Throttles', all.map((w) => w.fn.fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum', label: w.label }))),
      graph('Errors', all.map((w) => w.fn.fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum', label: w.label }))),
      graph('Concurrent executions (max)', running.map((w) => w.fn.fn.metric('ConcurrentExecutions', { period: FIVE_MINUTES, statistic: 'Maximum', label: w.label }))),
    )
    this.dashboard.addWidgets(
      graph(
        'Oldest message age (s)',
        [
          ...(props.ingestQueue ? [props.ingestQueue.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum', label: 'ingest' })] : []),
          ...tables.map((t) => t.queue.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum', label: `compaction ${t.name}` })),
        ],
        8,
        // a Kinesis source has no queue: the writer's iterator age is its ingest age
        props.ingestQueue || !props.ingestEnabled ? undefined : [props.writer.fn.metric('IteratorAge', { period: ONE_MINUTE, statistic: 'Maximum', label: 'writer iterator age (ms)' })],
      ),
      graph(
        'Maintenance: failed runs and steps',
        tables.flatMap((t) => [
          t.maintenance.fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum', label: `${t.name} failed runs` }),
          strataMetric('MaintenanceErrors', tableDimensions('maintenance', t.name), 'Sum', schedule, `${t.name} failed steps`),
        ]),
      ),
      graph('Invocations', running.map((w) => w.fn.fn.metricInvocations({ period: FIVE_MINUTES, statistic: 'Sum', label: w.label }))),
    )
  }
}
