// The `strata` CLI with `local` added (lib/cli/main.ts `extend`), as the bin adds it, for
// tests that run `strata local` in a child process of its own:
//   node --import tsx test/helpers/strata-local-runner.ts local --port 0
import { main } from '../../lib/cli/main.ts'
import { addLocalCommand } from '../../local/serve.ts'

process.exitCode = await main(process.argv.slice(2), { extend: addLocalCommand })
