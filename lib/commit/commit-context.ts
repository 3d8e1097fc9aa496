// What a committer uses of its table, passed in: the table handle (lib/handle/table.ts)
// composes one, and a test may build one without a handle.

import type { ManifestIO } from '../manifest/manifests.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import type { ObjectStore } from '../store/object-store.ts'
import type { SchemaView } from '../table/schema.ts'
import type { FileStoreCommit } from './commit.ts'
import type { LandedCommits } from './landed.ts'

export interface CommitContext {
  readonly store: ObjectStore
  readonly view: SchemaView
  readonly snapshots: SnapshotManager
  readonly manifests: ManifestIO
  /** which commits the table's snapshots landed (idempotency checks) */
  readonly landed: LandedCommits
  /** the direct committer that lands a folded commit */
  readonly committer: FileStoreCommit
}

/** What a queued committer needs: where receipts live, and how to tell what landed. */
export type ReceiptContext = Pick<CommitContext, 'store' | 'snapshots' | 'landed'>
