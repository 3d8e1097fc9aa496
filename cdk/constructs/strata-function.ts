// One Strata Lambda function, arm64 on nodejs22.x, with its own log group (retention set) and its own role. The role
// starts empty except for writing to that one log group — no AWSLambdaBasicExecutionRole,
// whose logs permissions cover every log group — and each construct adds only the S3 keys
// and queue actions that function uses (cdk/constructs/permissions.ts).
//
// The code: run compiled from the package (this module's URL ends in `.js`), the function
// deploys the bundle the package ships, `dist/bundles/<kind>/index.mjs` (built by the
// package's build with the options of cdk/bundling.ts), so a CDK user needs neither esbuild
// nor Strata's sources; run from source in the checkout, a NodejsFunction bundles the
// handler with esbuild at synth.

import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Duration, RemovalPolicy } from 'aws-cdk-lib'
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam'
import { Architecture, Code, Function as LambdaFunction, type FunctionProps, Runtime } from 'aws-cdk-lib/aws-lambda'
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs'
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { BUNDLING, ENTRIES, type FunctionKind, REPO_ROOT } from '../bundling.ts'
import { FUNCTION_PROCESS_ENVIRONMENT, type FunctionSettings } from '../config.ts'
import { acknowledge } from '../nag.ts'
import { findPackage } from '../../lib/package.ts'

export const RUNTIME = Runtime.NODEJS_22_X
export const ARCHITECTURE = Architecture.ARM_64

/**
 * The directory of the packaged bundle of `kind` when this module runs compiled and the
 * bundle is there; undefined when it runs from source (the checkout bundles at synth).
 */
export function packagedBundle(kind: FunctionKind, moduleUrl: string = import.meta.url): string | undefined {
  if (!moduleUrl.endsWith('.js')) return undefined
  const root = findPackage(dirname(fileURLToPath(moduleUrl)))?.root
  const dir = root && join(root, 'dist', 'bundles', kind)
  return dir && existsSync(join(dir, 'index.mjs')) ? dir : undefined
}

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
  /** a NodejsFunction when bundled at synth, a Function of the packaged bundle otherwise */
  readonly fn: LambdaFunction
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
    const common: Omit<FunctionProps, 'code' | 'handler'> = {
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: props.settings.memoryMb,
      timeout: Duration.seconds(props.settings.timeoutSeconds),
      description: props.description,
      role: this.role,
      logGroup: this.logGroup,
      reservedConcurrentExecutions: props.reservedConcurrency,
      environment: {
        ...FUNCTION_PROCESS_ENVIRONMENT,
        // stack traces through the bundle's source map name the TypeScript files
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_LOG_LEVEL: props.logLevel,
        ...props.environment,
      },
    }
    const bundle = packagedBundle(props.kind)
    this.fn = bundle
      ? new LambdaFunction(this, 'Function', { ...common, code: Code.fromAsset(bundle), handler: 'index.handler' })
      : new NodejsFunction(this, 'Function', {
          ...common,
          entry: ENTRIES[props.kind],
          handler: 'handler',
          projectRoot: REPO_ROOT,
          depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
          bundling: BUNDLING,
        })
    acknowledge(
      this.fn,
      'L1',
      'Strata targets nodejs22.x: its code and bundles are tested on Node 20 and 22 (docs/operations.md, "Deploy to AWS (the CDK stack)"); a newer Lambda runtime is adopted after the tests run on it.',
    )
  }
}
