// The writer or compactor function (by AWS_LAMBDA_FUNCTION_NAME: `…-compactor` is the
// compactor, anything else the writer), its deployed handler unchanged on a runtime of its
// own whose metric observer (RuntimeSeams.onMetric) keeps the freshness-budget metrics an
// invocation adds; they come back as `stageMetrics` beside the handler's answer, which the
// event-source poller ignores. For the local runtime's `writerModule` / `compactorModule`
// (local/freshness-budget.ts reads them).

import type { Context, SQSEvent } from 'aws-lambda'
import { compactorFunction } from '../functions/compactor.ts'
import { writerFunction } from '../functions/writer.ts'
import { FunctionRuntime } from '../functions/shared/runtime.ts'
import { STAGE_METRICS } from './freshness-budget.ts'

// one invocation at a time per environment, as on Lambda
let collected: [string, number][] = []
const runtime = new FunctionRuntime({ onMetric: (m) => void (STAGE_METRICS.has(m.name) && collected.push([m.name, m.value])) })
const fn = (process.env.AWS_LAMBDA_FUNCTION_NAME ?? '').endsWith('-compactor') ? compactorFunction(runtime).handler : writerFunction(runtime).handler

export async function handler(event: SQSEvent, context: Context): Promise<unknown> {
  collected = []
  const res = (await fn(event, context)) as object
  return { ...res, stageMetrics: collected }
}
