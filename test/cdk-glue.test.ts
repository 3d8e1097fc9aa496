// The construct library's warehouse layout and Glue registration (cdk/): tables at
// `<warehouse>/<database>.db/<name>/`, a Glue database in the template (created, or the app's
// own), no Glue table in it (the committer creates and moves that one), the committer's
// environment as its runtime reads it, its IAM scoped to exactly the catalog, database and
// table ARNs, the Iceberg options a registration needs, refusals naming the prop, and cdk-nag
// finding nothing unacknowledged.

import { Aws, Duration, Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { CfnDatabase } from 'aws-cdk-lib/aws-glue'
import { AwsSolutionsChecks } from 'cdk-nag'
import { describe, expect, it } from 'vitest'
import { DeployConfigError, StrataTable, StrataTables, type StrataTableProps } from '../cdk/index.ts'
import { build } from 'esbuild'
import { BUNDLING, ENTRIES } from '../cdk/bundling.ts'
import { glueTarget } from '../functions/shared/glue.ts'
import { CDK_CONTEXT, synth, testApp } from './helpers/cdk.ts'

const schema = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '2' },
}

type Statement = { Effect: string; Action: string | string[]; Resource: unknown }
type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] }
const actions = (st: Statement) => (Array.isArray(st.Action) ? st.Action : [st.Action])

function appStack(id: string) {
  const app = testApp({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } })
  return { app, stack: new Stack(app, id) }
}

const nagViolations = (app: ReturnType<typeof testApp>) =>
  new AwsSolutionsChecks(app).validateScope(app).violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(' ')}`)

/** The statements of every IAM policy attached to the role `roleId` (a logical id). */
function roleStatements(resources: Record<string, Resource>, roleId: string): Statement[] {
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: { Ref: string }) => x.Ref === roleId))
    .flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[])
}

const glueArn = (resource: string) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':glue:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:${resource}`]] })

