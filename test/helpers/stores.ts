// Stores the engine's tests run against: the local file system (a fresh temp dir) and S3 on
// the embedded fauxqs backend (a fresh bucket prefix), both real.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { type EmbeddedBackend, startEmbeddedBackend } from '../../local/embedded.ts'
import { LocalFileStore } from '../../lib/store/local-store.ts'
import { S3Store } from '../../lib/store/s3-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'

export interface StoreFactory {
  name: string
  setup(): Promise<void>
  /** a fresh empty table location */
  fresh(): ObjectStore
  teardown(): Promise<void>
}

export function localStores(): StoreFactory {
  let root = ''
  return {
    name: 'local',
    async setup() {
      root = mkdtempSync(join(tmpdir(), 'strata-test-'))
    },
    fresh: () => new LocalFileStore(join(root, randomUUID())),
    async teardown() {
      rmSync(root, { recursive: true, force: true })
    },
  }
}

export function s3Stores(): StoreFactory {
  let backend: EmbeddedBackend | null = null
  const bucket = 'strata-test'
  return {
    name: 's3',
    async setup() {
      backend = await startEmbeddedBackend()
      await backend.createBucket(bucket)
    },
    fresh: () => new S3Store({ bucket, prefix: `t-${randomUUID()}`, client: backend!.s3Client() }),
    async teardown() {
      await backend?.stop()
    },
  }
}

export const bothStores = (): StoreFactory[] => [localStores(), s3Stores()]
