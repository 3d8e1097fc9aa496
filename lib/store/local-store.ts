// ObjectStore on a local directory. Keys are '/'-separated paths under the root. Writes go
// to a temp file in the target's directory first, so a reader never sees a partial object:
// put renames over the target (rename(2) replaces atomically) and putIfAbsent hard-links
// the temp file to the target (link(2) fails with EEXIST when the target exists, which
// makes the create exclusive and atomic). A process that dies between writing the temp file
// and removing it leaves the temp file behind: `list` never shows it, `listLeftovers` does,
// so orphan cleanup can remove it once it is old. Durability against power loss (fsync) is
// not a goal here: this store serves local runs and tests, S3 serves production.
import { randomUUID } from 'node:crypto'
import { link, mkdir, open, readdir, readFile, rename, rmdir, stat, unlink, writeFile } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { StoreError, StrataInputError } from '../errors.ts'
import { checkRange } from './memory-store.ts'
import type { ObjectInfo, ObjectStore } from './object-store.ts'

/** File names starting with this are in-flight (or crashed) writes; list never reports them. */
const TEMP_PREFIX = '.tmp-'

export class LocalFileStore implements ObjectStore {
  readonly uri: string
  /** absolute path of the root directory */
  readonly root: string

  constructor(root: string) {
    this.root = resolve(root)
    this.uri = pathToFileURL(this.root).href
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      return new Uint8Array(await readFile(this.path(key)))
    } catch (err) {
      if (isAbsent(err)) return null
      throw err
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    let fh
    try {
      fh = await open(this.path(key), 'r')
    } catch (err) {
      if (isAbsent(err)) throw new StoreError(`getRange: no object '${key}' in ${this.uri}`)
      throw err
    }
    try {
      const st = await fh.stat()
      if (!st.isFile()) throw new StoreError(`getRange: no object '${key}' in ${this.uri}`)
      checkRange(key, start, end, st.size)
      const out = new Uint8Array(end - start)
      let done = 0
      while (done < out.length) {
        const { bytesRead } = await fh.read(out, done, out.length - done, start + done)
        if (bytesRead === 0) throw new StoreError(`getRange '${key}': file shrank while reading in ${this.uri}`)
        done += bytesRead
      }
      return out
    } finally {
      await fh.close()
    }
  }

  async head(key: string): Promise<ObjectInfo | null> {
    try {
      const st = await stat(this.path(key))
      return st.isFile() ? { key, size: st.size, lastModified: st.mtimeMs } : null
    } catch (err) {
      if (isAbsent(err)) return null
      throw err
    }
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    const target = this.path(key)
    const temp = await this.writeTemp(key, target, data)
    try {
      await rename(temp, target)
    } catch (err) {
      await unlinkQuietly(temp)
      throw this.explainConflict(key, err)
    }
  }

