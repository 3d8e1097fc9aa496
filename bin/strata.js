#!/usr/bin/env node
// Entry point of the `strata` command: registers tsx so the TypeScript sources run as they
// are in a checkout, then hands over to the CLI.
import { register } from 'tsx/esm/api'

// The SDK warns on every run that its 2027 releases need Node 22; Strata pins Node 20 for
// development and runs nodejs22.x on Lambda, so the notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
// a reader that stops early (`strata … | head`) closes the pipe: end quietly, as Unix tools
// do, instead of an unhandled EPIPE stack trace. `read` listens to stdout's errors itself
// while it writes (a consumer's read must fail, not advance): this one then stands aside.
process.stdout.on('error', (e) => {
  if (process.stdout.listenerCount('error') > 1) return
  if (e.code === 'EPIPE') process.exit(0)
  throw e
})
register()
const { main } = await import('../lib/cli/main.ts')
process.exitCode = await main(process.argv.slice(2))