describe('StrataTables in a warehouse, one table registered in Glue', () => {
  const { app, stack } = appStack('Lakehouse')
  const strata = new StrataTables(stack, 'Strata', {
    warehouse: 'lake',
    tables: [
      { name: 'orders', database: 'sales', schema, glue: { database: 'analytics', createDatabase: true, updateInterval: Duration.seconds(30) } },
      { name: 'page-views', schema },
    ],
  })
  const template = Template.fromStack(stack)
  const resources = template.toJSON().Resources as Record<string, Resource>
  const [orders, views] = strata.tables
  const committerRole = stack.getLogicalId(orders.committer.role.node.defaultChild as never)
  const committerFn = stack.getLogicalId(orders.committer.fn.node.defaultChild as never)
  const bucketRef = { Ref: stack.getLogicalId(strata.bucket.node.defaultChild as never) }

  it('puts each table at <warehouse>/<database>.db/<name>, the database default when none is given', () => {
    expect(stack.resolve(strata.tableUri('orders'))).toEqual({ 'Fn::Join': ['', ['s3://', bucketRef, '/lake/sales.db/orders']] })
    expect(stack.resolve(strata.tableUri('page-views'))).toEqual({ 'Fn::Join': ['', ['s3://', bucketRef, '/lake/default.db/page-views']] })
    expect([orders.prefix, views.prefix]).toEqual(['lake/sales.db/orders/', 'lake/default.db/page-views/'])
  })

  it('creates the Glue database, and no Glue table: the committer creates and moves that one', () => {
    const dbs = Object.values(resources).filter((r) => r.Type === 'AWS::Glue::Database')
    expect(dbs).toEqual([{ Type: 'AWS::Glue::Database', Properties: { CatalogId: { Ref: 'AWS::AccountId' }, DatabaseInput: { Name: 'analytics', Description: expect.any(String) } } }])
    expect(Object.values(resources).filter((r) => r.Type === 'AWS::Glue::Table')).toEqual([])
    const dbId = Object.entries(resources).find(([, r]) => r.Type === 'AWS::Glue::Database')![0]
    expect(resources[committerFn].DependsOn).toContain(dbId)
  })

  it("gives the committer the Glue target in its environment, as the runtime reads it; the other table's committer none", () => {
    const env = resources[committerFn].Properties.Environment.Variables
    expect(env).toMatchObject({ STRATA_GLUE_DATABASE: 'analytics', STRATA_GLUE_TABLE: 'orders', STRATA_GLUE_UPDATE_INTERVAL_MS: '30000' })
    expect(glueTarget(env)).toEqual({ database: 'analytics', table: 'orders', updateIntervalMs: 30_000 })
    const other = resources[stack.getLogicalId(views.committer.fn.node.defaultChild as never)].Properties.Environment.Variables
    expect(Object.keys(other).filter((k) => k.startsWith('STRATA_GLUE'))).toEqual([])
    expect(glueTarget(other)).toBeUndefined()
  })

  it("scopes the committer's Glue statement to exactly the catalog, the database and the table; no other role has any Glue action", () => {
    const glue = roleStatements(resources, committerRole).filter((st) => actions(st).some((a) => a.startsWith('glue:')))
    expect(glue).toEqual([
      { Effect: 'Allow', Action: ['glue:CreateTable', 'glue:GetTable', 'glue:UpdateTable'], Resource: [glueArn('catalog'), glueArn('database/analytics'), glueArn('table/analytics/orders')] },
    ])
    const elsewhere = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && !r.Properties.Roles.some((x: { Ref: string }) => x.Ref === committerRole))
      .flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[])
      .filter((st) => actions(st).some((a) => a.startsWith('glue:')))
    expect(elsewhere).toEqual([])
  })

  it("lets the committer and maintenance write and delete the table's Iceberg metadata under its metadata/", () => {
    const s3 = roleStatements(resources, committerRole).filter((st) => st.Effect === 'Allow' && actions(st).includes('s3:DeleteObject'))
    const resourcesOf = (st: Statement) => (Array.isArray(st.Resource) ? st.Resource : [st.Resource])
    const metadata = s3.filter((st) => resourcesOf(st).some((r) => JSON.stringify(r).includes('/lake/sales.db/orders/metadata/*')))
    expect(metadata).toHaveLength(1)
    expect(actions(metadata[0]).sort()).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:PutObject'])
    // maintenance brings the metadata up to date before it expires old versions
    const maintenanceRole = stack.getLogicalId(orders.maintenance.role.node.defaultChild as never)
    const maintenance = roleStatements(resources, maintenanceRole).filter((st) => st.Effect === 'Allow' && resourcesOf(st).some((r) => JSON.stringify(r).includes('/lake/sales.db/orders/metadata/*')))
    expect(maintenance.flatMap(actions).sort()).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:PutObject'])
    // the table without Iceberg metadata gets no such grant
    const viewsRole = stack.getLogicalId(views.committer.role.node.defaultChild as never)
    expect(JSON.stringify(roleStatements(resources, viewsRole))).not.toContain('metadata/*')
  })

  it('stores the table with the Iceberg options a registration needs: table-location storage, no deletion of versions after commit, manifests Athena reads', () => {
    const init = Object.values(resources).filter((r) => r.Type === 'Custom::StrataTable')
    const ordersInit = init.find((r) => r.Properties.TableName === 'orders')!
    expect(JSON.parse(ordersInit.Properties.Schema).options).toEqual({ bucket: '2', 'metadata.iceberg.storage': 'table-location', 'metadata.iceberg.delete-after-commit.enabled': 'false', 'metadata.iceberg.manifest-legacy-version': 'true' })
    const viewsInit = init.find((r) => r.Properties.TableName === 'page-views')!
    expect(JSON.parse(viewsInit.Properties.Schema).options).toEqual({ bucket: '2' })
  })

  it("alarms on the Iceberg table's IcebergMetadataFailures, at least one in 5 minutes, and on no other table's", () => {
    const alarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.MetricName === 'IcebergMetadataFailures')
    expect(alarms).toHaveLength(1)
    expect(alarms[0].Properties).toMatchObject({ Namespace: 'Strata', Statistic: 'Sum', Period: 300, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' })
    expect(alarms[0].Properties.Dimensions).toEqual(expect.arrayContaining([{ Name: 'table', Value: 'orders' }, { Name: 'function', Value: 'committer' }]))
  })

  it("alarms on the registered table's GlueUpdateFailures, at least one in 5 minutes, and on no other table's", () => {
    const alarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.MetricName === 'GlueUpdateFailures')
    expect(alarms).toHaveLength(1)
    expect(alarms[0].Properties).toMatchObject({ Namespace: 'Strata', Statistic: 'Sum', Period: 300, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' })
    expect(alarms[0].Properties.Dimensions).toEqual(expect.arrayContaining([{ Name: 'table', Value: 'orders' }, { Name: 'function', Value: 'committer' }]))
  })

  it('cdk-nag finds nothing unacknowledged', () => {
    expect(nagViolations(app)).toEqual([])
  })
})

