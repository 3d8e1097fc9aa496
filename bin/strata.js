#!/usr/bin/env node
// Entry point of the `strata` command: registers tsx so the TypeScript sources run as they
// are in a checkout, then hands over to the CLI.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../lib/cli/main.ts')
process.exitCode = await main(process.argv.slice(2))
