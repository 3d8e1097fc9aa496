// The construct library: `import { StrataTables, StrataTable } from 'strata-tables/cdk'`.
// Strata on AWS as constructs for a CDK app of one's own: typed props, a bucket, KMS key,
// queues, stream, alarm topic and event bus of one's own, grants for one's own functions and
// metrics for one's own alarms (docs/operations.md, "Deploy to AWS (the CDK stack)").

export { StrataTables } from './constructs/strata-tables.ts'
export { StrataTable } from './constructs/strata-table.ts'
export type {
  StrataAlarmOptions,
  StrataBucketOptions,
  StrataCommonProps,
  StrataCompactorOptions,
  StrataFeedOptions,
  StrataField,
  StrataFunctionOptions,
  StrataFunctionsOptions,
  StrataGlueOptions,
  StrataIngestOptions,
  StrataSchema,
  StrataTableAlarmOptions,
  StrataTableProps,
  StrataTableSpec,
  StrataTablesProps,
} from './props.ts'
export { DeployConfigError } from './config.ts'