describe('a StrataTable registered in a CfnDatabase of the app', () => {
  const { app, stack } = appStack('OwnCatalog')
  const db = new CfnDatabase(stack, 'Catalog', { catalogId: stack.account, databaseInput: { name: 'mine' } })
  const table = new StrataTable(stack, 'Orders', { name: 'orders', schema: { ...schema, options: { bucket: '2', 'metadata.iceberg.storage': 'table-location', 'metadata.iceberg.glue.skip-archive': 'true' } }, warehouse: 'wh', glue: { database: db, tableName: 'orders_v1' } })
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>
  const committer = table.deployment.tables[0].committer

  it('creates no database of its own, waits for the given one, and names it and the table in the environment and the policy', () => {
    expect(Object.values(resources).filter((r) => r.Type === 'AWS::Glue::Database')).toHaveLength(1)
    const fn = resources[stack.getLogicalId(committer.fn.node.defaultChild as never)]
    expect(fn.DependsOn).toContain(stack.getLogicalId(db))
    expect(fn.Properties.Environment.Variables).toMatchObject({ STRATA_GLUE_DATABASE: 'mine', STRATA_GLUE_TABLE: 'orders_v1', STRATA_GLUE_UPDATE_INTERVAL_MS: '10000' })
    const glue = roleStatements(resources, stack.getLogicalId(committer.role.node.defaultChild as never)).filter((st) => actions(st).some((a) => a.startsWith('glue:')))
    expect(glue.map((st) => st.Resource)).toEqual([[glueArn('catalog'), glueArn('database/mine'), glueArn('table/mine/orders_v1')]])
    expect(stack.resolve(table.tableUri)).toMatchObject({ 'Fn::Join': ['', ['s3://', expect.anything(), '/wh/default.db/orders']] })
  })

  it('cdk-nag finds nothing unacknowledged', () => {
    expect(nagViolations(app)).toEqual([])
  })
})

describe("the grant of a table's Iceberg metadata follows where the library writes it", () => {
  it('is the table\'s metadata/ with table-location, the warehouse\'s iceberg/<database>/<table>/metadata/ with the catalog location, none without Iceberg storage', () => {
    const { stack } = appStack('IcebergPlaces')
    const withStorage = (storage: Record<string, string>) => ({ ...schema, options: { bucket: '2', ...storage } })
    const strata = new StrataTables(stack, 'Strata', {
      warehouse: 'lake',
      tables: [
        { name: 'in_table', database: 'sales', schema: withStorage({ 'metadata.iceberg.storage': 'table-location' }) },
        { name: 'in_catalog', database: 'sales', schema: withStorage({ 'metadata.iceberg.storage': 'hadoop-catalog' }) },
        { name: 'catalog_in_table', database: 'sales', schema: withStorage({ 'metadata.iceberg.storage': 'hadoop-catalog', 'metadata.iceberg.storage-location': 'table-location' }) },
        { name: 'plain', database: 'sales', schema },
      ],
    })
    expect(strata.tables.map((t) => t.icebergMetadataPrefix)).toEqual(['lake/sales.db/in_table/metadata/', 'lake/iceberg/sales/in_catalog/metadata/', 'lake/sales.db/catalog_in_table/metadata/', undefined])
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>
    const role = stack.getLogicalId(strata.tables[1].committer.role.node.defaultChild as never)
    expect(JSON.stringify(roleStatements(resources, role))).toContain('/lake/iceberg/sales/in_catalog/metadata/*')
  })
})

describe('the function bundles', () => {
  // the Glue client is only the committer's: functions/shared/glue.ts, which only it imports
  it('carry the AWS SDK\'s Glue client in the committer\'s bundle only', async () => {
    const withGlue: string[] = []
    for (const [kind, entry] of Object.entries(ENTRIES)) {
      const { metafile } = await build({ entryPoints: [entry], bundle: true, write: false, metafile: true, platform: 'node', format: 'esm', target: BUNDLING.target, mainFields: BUNDLING.mainFields, logLevel: 'error' })
      if (Object.keys(metafile.inputs).some((input) => input.includes('node_modules/@aws-sdk/client-glue/'))) withGlue.push(kind)
    }
    expect(withGlue).toEqual(['committer'])
  })
})

describe('without a warehouse, tables keep tables/<name>/', () => {
  it('places a table as before', () => {
    const { stack } = appStack('Plain')
    const strata = new StrataTables(stack, 'Strata', { tables: [{ name: 'orders', schema }] })
    expect(strata.tables[0].prefix).toBe('tables/orders/')
    expect(Object.values(Template.fromStack(stack).toJSON().Resources as Record<string, Resource>).filter((r) => r.Type.startsWith('AWS::Glue::'))).toEqual([])
  })
})

