// The CDK app (cdk.json: `npx tsx cdk/app.ts`). The deployment config comes from the CDK
// context (`-c strata='{…}'`), or the file `-c config=path`, else cdk/strata.config.json.
// The stack is environment-agnostic unless CDK_DEFAULT_ACCOUNT/REGION are set, and looks
// nothing up, so `npx cdk synth` needs no AWS account or network. cdk-nag's AwsSolutions
// checks run on every synth; an unsuppressed finding is a synth error.

import { App, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { configFromContext } from './config.ts'
import { StrataStack } from './stack.ts'
import { StrataInputError } from '../lib/types.ts'

export function buildApp(app: App = new App()): { app: App; stack: StrataStack } {
  const config = configFromContext((key) => app.node.tryGetContext(key))
  const account = process.env.CDK_DEFAULT_ACCOUNT
  const region = process.env.CDK_DEFAULT_REGION
  const stack = new StrataStack(app, config.stackName, config, account && region ? { env: { account, region } } : {})
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }))
  return { app, stack }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, ''))) {
  try {
    buildApp().app.synth()
  } catch (e) {
    if (!(e instanceof StrataInputError)) throw e
    // a config error is the user's to fix: the message, not a stack trace
    process.stderr.write(`${e.message}\n`)
    process.exit(1)
  }
}
