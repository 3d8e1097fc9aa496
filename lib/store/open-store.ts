// Turns a table location string into an ObjectStore, so the CLI, handlers and tests name
// storage the same way: a path or file:// URI, s3://bucket/prefix, or memory://name.
import { fileURLToPath } from 'node:url'
import { StrataInputError } from '../errors.ts'
import { LocalFileStore } from './local-store.ts'
import { MemoryStore } from './memory-store.ts'
import type { ObjectStore } from './object-store.ts'
import { S3Store } from './s3-store.ts'

const ACCEPTED = "a file system path, 'file:///abs/path', 's3://bucket[/prefix]' or 'memory://name'"

/** memory:// stores by name, so two openStore calls in one process see the same objects. */
const memoryStores = new Map<string, MemoryStore>()

export function openStore(uri: string): ObjectStore {
  if (typeof uri !== 'string' || uri.trim() === '') {
    throw new StrataInputError(`store URI '${String(uri)}' is empty: expected ${ACCEPTED}`)
  }
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(uri)?.[1]?.toLowerCase()
  if (scheme === undefined) return new LocalFileStore(uri)
  const rest = uri.slice(scheme.length + 3)
  switch (scheme) {
    case 'file': {
      let path: string
      try {
        path = fileURLToPath(uri)
      } catch (err) {
        throw new StrataInputError(`store URI '${uri}' is not a valid file URI (${(err as Error).message}): expected ${ACCEPTED}`)
      }
      return new LocalFileStore(path)
    }
    case 's3': {
      const slash = rest.indexOf('/')
      const bucket = slash < 0 ? rest : rest.slice(0, slash)
      const prefix = slash < 0 ? '' : rest.slice(slash + 1)
      // S3 bucket naming rules: 3-63 characters of lowercase letters, digits, '.' and '-'.
      if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
        throw new StrataInputError(`store URI '${uri}' has no valid S3 bucket name ('${bucket}'): expected ${ACCEPTED}`)
      }
      if (prefix.split('/').some((s, i, all) => s === '' && !(i === all.length - 1))) {
        throw new StrataInputError(`store URI '${uri}' has an empty segment in its S3 prefix: expected ${ACCEPTED}`)
      }
      // Its client retries throttling and 5xx itself (the SDK's standard strategy, counted
      // for the S3Retries/S3Throttles metrics); no RetryingStore goes on top.
      return new S3Store({ bucket, prefix })
    }
    case 'memory': {
      if (!/^[A-Za-z0-9._/-]+$/.test(rest)) {
        throw new StrataInputError(
          `store URI '${uri}' needs a name of letters, digits, '.', '_', '-' or '/' after memory://: expected ${ACCEPTED}`,
        )
      }
      let store = memoryStores.get(rest)
      if (!store) {
        store = new MemoryStore({ uri: `memory://${rest}` })
        memoryStores.set(rest, store)
      }
      return store
    }
    default:
      throw new StrataInputError(`store URI '${uri}' has unsupported scheme '${scheme}://': expected ${ACCEPTED}`)
  }
}
