// A user's CDK app with the installed package's construct: a bucket of its own for the
// table, and a function of its own granted read access. Synthesized with cdk-nag's
// AwsSolutions checks, whose unacknowledged findings fail the synthesis.
import { App, Stack, Validations } from 'aws-cdk-lib'
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda'
import { BlockPublicAccess, Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3'
import { AwsSolutionsChecks } from 'cdk-nag'
import { StrataTable } from 'strata-tables/cdk'

const app = new App({ outdir: process.argv[2] })
const stack = new Stack(app, 'UserStack')
const logs = new Bucket(stack, 'Logs', { encryption: BucketEncryption.S3_MANAGED, blockPublicAccess: BlockPublicAccess.BLOCK_ALL, enforceSSL: true })
Validations.of(logs).acknowledge({ id: 'AwsSolutions-S1', reason: 'the access-log bucket itself' })
const bucket = new Bucket(stack, 'Data', {
  encryption: BucketEncryption.S3_MANAGED,
  blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
  enforceSSL: true,
  serverAccessLogsBucket: logs,
})
const table = new StrataTable(stack, 'Orders', {
  bucket,
  name: 'orders',
  schema: {
    fields: [
      { name: 'id', type: 'BIGINT NOT NULL' },
      { name: 'amount', type: 'DECIMAL(10, 2)' },
    ],
    primaryKeys: ['id'],
    options: { bucket: '2' },
  },
})
const reporter = new LambdaFunction(stack, 'Reporter', {
  runtime: Runtime.NODEJS_22_X,
  handler: 'index.handler',
  code: Code.fromInline('exports.handler = async () => ({})'),
})
table.grantRead(reporter)
// the user's own example function, as CDK makes one by default: its findings are the user's
Validations.of(reporter).acknowledge({ id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]', reason: "CDK's default execution role" })
Validations.of(reporter).acknowledge({ id: 'AwsSolutions-L1', reason: 'the runtime the user chose' })
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }))
app.synth()