  async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    const target = this.path(key)
    const temp = await this.writeTemp(key, target, data)
    try {
      await link(temp, target)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
        if ((await stat(target)).isDirectory()) throw this.conflict(key, 'EISDIR')
        return false
      }
      throw this.explainConflict(key, err)
    } finally {
      await unlinkQuietly(temp)
    }
  }

  async delete(key: string): Promise<void> {
    await this.unlinkAndPrune(this.path(key))
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    return this.listWhere(prefix, false)
  }

  /** Temp files of writes that never finished, keyed by their path under the root. */
  async listLeftovers(prefix: string): Promise<ObjectInfo[]> {
    return this.listWhere(prefix, true)
  }

  async deleteLeftover(key: string): Promise<void> {
    const slash = key.lastIndexOf('/')
    const name = key.slice(slash + 1)
    if (!name.startsWith(TEMP_PREFIX) || /[\\\0]/.test(name)) {
      throw new StrataInputError(`leftover key '${key}' is not valid for ${this.uri}: expected a key from listLeftovers, whose last segment starts with '${TEMP_PREFIX}'`)
    }
    const dir = slash < 0 ? this.root : this.path(key.slice(0, slash))
    await this.unlinkAndPrune(join(dir, name))
  }

  private async unlinkAndPrune(target: string): Promise<void> {
    await unlinkQuietly(target)
    // S3 has no directories: once a directory's last object is gone, remove it, so that the
    // key naming it ('a' after 'a/b' was deleted) can become an object again.
    for (let dir = dirname(target); dir !== this.root && dir.startsWith(this.root + sep); dir = dirname(dir)) {
      try {
        await rmdir(dir)
      } catch {
        break // not empty (ENOTEMPTY/EEXIST), already gone, or racing with a writer: stop
      }
    }
  }

  /** Objects (or, with `leftovers`, only temp files) whose key starts with `prefix`, in key order. */
  private async listWhere(prefix: string, leftovers: boolean): Promise<ObjectInfo[]> {
    // Walk only the deepest directory the prefix names fully; a trailing partial segment
    // ("snapshot/snap") is matched by string prefix like S3 does.
    const slash = prefix.lastIndexOf('/')
    const dirKey = slash < 0 ? '' : prefix.slice(0, slash)
    const out: ObjectInfo[] = []
    await this.walk(dirKey === '' ? this.root : this.path(dirKey), dirKey, prefix, leftovers, out)
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }

  private async walk(dir: string, dirKey: string, prefix: string, leftovers: boolean, out: ObjectInfo[]): Promise<void> {
    let entries
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch (err) {
      if (isAbsent(err)) return
      throw err
    }
    await Promise.all(
      entries.map(async (entry) => {
        const temp = entry.name.startsWith(TEMP_PREFIX)
        const key = dirKey === '' ? entry.name : `${dirKey}/${entry.name}`
        if (entry.isDirectory()) {
          // Skip subtrees that cannot hold a key with this prefix.
          if (!temp && (key.startsWith(prefix) || prefix.startsWith(`${key}/`))) {
            await this.walk(join(dir, entry.name), key, prefix, leftovers, out)
          }
        } else if (entry.isFile() && temp === leftovers && key.startsWith(prefix)) {
          try {
            const st = await stat(join(dir, entry.name))
            out.push({ key, size: st.size, lastModified: st.mtimeMs })
          } catch (err) {
            if (!isAbsent(err)) throw err // deleted between readdir and stat
          }
        }
      }),
    )
  }

  private async writeTemp(key: string, target: string, data: Uint8Array): Promise<string> {
    const dir = dirname(target)
    const temp = join(dir, `${TEMP_PREFIX}${randomUUID()}`)
    // A concurrent delete may remove the directory between mkdir and the write (it prunes
    // empty directories); make it again and retry.
    for (let attempt = 0; ; attempt++) {
      try {
        await mkdir(dir, { recursive: true })
        await writeFile(temp, data, { flag: 'wx' })
        return temp
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'ENOENT' && attempt < 5) continue
        throw this.explainConflict(key, err)
      }
    }
  }

  /** A key that is a directory here, or runs through a file, gets an error naming both. */
  private explainConflict(key: string, err: unknown): unknown {
    const code = (err as NodeJS.ErrnoException).code
    return code === 'EISDIR' || code === 'ENOTDIR' || code === 'EEXIST' ? this.conflict(key, code) : err
  }

  private conflict(key: string, code: string): StrataInputError {
    return new StrataInputError(
      `object key '${key}' cannot be stored in ${this.uri}: a local directory store cannot hold both an object ` +
        `and objects under it ('${key}' and '${key}/...', or a parent of '${key}' is an object); expected keys ` +
        `where no key is a '/'-prefix of another (${code})`,
    )
  }

  /** Maps a key to its file, refusing keys that would escape the root or hide as temp files. */
  private path(key: string): string {
    const segments = key.split('/')
    const bad = segments.find((s) => s === '' || s === '.' || s === '..' || s.startsWith(TEMP_PREFIX))
    if (key.includes('\0') || key.includes('\\') || bad !== undefined) {
      throw new StrataInputError(
        `object key '${key}' is not valid for ${this.uri}: expected '/'-separated non-empty segments, ` +
          `none '.', '..' or starting with '${TEMP_PREFIX}', and no '\\' or NUL`,
      )
    }
    return this.root + sep + segments.join(sep)
  }
}

function isAbsent(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  // ENOTDIR: a key runs through a path segment that is a file; EISDIR: the key names a directory.
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR'
}

async function unlinkQuietly(path: string): Promise<void> {
  try {
    await unlink(path)
  } catch (err) {
    if (!isAbsent(err)) throw err
  }
}
