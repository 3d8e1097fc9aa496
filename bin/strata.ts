#!/usr/bin/env node
// Entry point of the `strata` command (built to dist/bin/strata.js; in a checkout, `npm run
// strata -- …` runs this source through tsx). It adds `strata local`, whose server lives
// outside lib/, and hands over to the CLI.

import { main } from '../lib/cli/main.ts'
import { addLocalCommand } from '../local/serve.ts'

// The SDK warns on every run that its 2027 releases need Node 22; Strata supports Node 20 for
// the CLI and runs nodejs22.x on Lambda, so the notice is noise here (the SDK reads this when
// a client is made, not when it is imported).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
// a reader that stops early (`strata … | head`) closes the pipe: end quietly, as Unix tools
// do, instead of an unhandled EPIPE stack trace. `read` listens to stdout's errors itself
// while it writes (a consumer's read must fail, not advance): this one then stands aside.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (process.stdout.listenerCount('error') > 1) return
  if (e.code === 'EPIPE') process.exit(0)
  throw e
})
process.exitCode = await main(process.argv.slice(2), { extend: addLocalCommand })