describe('the JSON config', () => {
  it('takes warehouse, tables[].database and tables[].glue', () => {
    const s = synth({ warehouse: 'lake/prod', tables: [{ name: 'orders', database: 'sales', schema, glue: { database: 'analytics', createDatabase: true, updateIntervalSeconds: 5 } }] })
    const env = Object.values(s.resources).find((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.STRATA_GLUE_TABLE)!.Properties.Environment.Variables
    expect(glueTarget(env)).toEqual({ database: 'analytics', table: 'orders', updateIntervalMs: 5000 })
    expect(JSON.stringify(s.resources)).toContain('/lake/prod/sales.db/orders')
  })

  it('refuses glue without a warehouse, naming the config key', () => {
    expect(() => synth({ tables: [{ name: 'orders', schema, glue: { database: 'analytics' } }] })).toThrow(/tables\[0\]\.glue: invalid value .* expected no value without warehouse/)
  })
})

describe('refusals', () => {
  const make = (props: Partial<StrataTableProps>) => () => {
    const { stack } = appStack('Refused')
    new StrataTable(stack, 'T', { name: 'orders', schema, warehouse: 'lake', ...props } as StrataTableProps)
  }
  const cases: [string, Partial<StrataTableProps>, RegExp][] = [
    ['glue without a warehouse', { warehouse: undefined, glue: { database: 'analytics' } }, /glue: invalid value .*expected no value without warehouse/],
    ['a database without a warehouse', { warehouse: undefined, database: 'sales' }, /database: invalid value "sales", expected no value without warehouse/],
    ['Iceberg storage other than table-location', { glue: { database: 'analytics' }, schema: { ...schema, options: { 'metadata.iceberg.storage': 'hadoop-catalog' } } }, /option 'metadata.iceberg.storage' "hadoop-catalog"/],
    ['versions deleted after each commit', { glue: { database: 'analytics' }, schema: { ...schema, options: { 'metadata.iceberg.delete-after-commit.enabled': 'true' } } }, /metadata.iceberg.delete-after-commit.enabled/],
    ['Iceberg metadata outside a warehouse', { warehouse: undefined, schema: { ...schema, options: { 'metadata.iceberg.storage': 'table-location' } } }, /needs the table in a warehouse/],
    ['a Glue database name Athena cannot query', { glue: { database: 'Analytics-1' } }, /glue.database: invalid value "Analytics-1", expected a Glue database name of lowercase letters/],
    ['a Glue table name Athena cannot query', { glue: { database: 'analytics', tableName: 'Orders' } }, /glue.tableName: invalid value "Orders"/],
    ['an interval in milliseconds', { glue: { database: 'analytics', updateInterval: Duration.millis(1500) } }, /glue.updateInterval: invalid value .*whole number of seconds/],
    ['a warehouse under rejects/', { warehouse: 'rejects/lake' }, /warehouse: invalid value "rejects\/lake", expected a prefix outside 'rejects\/'/],
    ['a warehouse with a leading slash', { warehouse: '/lake' }, /warehouse: invalid value "\/lake"/],
    ['an Iceberg table name Athena cannot query', { glue: { database: 'analytics' }, schema: { ...schema, options: { 'metadata.iceberg.table': 'Orders' } } }, /glue.tableName: invalid value undefined, expected a Glue table name .*'metadata.iceberg.table' "Orders"/],
    ['a database Paimon refuses', { database: 'a.b' }, /database: invalid value "a.b", expected a Paimon database name/],
  ]
  for (const [what, props, message] of cases) {
    it(`refuses ${what}`, () => {
      expect(make(props)).toThrow(DeployConfigError)
      expect(make(props)).toThrow(message)
    })
  }

  it("names the Glue table after the schema's metadata.iceberg.table when glue.tableName is not given", () => {
    const { stack } = appStack('IcebergName')
    const t = new StrataTable(stack, 'T', { name: 'orders', schema: { ...schema, options: { 'metadata.iceberg.table': 'orders_iceberg' } }, warehouse: 'lake', glue: { database: 'analytics' } })
    expect(t.deployment.config.tables[0].glue).toEqual({ database: 'analytics', createDatabase: false, tableName: 'orders_iceberg', updateIntervalSeconds: 10 })
  })

  it('refuses a CfnDatabase whose name is a token, and createDatabase with a CfnDatabase', () => {
    const { stack } = appStack('Tokens')
    const named = new CfnDatabase(stack, 'Named', { catalogId: stack.account, databaseInput: { name: 'fixed' } })
    const tokened = new CfnDatabase(stack, 'Tokened', { catalogId: stack.account, databaseInput: { name: Aws.STACK_NAME } })
    expect(() => new StrataTable(stack, 'A', { name: 'a', schema, warehouse: 'lake', glue: { database: tokened } })).toThrow(/glue.database: the CfnDatabase 'Tokens\/Tokened' has no literal databaseInput.name/)
    expect(() => new StrataTable(stack, 'B', { name: 'b', schema, warehouse: 'lake', glue: { database: named, createDatabase: true } })).toThrow(/glue.createDatabase: expected none with a CfnDatabase/)
  })
})
