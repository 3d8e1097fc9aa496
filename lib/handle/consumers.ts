// Consumers: a named reader's progress, stored as Paimon stores it (core:consumer/
// ConsumerManager.java, core:consumer/Consumer.java): the file `consumer/consumer-<id>`
// holding `{"nextSnapshot" : N}` (Jackson's pretty printer), the first snapshot the
// consumer has not read yet. Snapshot expiration keeps every snapshot from the smallest
// nextSnapshot on (lib/maintenance/expire.ts), so an incremental reader that records its
// progress never finds its next range expired; a consumer file not rewritten for
// `consumer.expiration-time` is deleted by expiration (Paimon deletes it at commit), so an
// abandoned consumer stops holding snapshots back. Orphan cleanup never touches consumer/.

import { JsonNumber, describeJson, parseJsonDocument, type JsonValue } from '../format/snapshot.ts'
import { StrataInputError } from '../errors.ts'
import type { Table, TableStore } from './table.ts'

export const CONSUMER_DIR = 'consumer/'
export const CONSUMER_PREFIX = 'consumer-'
export const consumerKey = (id: string): string => `${CONSUMER_DIR}${CONSUMER_PREFIX}${id}`

/** `consumer-<id>` is one file name: 255 bytes on local and HDFS file systems. */
export const MAX_CONSUMER_ID_BYTES = 255 - CONSUMER_PREFIX.length

const decoder = new TextDecoder()
const CONSUMER_KEY = /^consumer\/consumer-([^/]+)$/

/**
 * Checks a consumer id before anything is read or written. Paimon refuses only an empty id
 * ("consumer id cannot be empty string.", api:CoreOptions.java consumerId); Strata also
 * refuses what cannot be one file name in consumer/: blank, a '/', a control character, more
 * than MAX_CONSUMER_ID_BYTES bytes.
 */
export function checkConsumerId(id: string, what = '--consumer-id'): string {
  const at = `${what} ${JSON.stringify(id)}`
  if (id.trim() === '') throw new StrataInputError(`${at}: expected a consumer id that is not blank`)
  if (id.includes('/')) throw new StrataInputError(`${at}: expected no '/' (a consumer is the one file ${CONSUMER_DIR}${CONSUMER_PREFIX}<id>)`)
  const control = /[\u0000-\u001f\u007f]/.exec(id)
  if (control) throw new StrataInputError(`${at}: expected no control characters, found U+${control[0].charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`)
  const bytes = Buffer.byteLength(id, 'utf8')
  if (bytes > MAX_CONSUMER_ID_BYTES) throw new StrataInputError(`${at}: ${bytes} bytes of UTF-8, expected at most ${MAX_CONSUMER_ID_BYTES} (${CONSUMER_PREFIX}<id> is one file name)`)
  return id
}

/** The consumer file's text as Paimon writes it (JsonSerdeUtil.toJson, a pretty-printed object). */
export function serializeConsumer(nextSnapshot: number): string {
  if (!Number.isSafeInteger(nextSnapshot) || nextSnapshot < 1) throw new Error(`consumer nextSnapshot ${nextSnapshot}: expected an integer >= 1`)
  return `{\n  "nextSnapshot" : ${nextSnapshot}\n}`
}

/**
 * Parses a consumer file (unknown fields ignored, as Paimon's @JsonIgnoreProperties).
 * `nextSnapshot` must be an integer >= 1: a 0, negative or garbled value would otherwise make
 * expiration hold every snapshot, or a read start before the first one.
 */
export function parseConsumer(text: string, where: string): number {
  let root: JsonValue
  try {
    root = parseJsonDocument(text)
  } catch (e) {
    throw new StrataInputError(`${where}: not a consumer file (${(e as Error).message}); expected {"nextSnapshot": N} with N an integer >= 1`)
  }
  if (!(root instanceof Map)) throw new StrataInputError(`${where}: not a consumer file (${describeJson(root)}); expected a JSON object {"nextSnapshot": N} with N an integer >= 1`)
  const v = root.get('nextSnapshot')
  const n = v instanceof JsonNumber && /^\d+$/.test(v.raw) ? Number(v.raw) : NaN
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new StrataInputError(
      `${where}: field "nextSnapshot" is ${v === undefined ? 'missing' : describeJson(v)}, expected an integer >= 1 (the first snapshot the consumer has not read); mend the file or delete it (strata consumer delete)`,
    )
  }
  return n
}

export interface ConsumerInfo {
  id: string
  nextSnapshot: number
  /** the file's last modification, epoch millis */
  lastModified: number
}

/** The consumer's next snapshot, or null when it has none. */
export async function getConsumer(table: TableStore, id: string, what = '--consumer-id'): Promise<number | null> {
  checkConsumerId(id, what)
  const bytes = await table.store.get(consumerKey(id))
  return bytes ? parseConsumer(decoder.decode(bytes), `${table.uri}/${consumerKey(id)}`) : null
}

/** Records the consumer's progress (Paimon's resetConsumer: the file is overwritten). */
export async function setConsumer(table: TableStore, id: string, nextSnapshot: number): Promise<void> {
  checkConsumerId(id)
  await table.store.put(consumerKey(id), new TextEncoder().encode(serializeConsumer(nextSnapshot)))
}

export async function deleteConsumer(table: TableStore, id: string): Promise<void> {
  checkConsumerId(id)
  await table.store.delete(consumerKey(id))
}

/** Every consumer, by id. One deleted while this lists is left out. */
export async function listConsumers(table: TableStore): Promise<ConsumerInfo[]> {
  const out: ConsumerInfo[] = []
  for (const info of await table.store.list(CONSUMER_DIR)) {
    const m = CONSUMER_KEY.exec(info.key)
    if (!m) continue
    const bytes = await table.store.get(info.key)
    if (!bytes) continue
    out.push({ id: m[1], nextSnapshot: parseConsumer(decoder.decode(bytes), `${table.uri}/${info.key}`), lastModified: info.lastModified })
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/**
 * Deletes the consumers not rewritten within `consumer.expiration-time` before `now`
 * (ConsumerManager.expire); none without that option. Returns the ids deleted. By the files'
 * age alone, unread as Paimon does it, so an idle consumer goes even if its file is garbled.
 */
export async function expireConsumers(table: Table, now: number): Promise<string[]> {
  const ttl = table.view.options.consumerExpirationMs
  if (ttl === null) return []
  const gone: string[] = []
  for (const info of await table.store.list(CONSUMER_DIR)) {
    const m = CONSUMER_KEY.exec(info.key)
    if (m && info.lastModified < now - ttl) {
      await table.store.delete(info.key)
      gone.push(m[1])
    }
  }
  return gone.sort()
}

/** The smallest next snapshot of the consumers there are (null: none), which expiration keeps. */
export async function minNextSnapshot(table: Table): Promise<number | null> {
  const all = await listConsumers(table)
  return all.length === 0 ? null : Math.min(...all.map((c) => c.nextSnapshot))
}
