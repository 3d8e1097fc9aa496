// The committer handler, timed for the cost benchmark (bench/lib/cost-timed.ts).
import { handler as real } from '../../functions/committer.ts'
import { timed } from './cost-timed.ts'

export const handler = timed(real as (event: unknown, context: unknown) => Promise<unknown>)
