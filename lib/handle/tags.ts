// Tags: a name pinning one snapshot, stored as `tag/tag-<name>` in Paimon's tag file format
// (lib/format/tag.ts, docs/format.md "Tags"), so Paimon reads Strata's tags and Strata reads
// Paimon's. A tag keeps its snapshot readable after the snapshot itself has expired:
// expiration and orphan cleanup keep everything a tag references (lib/maintenance/), and
// deleting a tag deletes what only it kept (deleteTag in lib/maintenance/tag-deletion.ts, as
// Paimon's TagManager.deleteTag).

import { type Tag, parseTag } from '../format/tag.ts'
import { AlreadyExistsError, NotFoundError, StrataInputError } from '../errors.ts'
import type { Snapshot } from '../types.ts'
import { TAG_DIR, TAG_PREFIX, snapshotKey, tagKey } from '../table/paths.ts'
import type { Table, TableStore } from './table.ts'

const decoder = new TextDecoder()

/** `tag-<name>` is one file name: 255 bytes on local and HDFS file systems. */
export const MAX_TAG_NAME_BYTES = 255 - TAG_PREFIX.length

/**
 * Checks a tag name before anything is read or written. Paimon refuses a blank name ("Tag
 * name shouldn't be blank.", core:utils/TagManager.java); Strata also refuses what cannot be
 * one file name in the tag directory: a '/', a control character, more than
 * MAX_TAG_NAME_BYTES bytes.
 */
export function checkTagName(name: string, what = 'tag name'): string {
  const at = `${what} ${JSON.stringify(name)}`
  if (name.trim() === '') throw new StrataInputError(`${at}: expected a name that is not blank`)
  if (name.includes('/')) throw new StrataInputError(`${at}: expected no '/' (a tag is the one file ${TAG_DIR}${TAG_PREFIX}<name>)`)
  const control = /[\u0000-\u001f\u007f]/.exec(name)
  if (control) throw new StrataInputError(`${at}: expected no control characters, found U+${control[0].charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`)
  const bytes = Buffer.byteLength(name, 'utf8')
  if (bytes > MAX_TAG_NAME_BYTES) throw new StrataInputError(`${at}: ${bytes} bytes of UTF-8, expected at most ${MAX_TAG_NAME_BYTES} (${TAG_PREFIX}<name> is one file name)`)
  return name
}

export interface NamedTag extends Tag {
  name: string
}

const TAG_KEY = /^tag\/tag-([^/]+)$/

/** The tag of that name, or null when there is none. A tag file that is not a tag is an error naming it. */
export async function getTag(table: TableStore, name: string): Promise<Tag | null> {
  const bytes = await table.store.get(tagKey(name))
  return bytes ? parseTag(decoder.decode(bytes), `tag '${name}' (${table.uri}/${tagKey(name)})`) : null
}

/** Every tag, ordered by snapshot id, then name. A tag deleted while this lists is left out (as Paimon does). */
export async function listTags(table: TableStore): Promise<NamedTag[]> {
  const out: NamedTag[] = []
  for (const info of await table.store.list(TAG_DIR)) {
    const m = TAG_KEY.exec(info.key)
    if (!m) continue
    const tag = await getTag(table, m[1])
    if (tag) out.push({ name: m[1], ...tag })
  }
  return out.sort((a, b) => a.snapshot.id - b.snapshot.id || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** The snapshots tags pin, one per tag (core:utils/TagManager.java taggedSnapshots). */
export async function taggedSnapshots(table: Table): Promise<Snapshot[]> {
  return (await listTags(table)).map((t) => t.snapshot)
}

function tagNames(tags: NamedTag[]): string {
  return tags.length === 0 ? 'none' : tags.map((t) => t.name).join(', ')
}

/** The tag, or an error naming the tags there are; `what` names the input (an option, a field). */
export async function requireTag(table: TableStore, name: string, what = '--tag'): Promise<Tag> {
  checkTagName(name, what)
  const tag = await getTag(table, name)
  if (tag) return tag
  throw new NotFoundError(`${what} ${JSON.stringify(name)}: no such tag in ${table.uri} (tags: ${tagNames(await listTags(table))})`)
}

/** The retained snapshots as the snapshot directory's hints give them (for messages only). */
async function retainedText(table: Table): Promise<string> {
  const latest = await table.snapshots.latestId()
  return latest === 0 ? 'none' : `${Math.min(await table.snapshots.earliestId(), latest)}..${latest}`
}

export interface CreateTagOptions {
  /** the snapshot to tag; default the latest */
  snapshotId?: number
}

/**
 * Tags a retained snapshot (default the latest). The tag file is the snapshot file's text as
 * it is, which is what Paimon writes for a tag without a retention time (Snapshot.toJson), so
 * fields Strata does not model (Paimon's `writerVersion`, `operation`) are kept.
 *
 * Refused, with nothing written: an invalid name, a name already taken (the create is
 * create-if-absent, so two creators racing for a name get one tag), a snapshot that does not
 * exist or has expired, a table without snapshots.
 *
 * An expiration running meanwhile may delete the snapshot after it was read. After the tag
 * file is written, the snapshot file must still exist: expiration deletes a snapshot file
 * before its objects and reads the tags again after that (lib/maintenance/expire.ts), so a
 * tag written while the snapshot file still existed keeps its objects; otherwise the tag is
 * removed again and the call fails.
 */
export async function createTag(table: Table, name: string, opts: CreateTagOptions = {}): Promise<{ name: string; snapshotId: number }> {
  checkTagName(name)
  if (opts.snapshotId !== undefined && (!Number.isSafeInteger(opts.snapshotId) || opts.snapshotId < 1)) {
    throw new StrataInputError(`--snapshot ${opts.snapshotId}: expected a snapshot id >= 1`)
  }
  const id = opts.snapshotId ?? (await table.snapshots.latestId())
  if (id === 0) throw new StrataInputError(`tag ${JSON.stringify(name)}: ${table.uri} has no snapshot to tag yet`)
  if (await table.store.head(tagKey(name))) {
    throw new AlreadyExistsError(`tag ${JSON.stringify(name)} already exists in ${table.uri}; delete it first to move it`)
  }
  const bytes = await table.store.get(snapshotKey(id))
  if (!bytes) throw new NotFoundError(`--snapshot ${id}: no such snapshot (retained snapshots: ${await retainedText(table)}); a tag can only pin a retained snapshot`)
  // a tag that Paimon could not read is never written
  parseTag(decoder.decode(bytes), `${table.uri}/${snapshotKey(id)}`)
  if (!(await table.store.putIfAbsent(tagKey(name), bytes))) {
    throw new AlreadyExistsError(`tag ${JSON.stringify(name)} already exists in ${table.uri}; delete it first to move it`)
  }
  if ((await table.store.head(snapshotKey(id))) === null) {
    await table.store.delete(tagKey(name))
    throw new StrataInputError(`--snapshot ${id}: the snapshot expired while the tag was being created; nothing was tagged`)
  }
  return { name, snapshotId: id }
}
