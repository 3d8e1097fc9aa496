// The CDK app (cdk.json: `npx tsx cdk/app.ts`). The deployment config comes from the CDK
// context (`-c strata='{…}'`), or the file `-c config=path`, else cdk/strata.config.json.
// The stack is environment-agnostic (no account or region baked in) and looks nothing up,
// so `npx cdk synth` needs no AWS account or network. cdk-nag's AwsSolutions
// checks run on every synth; an unsuppressed finding is a synth error.

import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { App, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { configFromContext } from './config.ts'
import { StrataInputError } from '../lib/errors.ts'
import { StrataStack } from './stack.ts'

export function buildApp(app: App = new App()): { app: App; stack: StrataStack } {
  const config = configFromContext((key) => app.node.tryGetContext(key))
  const stack = new StrataStack(app, config.stackName, config)
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }))
  return { app, stack }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    buildApp().app.synth()
  } catch (e) {
    if (!(e instanceof StrataInputError)) throw e
    // a config error is the user's to fix: the message, not a stack trace
    process.stderr.write(`${e.message}\n`)
    process.exit(1)
  }
}
