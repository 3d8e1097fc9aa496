// The real writer handler under the soak's fault injection (local/runtime/soak-control.ts):
// an armed fault makes this invocation throw, exit at one of its S3 writes, or exit after
// committing and before its messages are deleted. Without an armed fault it is the writer.
import type { Context, SQSEvent } from 'aws-lambda'
import { writerFunction } from '../../functions/writer.ts'
import { FunctionRuntime } from '../../functions/shared/runtime.ts'
import { installSoakControl, withSoakFaults } from './soak-control.ts'

// the function on a runtime whose stores carry the soak's S3 write hook
const writer = writerFunction(new FunctionRuntime(installSoakControl('writer')))

export function handler(event: SQSEvent, context: Context) {
  return withSoakFaults('writer', event?.Records?.length ?? 0, () => writer.writerHandler(event, context))
}
