// One Strata Lambda function: a NodejsFunction bundled as every other (cdk/bundling.ts),
// arm64 on nodejs22.x, with its own log group (retention set) and its own role. The role
// starts empty except for writing to that one log group — no AWSLambdaBasicExecutionRole,
// whose logs permissions cover every log group — and each construct adds only the S3 keys
// and queue actions that function uses (cdk/constructs/permissions.ts).

import { join } from 'node:path'
import { Duration, RemovalPolicy } from 'aws-cdk-lib'
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam'
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda'
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs'
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { BUNDLING, ENTRIES, type FunctionKind, REPO_ROOT } from '../bundling.ts'
import { FUNCTION_PROCESS_ENVIRONMENT, type FunctionSettings } from '../config.ts'
import { acknowledge } from '../nag.ts'

export const RUNTIME = Runtime.NODEJS_22_X
export const ARCHITECTURE = Architecture.ARM_64

export interface StrataFunctionProps {
  kind: FunctionKind
  description: string
  settings: FunctionSettings
  environment: Record<string, string>
  logRetentionDays: number
  logLevel: string
  reservedConcurrency?: number
}

export class StrataFunction extends Construct {
  readonly kind: FunctionKind
  readonly fn: NodejsFunction
  readonly role: Role
  readonly logGroup: LogGroup

  constructor(scope: Construct, id: string, props: StrataFunctionProps) {
    super(scope, id)
    this.kind = props.kind
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.RETAIN,
    })
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Strata ${props.kind}: ${props.description}`,
    })
    this.logGroup.grantWrite(this.role)
    this.fn = new NodejsFunction(this, 'Function', {
      entry: ENTRIES[props.kind],
      handler: 'handler',
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: props.settings.memoryMb,
      timeout: Duration.seconds(props.settings.timeoutSeconds),
      description: props.description,
      role: this.role,
      logGroup: this.logGroup,
      reservedConcurrentExecutions: props.reservedConcurrency,
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      bundling: BUNDLING,
      environment: {
        ...FUNCTION_PROCESS_ENVIRONMENT,
        // stack traces through the bundle's source map name the TypeScript files
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_LOG_LEVEL: props.logLevel,
        ...props.environment,
      },
    })
    acknowledge(
      this.fn,
      'L1',
      'Strata targets nodejs22.x: its code and bundles are tested on Node 20 and 22 (docs/operations.md, "Deploy to AWS (the CDK stack)"); a newer Lambda runtime is adopted after the tests run on it.',
    )
  }
}
