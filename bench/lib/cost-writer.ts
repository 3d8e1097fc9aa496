// The writer handler, timed for the cost benchmark (bench/lib/cost-timed.ts).
import { handler as real } from '../../functions/writer.ts'
import { timed } from './cost-timed.ts'

export const handler = timed(real as (event: unknown, context: unknown) => Promise<unknown>)
