// The real compactor handler under the soak's fault injection (local/runtime/soak-control.ts):
// an armed fault makes this invocation throw, exit at one of its S3 writes (mid-job: after
// a data file, a deletion-vector index, a manifest, the snapshot), or exit after committing
// and before its messages are deleted; a restart kills every compactor environment.
import type { Context, SQSEvent } from 'aws-lambda'
import { compactorFunction } from '../../functions/compactor.ts'
import { FunctionRuntime } from '../../functions/shared/runtime.ts'
import { installSoakControl, withSoakFaults } from './soak-control.ts'

// the function on a runtime whose stores carry the soak's S3 write hook
const compactor = compactorFunction(new FunctionRuntime(installSoakControl('compactor')))

export function handler(event: SQSEvent, context: Context) {
  return withSoakFaults('compactor', event?.Records?.length ?? 0, () => compactor.compactorHandler(event, context))
}
